"""The outline of a validated ledger: everything a briefing needs that no task changes.

Record order, projection (retired, blocked, resolved), in-degrees, the
reverse relation index, pinned records and which current records carry each
scope string; and, for scoring, the task-free ranking order, the records a
task's scopes hold, and coverage's prerequisite closure. Every briefing of
an indexed ledger reads ``Outline.from_index``: an ``IndexedOutline`` that
asks the ledger index (``ledger.index``) on demand, so a session hook on a
100k-record ledger touches only the records selection reaches (their facts,
relations and lines are looked up when asked for, and the ranking is merged
from index strata as far as the layout reads it). ``Outline(records)``
computes the same outline in memory: the reference tests compare the index's
with, and a fresh clone's first briefing before its index exists (building
an index from records costs 2-7 times as much).
"""

from __future__ import annotations

import heapq
import itertools
import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet

from docket_git.ledger import index as ledger_index
from docket_git.ledger.project import Derived, derive


def base_score(weights: Mapping[str, int], span: int, position: int, degree: int, pinned: object) -> int:
    """The task-free part of a current record's score: recency, degree (capped) and pin.

    ``span``: the last position (at least 1). The index's queries compute the same (``ledger.index.reads``).
    """
    recency = weights["recency"] * position // span
    return recency + weights["degree"] * min(degree, weights["degree_cap"]) + (weights["pinned"] if pinned else 0)


class Ranking(Sequence[str]):
    """A ranking read from a sorted stream as far as it is used: ``len`` is known up front."""

    __slots__ = ("_items", "_len", "_source")

    def __init__(self, source: Iterator[str], count: int) -> None:
        self._source: Iterator[str] | None = source
        self._items: list[str] = []
        self._len = count

    def _fill(self, n: int) -> None:
        """Read the stream until n items are known (or it ends)."""
        items, source = self._items, self._source
        if source is None or len(items) >= n:
            return
        items.extend(itertools.islice(source, n - len(items)))
        if len(items) < n:
            self._source = None

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, i):  # type: ignore[no-untyped-def,override]
        if isinstance(i, slice):
            self._fill(i.indices(self._len)[1])
            return self._items[i]
        self._fill(i + 1 if i >= 0 else self._len)
        return self._items[i]

    def __iter__(self) -> Iterator[str]:
        i = 0
        while True:
            self._fill(i + 64)
            items = self._items
            if i >= len(items):
                return
            yield from items[i : i + 64]
            i += 64


class _Lazy(dict):
    """A map filled on demand: the index's ``relation`` of a key, or None when the key has none.

    Only what a briefing reaches is looked up; iterating it lists just what
    was looked up so far, so it stands in only for maps that are read by key.
    """

    def __init__(self, conn: sqlite3.Connection, relation: str) -> None:
        super().__init__()
        self._conn, self._relation = conn, relation

    def __missing__(self, key: str) -> object:
        value = ledger_index.related(self._conn, self._relation, key)
        if value is None:
            raise KeyError(key)
        self[key] = value
        return value

    def get(self, key: str, default: object = None) -> object:  # type: ignore[override]
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None


class Lines(Mapping[str, dict]):
    """Record ID -> full record, decoded from its ledger line on first use (the index says where it is)."""

    def __init__(self, ix: ledger_index.Index, pos: dict[str, int]) -> None:
        self.ix = ix
        self._pos = pos
        self._parsed: dict[str, dict] = {}

    def __getitem__(self, rid: str) -> dict:
        record = self._parsed.get(rid)
        if record is None:
            if rid not in self._pos:
                raise KeyError(rid)
            record = self.many([rid])[0]
        return record

    def __contains__(self, rid: object) -> bool:
        return rid in self._pos

    def many(self, ids: list[str]) -> list[dict]:
        """The records with these IDs, the undecoded ones read and decoded in one go."""
        missing = list(dict.fromkeys(rid for rid in ids if rid not in self._parsed))
        if missing:
            for rid, record in zip(missing, ledger_index.records_of(self.ix, missing), strict=True):
                self._parsed[rid] = record
        return [self._parsed[rid] for rid in ids]

    def __iter__(self) -> Iterator[str]:
        return iter(self._pos)

    def __len__(self) -> int:
        return len(self._pos)


