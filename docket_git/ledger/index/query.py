"""Queries over the index for readers outside it: a briefing's query matched and scored in SQL, the projection
facts of chosen records, and the filters of ``list``, ``--where`` and ``show``.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterable

from docket_git.ledger import project

#: A query's distinct terms matched in one scan: a bit each of a mask (the phrase takes the next bit;
#: SQLite integers have 63 bits and a sign). A longer query is matched a term at a time.
MAX_TERMS = 62
#: GLOB patterns up to this many bytes (SQLite refuses those over 50,000); a longer needle is tested with instr.
_GLOB_BYTES = 40_000
#: What a GLOB pattern must bracket to match it literally (GLOB has no escape character).
_GLOB_LITERAL = str.maketrans({"*": "[*]", "?": "[?]", "[": "[[]"})
_TEMP = itertools.count()
#: The current records holding a needle (a term-at-a-time match), in file order.
_HOLDING = (
    "SELECT h.seq, r.id FROM haystacks h JOIN records r ON r.seq = h.seq"
    " WHERE r.retired_by = '' AND instr(h.haystack, ?) > 0 ORDER BY h.seq"
)


def temp_name(stem: str) -> str:
    """A name for a temporary table no other in this process has (a query's hits live in one)."""
    return f"{stem}_{next(_TEMP)}"


def query_needles(query: str) -> tuple[list[str], str]:
    """A query's distinct casefolded terms, in order, and its phrase (the terms as written, one space apart)."""
    words = query.casefold().split()
    return list(dict.fromkeys(words)), " ".join(words)


def _test(needle: str, param: str) -> tuple[str, str]:
    """SQL true when the ``haystack`` column holds needle, and the parameter it takes.

    GLOB ``*needle*`` with ``*``, ``?`` and ``[`` bracketed is an exact substring test,
    about twice as fast as ``instr`` over a whole table; a needle too long for a GLOB
    pattern is tested with ``instr``.
    """
    pattern = "*" + needle.translate(_GLOB_LITERAL) + "*"
    if len(pattern.encode()) <= _GLOB_BYTES:
        return f"haystack GLOB {param}", pattern
    return f"instr(haystack, {param}) > 0", needle


def nul_haystack(conn: sqlite3.Connection) -> bool:
    """True when a current record's haystack is NULL (its text holds a NUL, where SQL text would stop)."""
    row = conn.execute(
        "SELECT 1 FROM haystacks h INDEXED BY haystacks_nul CROSS JOIN records r ON r.seq = h.seq"
        " WHERE h.haystack IS NULL AND r.retired_by = '' LIMIT 1"
    ).fetchone()
    return row is not None


def current_count(conn: sqlite3.Connection) -> int:
    """How many records no later record supersedes."""
    return conn.execute("SELECT count(*) FROM records INDEXED BY records_rank WHERE retired_by = ''").fetchone()[0]


def match_query(conn: sqlite3.Connection, terms: list[str], phrase: str, table: str, current: int) -> list[int]:
    """Fill ``temp.<table>`` (its seq and mask columns) with the current records a query hits; the points of each bit.

    One scan of ``haystacks`` tests every term: bit i of a record's mask is
    ``terms[i]``, worth ``1000 * (N + 1 - df) // (N + 1)`` over the N = ``current``
    current records (``score.text_points``); the bit after the terms is the
    phrase, worth 1000, tested only in the records holding every term (no
    other can hold it). A one-term phrase is the term itself: its 1000 joins
    the term's bit. Records whose points come to 0 are left out, as scoring
    leaves them out. The caller has checked that nothing holds a NUL
    (``nul_haystack``) and that there are at most MAX_TERMS terms.
    """
    tests, params = [], []
    for i, term in enumerate(terms):
        test, param = _test(term, f"?{i + 1}")
        tests.append(f"(({test}) << {i})")
        params.append(param)
    # LIMIT -1 keeps the mask computed once a row: a flattened subquery would test every term again in WHERE.
    conn.execute(
        f"INSERT INTO temp.{table} (seq, mask) SELECT seq, mask FROM"
        f" (SELECT seq, {' | '.join(tests)} AS mask FROM haystacks LIMIT -1) WHERE mask",
        params,
    )
    conn.execute(
        f"DELETE FROM temp.{table} WHERE seq IN (SELECT seq FROM records INDEXED BY records_rank WHERE retired_by > '')"
    )
    counts = conn.execute(
        f"SELECT {', '.join(f'sum((mask >> {i}) & 1)' for i in range(len(terms)))} FROM temp.{table}"
    ).fetchone()
    n = current
    points = [1000 * (n + 1 - (df or 0)) // (n + 1) for df in counts]
    if len(terms) == 1 and phrase == terms[0]:
        points[0] += 1000
    else:
        every = (1 << len(terms)) - 1
        test, param = _test(phrase, "?1")
        conn.execute(
            f"UPDATE temp.{table} SET mask = mask | {every + 1} WHERE mask = {every}"
            f" AND (SELECT {test} FROM haystacks h WHERE h.seq = {table}.seq)",
            (param,),
        )
        points.append(1000)
    scoring = sum(1 << i for i, p in enumerate(points) if p)
    if scoring != (1 << len(points)) - 1:
        conn.execute(f"DELETE FROM temp.{table} WHERE mask & {scoring} = 0")
    return points


def mask_points(points: list[int], mask: int) -> int:
    """A record's query points from its mask (``match_query``)."""
    return sum(p for i, p in enumerate(points) if mask >> i & 1)


def task_hits(
    conn: sqlite3.Connection, query: str, scope_rows: list[tuple[int, int, int]], current: int
) -> tuple[str, list[int], int] | None:
    """A task's hits in a new temporary table: its name, each mask bit's query points (``match_query``), how many.

    ``current``: how many records are current; ``scope_rows``: (seq, scope points, via rename) of the
    task's scope hits. None when SQL cannot rank the query: no term, more than MAX_TERMS, a NUL in
    the query or in a current record's haystack, or no temporary tables on this connection. The
    tables (and ``<table>_retired``, the retired records' seqs) are written before any ranking
    reads: DDL would abort the statements reading.
    """
    terms, phrase = query_needles(query)
    if not terms or len(terms) > MAX_TERMS or "\x00" in phrase or nul_haystack(conn):
        return None
    table = temp_name("docket_hits")
    try:  # a row per hit: seq, the query's mask, scope points, via rename
        conn.execute(
            f"CREATE TEMP TABLE {table} (seq INTEGER PRIMARY KEY, mask INTEGER NOT NULL,"
            " scope INTEGER NOT NULL DEFAULT 0, renamed INTEGER NOT NULL DEFAULT 0)"
        )
        conn.execute(f"CREATE TEMP TABLE {table}_retired (seq INTEGER PRIMARY KEY)")
    except sqlite3.Error:
        return None
    conn.execute(
        f"INSERT INTO temp.{table}_retired SELECT seq FROM records INDEXED BY records_rank WHERE retired_by > ''"
    )
    points = match_query(conn, terms, phrase, table, current)
    # Scope hits join the query's (their scope points); records no query term hit are added.
    conn.executemany(
        f"INSERT INTO temp.{table} (seq, mask, scope, renamed) VALUES (?, 0, ?, ?)"
        " ON CONFLICT (seq) DO UPDATE SET scope = excluded.scope, renamed = excluded.renamed",
        scope_rows,
    )
    return table, points, conn.execute(f"SELECT count(*) FROM temp.{table}").fetchone()[0]


def text_points(conn: sqlite3.Connection, query: str) -> dict[str, int] | None:
    """A query's points per current record, in file order (``score.text_points``), matched in SQL.

    A term's weight is ``1000 * (N + 1 - df) // (N + 1)`` over the N current records; a record
    holding the whole query as a phrase gains 1000 more. None when a current record's haystack
    or the query holds a NUL (SQL text would stop there): the caller then scores decoded records.
    """
    terms, phrase = query_needles(query)
    if not terms:
        return {}
    if "\x00" in phrase or nul_haystack(conn):
        return None
    n = current_count(conn)
    hits = task_hits(conn, query, [], n)
    if hits is not None:
        table, points, _ = hits
        try:
            rows = conn.execute(
                f"SELECT r.id, t.mask FROM temp.{table} t JOIN records r ON r.seq = t.seq ORDER BY t.seq"
            )
            return {rid: mask_points(points, mask) for rid, mask in rows}
        finally:
            conn.execute(f"DROP TABLE temp.{table}")
            conn.execute(f"DROP TABLE temp.{table}_retired")
    # More than MAX_TERMS terms, or no temporary tables here (a read-only connection): a term at a time.
    found: dict[int, list] = {}  # seq -> [ID, points]: file order, as the records were scored
    for needle, fixed in [*((term, None) for term in terms), (phrase, 1000)]:
        hit = conn.execute(_HOLDING, (needle,)).fetchall()
        weight = fixed if fixed is not None else 1000 * (n + 1 - len(hit)) // (n + 1)
        for seq, rid in hit:
            entry = found.get(seq)
            if entry is None:
                found[seq] = [rid, weight]
            else:
                entry[1] += weight
    return {rid: p for _, (rid, p) in sorted(found.items()) if p > 0}


def derived_for(conn: sqlite3.Connection, ids: list[str]) -> project.Derived:
    """The projection facts (retired_by, blocked_by, resolved_by) of these records, read from the index."""
    wanted = set(ids)
    derived = project.Derived()
    for rid, by in conn.execute("SELECT id, retired_by FROM records WHERE retired_by != ''"):
        if rid in wanted:
            derived.retired_by[rid] = by
    for rid in ids:
        if rid[0] == "d":
            derived.blocked[rid] = []
    for rid, blocker in conn.execute("SELECT decision, blocker FROM blocked_by ORDER BY rowid"):
        if rid in wanted:
            derived.blocked[rid].append(blocker)
    for question, resolver in conn.execute("SELECT question, resolver FROM resolved_by ORDER BY rowid"):
        if question in wanted:
            derived.resolved_by.setdefault(question, []).append(resolver)
    return derived


# -- filters: ``list``, ``--where``, ``show`` -------------------------------------------------------------


def matching_rows(
    conn: sqlite3.Connection, condition: str, params: Iterable, *, current: bool, spans: bool = False
) -> list[tuple]:
    """(ID,) of the records a SQL condition on ``records``' columns accepts, in file order; ``spans``: with
    each line's (offset, length). ``current``: only the records no record supersedes."""
    keep = " AND retired_by = ''" if current else ""
    columns = "id, line_offset, line_length" if spans else "id"
    return conn.execute(f"SELECT {columns} FROM records WHERE ({condition}){keep} ORDER BY seq", params).fetchall()


#: A ``--where`` condition: the record carries a scope that ``docket_covers`` says covers the parameter.
SCOPE_COVERS = "(id IN (SELECT record FROM scopes WHERE docket_covers(scope, ?)))"


def named_by_open_questions(author: str) -> str:
    """A ``--where`` condition: a current claim or decision an open question by ``author`` names (``docket_ids``)."""
    return (
        "(kind != 'question' AND retired_by = '' AND id IN (SELECT j.value FROM records q,"
        " json_each(docket_ids(q.text)) j WHERE q.kind = 'question' AND q.state = 'open'"
        f" AND q.retired_by = '' AND q.author = '{author}'))"
    )


def component_scopes(conn: sqlite3.Connection) -> list[str]:
    """The distinct scopes recorded as component names (no ``/`` nor glob character)."""
    return [scope for (scope,) in conn.execute("SELECT DISTINCT scope FROM scopes WHERE kind = 'component'")]


def line_facts(conn: sqlite3.Connection, rid: str) -> tuple[int, int, str, str, str] | None:
    """(line offset, line length, line digest, kind, retired_by) of a record (None: no such record)."""
    return conn.execute(
        "SELECT line_offset, line_length, line_digest, kind, retired_by FROM records WHERE id = ?", (rid,)
    ).fetchone()
