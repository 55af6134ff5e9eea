"""What a briefing's outline reads of the index (``context.outline.IndexedOutline``), one function per query.

Per-record facts (seq, retired_by, degree, pinned), the ranking index's
strata, scope holders, prerequisites, and a task's hits: the query's matches
and scope points in a temporary table, ranked with their facts in SQL
(``score.Scoring``'s key), and their prerequisite closure.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Iterable, Iterator

from docket_git.ledger.index.schema import _count

#: A record's facts, as the functions below return them: (seq, retired_by, degree, pinned).
Facts = tuple[int, str, int, int]


def record_facts(conn: sqlite3.Connection, rid: str) -> Facts | None:
    """One record's facts (None: no such record)."""
    return conn.execute(
        "SELECT seq, retired_by, degree, pinned FROM records INDEXED BY records_facts WHERE id = ?", (rid,)
    ).fetchone()


def facts_of(conn: sqlite3.Connection, ids: list[str]) -> Iterator[tuple[str, int, str, int, int]]:
    """(ID, seq, retired_by, degree, pinned) of the records among ids the index holds."""
    return conn.execute(
        "SELECT id, seq, retired_by, degree, pinned FROM records INDEXED BY records_facts"
        " WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(ids),),
    )


_PINNED = "SELECT id FROM records INDEXED BY records_rank WHERE retired_by = '' AND pinned = 1"


def outline_counts(conn: sqlite3.Connection) -> tuple[int, int, set[str], str]:
    """What an outline reads when it opens: how many records, how many retired, the current pinned
    records' IDs, and the last record's ID ("" in an empty index: the briefing's header names it)."""
    count = _count(conn)
    retired = conn.execute("SELECT count(*) FROM records INDEXED BY records_rank WHERE retired_by > ''").fetchone()[0]
    pinned = {rid for (rid,) in conn.execute(_PINNED)}
    return count, retired, pinned, ids_between(conn, count - 1, count)[0] if count else ""


def ids_in_order(conn: sqlite3.Connection, *, current: bool = False) -> list[str]:
    """Every record's ID (``current``: only those no record supersedes), in file order."""
    where = " WHERE retired_by = ''" if current else ""
    return [rid for (rid,) in conn.execute(f"SELECT id FROM records{where} ORDER BY seq")]


def ids_between(conn: sqlite3.Connection, start: int, stop: int) -> list[str]:
    """The IDs of the records at positions start to stop (excluded)."""
    rows = conn.execute("SELECT id FROM records WHERE seq >= ? AND seq < ? ORDER BY seq", (start, stop))
    return [rid for (rid,) in rows]


def ids_at(conn: sqlite3.Connection, seqs: list[int]) -> Iterator[str]:
    """The IDs of the records at these positions, in file order."""
    found = conn.execute(
        "SELECT id FROM records WHERE seq IN (SELECT value FROM json_each(?)) ORDER BY seq", (json.dumps(seqs),)
    )
    return (rid for (rid,) in found)


#: (ID, value) of a facts column: every record's seq, the retired records' retired_by, the cited records' degree.
_COLUMNS = (
    "SELECT id, seq FROM records ORDER BY seq",
    "SELECT id, retired_by FROM records INDEXED BY records_rank WHERE retired_by > ''",
    "SELECT id, degree FROM records WHERE degree != 0",
)


def column(conn: sqlite3.Connection, field: int) -> list[tuple[str, object]]:
    """(ID, value) of facts column ``field`` (0 seq, 1 retired_by, 2 degree; see ``Facts``) where it is set."""
    return list(conn.execute(_COLUMNS[field]))


# -- scopes ------------------------------------------------------------------------------------------

#: The current records carrying a scope string, with their facts.
_HOLDERS = (
    "SELECT r.seq, r.id, r.degree, r.pinned FROM scopes s JOIN records r ON r.id = s.record"
    " WHERE s.scope = ? AND +r.retired_by = ''"
)


#: Distinct scope strings read one probe of the scope index each before the rest are read in one scan.
PROBES = 256