class _Scopes(Mapping[str, list[str]]):
    """Scope string as recorded -> the current records carrying it, in file order, from the index.

    The distinct strings are read once (one probe of the scope index per
    string); each string's holders only when asked for, with their facts.
    """

    def __init__(self, conn: sqlite3.Connection, facts: _Facts) -> None:
        self.conn = conn
        self.facts = facts
        self._keys: list[str] | None = None
        self._holders: dict[str, list[str]] = {}

    def _all(self) -> list[str]:
        if self._keys is None:
            # Every distinct scope string; one only retired records carry has no holders.
            self._keys = ledger_index.scope_strings(self.conn)
        return self._keys

    def __getitem__(self, scope: str) -> list[str]:
        holders = self._holders.get(scope)
        if holders is None:
            rows = self.facts.rows
            found = ledger_index.scope_holders(self.conn, scope)
            found.sort()
            holders = []
            for seq, rid, degree, pinned in found:
                if not holders or holders[-1] != rid:
                    holders.append(rid)
                if rid not in rows:
                    rows[rid] = (seq, "", degree, pinned)
            self._holders[scope] = holders
        return holders

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


class Outline:
    """What a briefing needs of a ledger before it knows the task; records in file order.

    ``Outline(records)`` computes every map from validated records (raw, or
    projected views): the reference the index-backed outline is tested
    against, and a fresh clone's first briefing before its index exists;
    ``from_index`` gives an ``IndexedOutline`` whose maps read the index on demand.
    """

    def __init__(self, records: list[dict]) -> None:
        self.ids: Sequence[str] = [r["id"] for r in records]
        self.derived = derive(records)
        #: Record ID -> the full record (a dict, or lazily parsed ledger lines).
        self.records: Mapping[str, dict] = {r["id"]: r for r in records}
        self.pos: Mapping[str, int] = {rid: i for i, rid in enumerate(self.ids)}
        retired = self.derived.retired_by
        current = self.current = self.pos.keys() - retired.keys()
        #: Current records in file order.
        self.live: Sequence[str] = [rid for rid in self.ids if rid not in retired] if retired else list(self.ids)
        #: Record ID -> references to it (supports, depends_on, answers, resolved_by) from any record.
        degrees: dict[str, int] = {}
        #: Record ID -> current records citing it, in file order: the reverse index expansion walks.
        incoming: dict[str, list[str]] = {}
        #: Current pinned records.
        pinned: set[str] = set()
        #: Scope string as recorded -> the current records carrying it, in file order.
        scopes: dict[str, list[str]] = {}
        #: Decision -> its depends_on, for decisions that have one (coverage walks these).
        depends: dict[str, list[str]] = {}
        for record in records:
            rid = record["id"]
            refs = [ref for group in record.get("supports") or () for ref in group]
            refs.extend(record.get("depends_on") or ())
            refs.extend(record.get("answers") or ())
            for ref in refs:
                degrees[ref] = degrees.get(ref, 0) + 1
            if record.get("depends_on"):
                depends[rid] = record["depends_on"]
            if rid not in current:
                continue
            for ref in dict.fromkeys(refs):
                incoming.setdefault(ref, []).append(rid)
            if record.get("pinned"):
                pinned.add(rid)
            for value in record.get("scope") or ():
                holders = scopes.setdefault(value, [])
                if not holders or holders[-1] != rid:
                    holders.append(rid)
        for question, answering in self.derived.resolved_by.items():  # a question cites what resolves it
            for ref in answering:
                degrees[ref] = degrees.get(ref, 0) + 1
                if question in current:
                    incoming.setdefault(ref, []).append(question)
        for holders in incoming.values():
            if len(holders) > 1:  # resolving questions were added after the citing records
                holders.sort(key=self.pos.__getitem__)
        self.degrees: Mapping[str, int] = degrees
        self.incoming: Mapping[str, list[str]] = incoming
        self.pinned: AbstractSet[str] = pinned
        self.scopes: Mapping[str, list[str]] = scopes
        self.depends: Mapping[str, list[str]] = depends
        self._hits: dict[tuple, list[HitRow]] = {}

    @staticmethod
    def from_index(ix: ledger_index.Index) -> Outline:
        """The outline of the ledger an index was just proven current for, read from its tables on demand."""
        return IndexedOutline(ix)

    def many(self, ids: list[str]) -> list[dict]:
        """The full records with these IDs, ledger lines decoded in one go when they are lazy."""
        records = self.records
        return records.many(ids) if isinstance(records, Lines) else [records[rid] for rid in ids]

    def retired_count(self) -> int:
        """How many records a later record supersedes."""
        return len(self.ids) - len(self.current)

    def base_order(self, weights: Mapping[str, int], span: int) -> Iterator[tuple[int, str]]:
        """(key, ID) of every current record, key descending: ``key = base_score << 40 | position``."""
        pos, degrees, pinned = self.pos, self.degrees, self.pinned
        keys = []
        for rid in self.live:
            i = pos[rid]
            keys.append(((base_score(weights, span, i, degrees.get(rid, 0), rid in pinned) << 40) | i, rid))
        keys.sort(reverse=True)
        return iter(keys)

    def closure(self, hits: Iterable[str]) -> set[str]:
        """hits and their prerequisite closure through current records (depends_on, transitively)."""
        targets: set[str] = set(hits)
        depends, current = self.depends, self.current
        stack = [p for rid in targets for p in depends.get(rid, ())]
        while stack:
            rid = stack.pop()
            if rid in targets or rid not in current:
                continue
            targets.add(rid)
            stack.extend(depends.get(rid, ()))
        return targets

    def text_points(self, query: str) -> dict[str, int] | None:
        """A query's points per current record from an index (``IndexedOutline``); None: score the records."""
        return None

    def task_hits(
        self, rows: list[HitRow], query: str, weights: Mapping[str, int], span: int, cap: int
    ) -> TaskHits | None:
        """A query's hits with the task's scope hits (``rows``), matched and ranked in the index; None: rank in Python.

        Only an ``IndexedOutline`` gives them (see ``TaskHits``);
        ``score.Scoring`` ranks everything else itself, and is the reference this must equal.
        ``cap``: query points count up to this many toward the text weight.
        """
        return None

    def scope_hits(
        self, matched: Mapping[str, tuple[int, bool]], weights: Mapping[str, int], span: int
    ) -> list[HitRow]:
        """The current records a matched scope holds, best first: (ID, position, scope points, via rename, key).

        ``matched``: scope string -> (strength, matched through a rename),
        from ``scope.matched_scopes``. A record's points are its best scope's;
        it is "via rename" when a renamed scope gave it that best. ``key`` is
        the ranking key with these points: ``(base + points) << 40 | position``
        (see ``base_order``), so rows come in ranking order.
        """
        memo = (tuple(sorted(matched.items())), tuple(sorted(weights.items())), span)
        rows = self._hits.get(memo)
        if rows is None:
            rows = self._hits[memo] = self._scope_hits(matched, weights, span) if matched else []
        return rows

    def _scope_hits(
        self, matched: Mapping[str, tuple[int, bool]], weights: Mapping[str, int], span: int
    ) -> list[HitRow]:
        best: dict[str, int] = {}
        renamed: dict[str, int] = {}
        for raw, (value, through) in matched.items():
            for rid in self.scopes.get(raw) or ():
                if through:
                    renamed[rid] = max(renamed.get(rid, 0), value)
                if best.get(rid, 0) < value:
                    best[rid] = value
        pos, degrees, pinned = self.pos, self.degrees, self.pinned
        rows = []
        for rid, value in best.items():
            i = pos[rid]
            total = base_score(weights, span, i, degrees.get(rid, 0), rid in pinned) + value
            rows.append((rid, i, value, renamed.get(rid) == value, (total << 40) | i))
        rows.sort(key=lambda row: row[4], reverse=True)
        return rows