def scope_strings(conn: sqlite3.Connection) -> list[str]:
    """Every distinct scope string, in order; some only retired records carry.

    A probe of the scope index per string skips the rows between strings (150 strings over 96k rows:
    1.2 ms, where a scan reads every row: 9 ms); past PROBES strings the rest come from one ordered scan
    (20,000 strings: 20 ms, where a probe each took 75-120 ms).
    """
    keys: list[str] = []
    step = conn.execute
    found = step("SELECT min(scope) FROM scopes").fetchone()[0]
    while found is not None and len(keys) < PROBES:
        keys.append(found)
        found = step("SELECT min(scope) FROM scopes WHERE scope > ?", (found,)).fetchone()[0]
    if found is not None:
        keys.extend(s for (s,) in step("SELECT DISTINCT scope FROM scopes WHERE scope >= ? ORDER BY scope", (found,)))
    return keys


def scope_holders(conn: sqlite3.Connection, scope: str) -> list[tuple[int, str, int, int]]:
    """(seq, ID, degree, pinned) of the current records carrying a scope string (any order)."""
    return conn.execute(_HOLDERS, (scope,)).fetchall()


#: The current records a matched scope holds (scope, strength, via rename: a JSON array of triples), best
#: match each, in ranking order (weights ?2-?6: recency, span, degree, degree_cap, pinned).
_SCOPE_HITS = (
    "WITH m(scope, strength, renamed) AS (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'),"
    " json_extract(value, '$[2]') FROM json_each(?1)),"
    " h(id, seq, degree, pinned, points, renamed) AS (SELECT r.id, r.seq, r.degree, r.pinned, max(m.strength),"
    " max(m.strength * m.renamed) = max(m.strength)"
    " FROM m JOIN scopes s ON s.scope = m.scope JOIN records r INDEXED BY records_facts ON r.id = s.record"
    " WHERE +r.retired_by = '' GROUP BY r.id)"
    " SELECT id, seq, points, renamed, (((?2 * seq) / ?3 + ?4 * min(degree, ?5) + ?6 * pinned + points) << 40) | seq AS key"
    " FROM h ORDER BY key DESC"
)


def scope_hits(conn: sqlite3.Connection, matched: str, weights: tuple) -> Iterator[tuple[str, int, int, int, int]]:
    """(ID, seq, scope points, via rename, ranking key) of the current records matched scopes hold, best first.

    ``matched``: a JSON array of [scope, strength, via rename]; ``weights``: recency, span, degree, degree_cap, pinned.
    """
    return conn.execute(_SCOPE_HITS, (matched, *weights))


# -- relations -----------------------------------------------------------------------------------------

#: The current prerequisites (depends_on) of the records in a JSON array.
_PREREQUISITES = (
    "SELECT r.target FROM relations r INDEXED BY relations_depends"
    " JOIN records c INDEXED BY records_facts ON c.id = r.target AND +c.retired_by = ''"
    " WHERE r.type = 'depends_on' AND r.source IN (SELECT value FROM json_each(?1))"
)


def prerequisite_closure(conn: sqlite3.Connection, hits: Iterable[str]) -> set[str]:
    """hits and their prerequisite closure through current records (depends_on, transitively): one query per level."""
    targets = set(hits)
    frontier = list(targets)
    while frontier:
        found = dict.fromkeys(
            rid for (rid,) in conn.execute(_PREREQUISITES, (json.dumps(frontier),)) if rid not in targets
        )
        frontier = list(found)
        targets.update(frontier)
    return targets


#: Each relation ``related`` reads: its query (?1: the record's ID), and whether no rows is None.
_RELATED = {
    "depends_on": ("SELECT target FROM relations WHERE source = ?1 AND type = 'depends_on' ORDER BY rowid", True),
    "blocked_by": ("SELECT blocker FROM blocked_by WHERE decision = ?1 ORDER BY position", False),
    "resolved_by": ("SELECT resolver FROM resolved_by WHERE question = ?1 ORDER BY position", True),
    "incoming": (
        "SELECT s.id FROM records s INDEXED BY records_facts WHERE +s.retired_by = '' AND s.id IN ("
        " SELECT source FROM relations WHERE target = ?1 AND type != 'supersedes'"
        " UNION SELECT question FROM resolved_by WHERE resolver = ?1"
        ") ORDER BY s.seq",
        True,
    ),
}