#: A task hit's row: ID, position, scope points, matched via a rename, ranking key.
HitRow = tuple[str, int, int, bool, int]


class _Facts:
    """Record ID -> (seq, retired_by, degree, pinned) from the index, fetched on first use (None: no such record)."""

    __slots__ = ("conn", "rows")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.rows: dict[str, tuple[int, str, int, int] | None] = {}

    def __call__(self, rid: object) -> tuple[int, str, int, int] | None:
        try:
            return self.rows[rid]  # type: ignore[index]
        except KeyError:
            pass
        if not isinstance(rid, str):
            return None
        row = ledger_index.record_facts(self.conn, rid)
        self.rows[rid] = row
        return row

    def prefetch(self, ids: Iterable[str]) -> None:
        """Fetch the facts of many records in a few queries (a common query term's tens of thousands of hits)."""
        missing = [rid for rid in ids if rid not in self.rows]
        for start in range(0, len(missing), 10_000):
            chunk = missing[start : start + 10_000]
            for rid, *row in ledger_index.facts_of(self.conn, chunk):
                self.rows[rid] = tuple(row)  # type: ignore[assignment]


class _IdList(Sequence[str]):
    """The IDs of the index's records in file order, each read when asked for (all of them when iterated)."""

    def __init__(self, conn: sqlite3.Connection, count: int, last: str) -> None:
        self.conn = conn
        self._len, self._last = count, last

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, i):  # type: ignore[no-untyped-def,override]
        if isinstance(i, slice):
            start, stop, step = i.indices(self._len)
            if step != 1:
                return list(self)[i]
            return ledger_index.ids_between(self.conn, start, stop)
        n = i + self._len if i < 0 else i
        if not 0 <= n < self._len:
            raise IndexError(i)
        return self._last if n == self._len - 1 else ledger_index.ids_between(self.conn, n, n + 1)[0]

    def __iter__(self) -> Iterator[str]:
        return iter(ledger_index.ids_in_order(self.conn))


class _Column(Mapping[str, object]):
    """One column of the facts as a map: ``field`` of each record, of those where it is set unless ``every``."""

    def __init__(self, facts: _Facts, field: int, every: bool = False) -> None:
        self._facts, self._field, self._every = facts, field, every

    def __getitem__(self, rid: str) -> object:
        row = self._facts(rid)
        if row is None or not (self._every or row[self._field]):
            raise KeyError(rid)
        return row[self._field]

    def __contains__(self, rid: object) -> bool:
        row = self._facts(rid)
        return row is not None and (self._every or bool(row[self._field]))

    def _items(self) -> list[tuple[str, object]]:
        return ledger_index.column(self._facts.conn, self._field)

    def __iter__(self) -> Iterator[str]:
        return (rid for rid, _ in self._items())

    def __len__(self) -> int:
        return len(self._items())

    def items(self):  # type: ignore[no-untyped-def,override]
        return self._items()

    def values(self):  # type: ignore[no-untyped-def,override]
        return [value for _, value in self._items()]


class _Current(AbstractSet[str]):
    """The current records' IDs: membership from the facts, the count from the index."""

    def __init__(self, facts: _Facts, count: int) -> None:
        self._facts, self._len = facts, count

    def __contains__(self, rid: object) -> bool:
        row = self._facts(rid)
        return row is not None and not row[1]

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[str]:
        return iter(ledger_index.ids_in_order(self._facts.conn, current=True))