def related(conn: sqlite3.Connection, relation: str, rid: str) -> list[str] | None:
    """A record's ``depends_on``, ``blocked_by`` (a decision's: [] when none; None for any other
    record), ``resolved_by`` (a question's), or ``incoming`` (the current records citing it:
    supports, depends_on, answers, a question it resolves); None: none."""
    if relation == "blocked_by" and not rid.startswith("d"):
        return None  # only decisions have a blocked_by list
    sql, none_when_empty = _RELATED[relation]
    found = [r for (r,) in conn.execute(sql, (rid,))]
    return None if none_when_empty and not found else found


# -- the ranking's strata ------------------------------------------------------------------------------

_STRATUM = (
    "SELECT seq, id FROM records INDEXED BY records_rank"
    " WHERE retired_by = '' AND pinned = ? AND degree = ?{without} ORDER BY seq DESC"
)
_NEXT_PINNED = "SELECT min(pinned) FROM records INDEXED BY records_rank WHERE retired_by = '' AND pinned > ?"
_NEXT_DEGREE = (
    "SELECT min(degree) FROM records INDEXED BY records_rank WHERE retired_by = '' AND pinned = ? AND degree > ?"
)


def strata(conn: sqlite3.Connection, without: str | None = None) -> list[tuple[int, int, Iterator[tuple[int, str]]]]:
    """The distinct (pinned, degree) pairs of current records in order (one index probe each), each with its
    records' (seq, ID), newest first; ``without``: a task's hits table whose records the strata skip.

    A stratum's query runs when its rows are first read (``map`` calls ``conn.execute`` then): a caller
    may still write the task's temporary tables before it reads.
    """
    skip = f" AND NOT EXISTS (SELECT 1 FROM temp.{without} t WHERE t.seq = records.seq)" if without else ""
    sql = _STRATUM.format(without=skip)
    pairs = []
    step = conn.execute
    pinned = step(_NEXT_PINNED, (-1,)).fetchone()[0]
    while pinned is not None:
        degree = step(_NEXT_DEGREE, (pinned, -1)).fetchone()[0]
        while degree is not None:
            rows = itertools.chain.from_iterable(map(conn.execute, (sql,), ((pinned, degree),)))
            pairs.append((pinned, degree, rows))
            degree = step(_NEXT_DEGREE, (pinned, degree)).fetchone()[0]
        pinned = step(_NEXT_PINNED, (pinned,)).fetchone()[0]
    return pairs


# -- a task's hits ---------------------------------------------------------------------------------------