class IndexedOutline(Outline):
    """An outline read from a ledger index: per-record facts on demand, the ranking from the index.

    Nothing here touches every record in Python: counts come from the index,
    and ``base_order`` merges the few (pinned, degree) strata of the ranking
    index, each already in file order, so a briefing reads only the top of
    the ranking it lays out.
    """

    def __init__(self, ix: ledger_index.Index) -> None:
        conn = ix.conn
        self.ix = ix
        count, retired, self.pinned, last = ledger_index.outline_counts(conn)
        facts = self._facts = _Facts(conn)
        self.ids = _IdList(conn, count, last)
        self.pos = _Column(facts, 0, every=True)  # type: ignore[assignment]
        self.current = _Current(facts, count - retired)
        blocked, resolved_by = _Lazy(conn, "blocked_by"), _Lazy(conn, "resolved_by")
        self.derived = Derived(_Column(facts, 1), blocked, resolved_by)  # type: ignore[arg-type]
        self.degrees = _Column(facts, 2)  # type: ignore[assignment]
        self.incoming = _Lazy(conn, "incoming")
        self.scopes = _Scopes(conn, facts)
        self.depends = _Lazy(conn, "depends_on")
        self.records = Lines(ix, self.pos)  # type: ignore[arg-type]
        self._live: list[str] | None = None
        self._hits: dict[tuple, list[HitRow]] = {}

    @property  # type: ignore[override]
    def live(self) -> Sequence[str]:  # type: ignore[override]
        """Current records in file order (read in one query, when a query scores every record)."""
        if self._live is None:
            self._live = ledger_index.ids_in_order(self._facts.conn, current=True)
        return self._live

    def base_order(
        self, weights: Mapping[str, int], span: int, without: TaskHits | None = None
    ) -> Iterator[tuple[int, str]]:
        """As ``Outline.base_order``, merged from the ranking index's strata; ``without``: a query's hits."""
        conn, rows, w_recency = self._facts.conn, self._facts.rows, weights["recency"]

        def stratum(pinned: int, degree: int, found: Iterator[tuple[int, str]]) -> Iterator[tuple[int, str]]:
            add = base_score(weights, span, 0, degree, pinned)  # all but recency, the same for the stratum
            for seq, rid in found:
                if rid not in rows:
                    rows[rid] = (seq, "", degree, pinned)
                yield ((w_recency * seq // span + add) << 40) | seq, rid

        # The distinct (pinned, degree) pairs of current records, one index probe each, with their rows;
        # without a query's hits: the strata skip them in SQL (their rows in its temporary table).
        strata = ledger_index.strata(conn, None if without is None else without.table)
        streams = [stratum(pinned, degree, found) for pinned, degree, found in strata]
        return heapq.merge(*streams, reverse=True)

    def task_hits(
        self, rows: list[HitRow], query: str, weights: Mapping[str, int], span: int, cap: int
    ) -> TaskHits | None:
        most = (
            weights["recency"]
            + weights["degree"] * weights["degree_cap"]
            + weights["pinned"]
            + weights["text"]
            + max((row[2] for row in rows), default=0)
        )
        if most >= 1 << 22:
            return None  # a key (score << 40 | seq) could overflow SQLite's 64-bit integers
        scope_rows = [(row[1], row[2], int(row[3])) for row in rows]
        found = ledger_index.task_hits(self._facts.conn, query, scope_rows, len(self.current))
        return None if found is None else TaskHits(self, found, weights, span, cap)

    def text_points(self, query: str) -> dict[str, int] | None:
        points = ledger_index.text_points(self.ix.conn, query)
        if points:
            self._facts.prefetch(points)  # each hit is ranked by its facts: one query, not one per hit
        return points

    def closure(self, hits: Iterable[str]) -> set[str]:
        return ledger_index.prerequisite_closure(self._facts.conn, hits)

    def _scope_hits(
        self, matched: Mapping[str, tuple[int, bool]], weights: Mapping[str, int], span: int
    ) -> list[HitRow]:
        scopes = json.dumps([[k, v, int(r)] for k, (v, r) in matched.items()])
        w = (weights["recency"], span, weights["degree"], weights["degree_cap"], weights["pinned"])
        return [
            (rid, seq, value, bool(renamed), key)
            for rid, seq, value, renamed, key in ledger_index.scope_hits(self._facts.conn, scopes, w)
        ]


class TaskHits(AbstractSet[str]):
    """A query's hits, with the task's scope hits, matched and ranked in the index: Python sees what selection reads.

    ``temp.<table>`` holds a row per task hit: its seq, the query's mask
    (``ledger.index.match_query``: which terms it holds, and the phrase), its
    scope points and whether a renamed scope gave them. One query ranks the
    rows with their facts (the key ``score.Scoring`` computes: score << 40 |
    position), read as far as selection and the ranking merge go; a record's
    row is otherwise looked up when asked for. The base ranking skips the
    hits in SQL (``IndexedOutline.base_order``), and coverage's prerequisite
    closure starts from them in SQL (``targets``). Its temporary tables are
    written before it exists (``IndexedOutline.task_hits``): DDL on the
    connection would abort the ranking's statements in progress.
    """

    def __init__(
        self,
        outline: IndexedOutline,
        found: tuple[str, list[int], int],
        weights: Mapping[str, int],
        span: int,
        cap: int,
    ) -> None:
        self.table, self._points, self._len = found
        self._outline = outline
        self._conn = conn = outline._facts.conn
        self._by_mask: dict[int, int] = {}
        #: Record ID -> (query points, scope points, via rename), or None for a record that is no hit.
        self._rows: dict[str, tuple[int, int, int] | None] = {}
        self._weights = (weights["recency"], span, weights["degree"], weights["degree_cap"], weights["pinned"])
        self._text = (weights["text"], cap)
        self._ranked: Ranking | None = None
        #: Ranking key (as ``score.Scoring.key``) of each hit the ranking has read so far, as SQL computed it.
        self.keys: dict[str, int] = {}
        # Selection ranks every pinned record: their rows and facts in one query.
        facts, rows = outline._facts.rows, self._rows
        for seq, rid, degree, mask, scope, renamed in ledger_index.pinned_hits(conn, self.table):
            if rid not in facts:
                facts[rid] = (seq, "", degree, 1)
            rows[rid] = (self.points(mask), scope, renamed)
        for rid in outline.pinned:
            if rid not in rows:
                rows[rid] = None

    def points(self, mask: int) -> int:
        """The query points of a mask."""
        found = self._by_mask.get(mask)
        if found is None:
            found = self._by_mask[mask] = ledger_index.mask_points(self._points, mask)
        return found

    def row(self, rid: str) -> tuple[int, int, int] | None:
        """(query points, scope points, via rename) of a task hit; None for any other ID."""
        try:
            return self._rows[rid]
        except KeyError:
            pass
        facts = self._outline._facts(rid)
        found = None
        if facts is not None and not facts[1]:
            hit = ledger_index.hit_row(self._conn, self.table, facts[0])
            if hit is not None:
                found = (self.points(hit[0]), hit[1], hit[2])
        self._rows[rid] = found
        return found

    def __contains__(self, rid: object) -> bool:
        return isinstance(rid, str) and self.row(rid) is not None

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[str]:
        return ledger_index.hit_ids(self._conn, self.table)

    def ranked(self) -> Ranking:
        """The hits best first (descending score, then newer first), read from one SQL ranking as far as used."""
        if self._ranked is None:
            self._ranked = Ranking(self._stream(), self._len)
        return self._ranked

    def _stream(self) -> Iterator[str]:
        w_text, cap = self._text
        by_rank = 2 * self._len > len(self._outline.current)
        facts, rows, keys = self._outline._facts.rows, self._rows, self.keys
        for key, seq, rid, degree, pinned, mask, scope, renamed in ledger_index.ranked_hits(
            self._conn, self.table, self._points, by_rank, (*self._weights, w_text, cap)
        ):
            if rid not in facts:
                facts[rid] = (seq, "", degree, pinned)
            rows[rid] = (self.points(mask), scope, renamed)
            keys[rid] = key
            yield rid

    def targets(self) -> AbstractSet[str]:
        """The hits and their prerequisite closure through current records (``Outline.closure``), from SQL."""
        return _Targets(self, ledger_index.closure_extras(self._conn, self.table, self._len))


class _Targets(AbstractSet[str]):
    """Task hits and the current records outside them that their prerequisites reach (``extra``: their seqs)."""

    def __init__(self, hits: TaskHits, extra: set[int]) -> None:
        self._hits, self._extra = hits, extra

    def __contains__(self, rid: object) -> bool:
        if rid in self._hits:
            return True
        facts = self._hits._outline._facts(rid)
        return facts is not None and facts[0] in self._extra

    def __len__(self) -> int:
        return len(self._hits) + len(self._extra)

    def __iter__(self) -> Iterator[str]:
        yield from self._hits
        yield from ledger_index.ids_at(self._hits._conn, sorted(self._extra))