#: The task hits best first, with their facts: the key of ``score.Scoring`` (weights ?1-?5: recency, span,
#: degree, degree_cap, pinned; ?6 the text weight, ?7 the points it is reached at; {points}: from the mask).
_TASK_RANKED = (
    "SELECT ((((?1 * t.seq) / ?2 + ?3 * min(r.degree, ?4) + ?5 * r.pinned + t.scope"
    " + ?6 * min({points}, ?7) / ?7) << 40) | t.seq) AS key, t.seq, r.id, r.degree, r.pinned, t.mask, t.scope, t.renamed"
    " FROM {join} ORDER BY key DESC"
)
#: How the ranking reaches a hit's facts: few hits each by its seq; many (over half the current records) by
#: one pass over the current records' ranking index, which is smaller than the records rows and read in order.
_BY_SEQ = "temp.{table} t CROSS JOIN records r ON r.seq = t.seq"
_BY_RANK = "records r INDEXED BY records_rank CROSS JOIN temp.{table} t ON t.seq = r.seq WHERE r.retired_by = ''"
#: The pinned task hits, with their facts.
_TASK_PINNED = (
    "SELECT r.seq, r.id, r.degree, t.mask, t.scope, t.renamed FROM records r INDEXED BY records_rank"
    " CROSS JOIN temp.{table} t ON t.seq = r.seq WHERE r.retired_by = '' AND r.pinned = 1"
)
#: The current records outside the hits that the hits' prerequisites reach through current records, by seq:
#: a step stops at a hit (its own prerequisites are steps already) and at a retired record.
_EXTRAS = (
    "WITH RECURSIVE c(seq) AS ({seed}"
    " UNION SELECT p.target FROM c CROSS JOIN prerequisites p INDEXED BY prerequisites_source ON p.source = c.seq"
    "{outside}) SELECT seq FROM c"
)
#: A step's target is no hit and not retired (``{retired}``: the retired records' seqs).
_OUTSIDE = (
    " LEFT JOIN temp.{table} o ON o.seq = p.target LEFT JOIN temp.{retired} x ON x.seq = p.target"
    " WHERE o.seq IS NULL AND x.seq IS NULL"
)
#: The first steps: from each hit (few hits), or each prerequisite edge whose source is a hit (many).
_SEED_BY_HIT = (
    "SELECT p.target FROM temp.{table} h CROSS JOIN prerequisites p INDEXED BY prerequisites_source"
    " ON p.source = h.seq{outside}"
)
_SEED_BY_EDGE = "SELECT p.target FROM prerequisites p CROSS JOIN temp.{table} h ON h.seq = p.source{outside}"


def pinned_hits(conn: sqlite3.Connection, table: str) -> Iterator[tuple[int, str, int, int, int, int]]:
    """(seq, ID, degree, mask, scope points, via rename) of the current pinned task hits."""
    return conn.execute(_TASK_PINNED.format(table=table))


def hit_row(conn: sqlite3.Connection, table: str, seq: int) -> tuple[int, int, int] | None:
    """(mask, scope points, via rename) of the record at seq, when it is a task hit."""
    return conn.execute(f"SELECT mask, scope, renamed FROM temp.{table} WHERE seq = ?", (seq,)).fetchone()


def hit_ids(conn: sqlite3.Connection, table: str) -> Iterator[str]:
    """The task hits' IDs, in file order."""
    query = f"SELECT r.id FROM temp.{table} t CROSS JOIN records r ON r.seq = t.seq ORDER BY t.seq"
    return (rid for (rid,) in conn.execute(query))


def ranked_hits(
    conn: sqlite3.Connection, table: str, points: list[int], by_rank: bool, weights: tuple
) -> Iterator[tuple[int, int, str, int, int, int, int, int]]:
    """(key, seq, ID, degree, pinned, mask, scope points, via rename) of the task hits, best first.

    ``points``: each mask bit's query points (``match_query``); ``by_rank``: reach the facts through the
    ranking index (many hits) rather than by seq; ``weights``: recency, span, degree, degree_cap, pinned,
    the text weight and the points it is reached at.
    """
    expr = " + ".join(f"((t.mask >> {i}) & 1) * {p}" for i, p in enumerate(points) if p) or "0"
    join = (_BY_RANK if by_rank else _BY_SEQ).format(table=table)
    return conn.execute(_TASK_RANKED.format(join=join, points=expr), weights)


def closure_extras(conn: sqlite3.Connection, table: str, hits: int) -> set[int]:
    """The seqs of the current records outside the task hits (``hits`` of them) that their prerequisites reach."""
    retired = f"{table}_retired"
    edges = conn.execute("SELECT max(rowid) FROM prerequisites").fetchone()[0] or 0
    # The first steps from the hits: each hit's prerequisites (few hits), or every prerequisite edge
    # whose source is a hit (many: a common term's tens of thousands).
    outside = _OUTSIDE.format(table=table, retired=retired)
    seed = (_SEED_BY_HIT if 2 * hits < edges else _SEED_BY_EDGE).format(table=table, outside=outside)
    return {seq for (seq,) in conn.execute(_EXTRAS.format(seed=seed, outside=outside))}
