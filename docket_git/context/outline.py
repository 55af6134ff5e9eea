"""The outline of a validated ledger: everything a briefing needs that no task changes.

Record order, projection (retired, blocked, resolved), in-degrees, the
reverse relation index, pinned records and which current records carry each
scope string. Two constructors give the same outline: ``Outline.build``
computes it from parsed records (the reference, and what tests compare
against); ``Outline.from_index`` reads it from the ledger index
(``ledger.index``), so a session hook on a 100k-record ledger decodes only
the records it prints or weighs, and looks up relations, blocking reasons and
scope holders only for the records selection reaches.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping

from docket_git.ledger import index as ledger_index
from docket_git.ledger.project import Derived, derive
from docket_git.plain import Plain

#: The fields of a record that projection, scoring and selection read (besides its prose).
ROW_FIELDS = ("id", "kind", "state", "scope", "supports", "depends_on", "answers", "supersedes", "pinned")
_ALWAYS = frozenset(("id", "kind", "state"))


def row(record: dict) -> dict:
    """A record's structural fields, empty ones left out (what the cache keeps per record)."""
    return {k: record[k] for k in ROW_FIELDS if k in _ALWAYS or record.get(k)}


def cited(record: dict, views: bool) -> list[str]:
    """The IDs a record cites in supports, depends_on and answers (and, for a view, resolved_by)."""
    supports = record.get("supports")
    refs: list[str] = [ref for group in supports for ref in group] if supports else []
    depends = record.get("depends_on")
    if depends:
        refs.extend(depends)
    answers = record.get("answers")
    if answers:
        refs.extend(answers)
    if views:
        resolved = record.get("resolved_by")
        if resolved:
            refs.extend(resolved)
    return refs


def references(
    records: list[dict], current: set[str] | None, resolved_by: dict[str, list[str]] | None = None
) -> tuple[dict[str, int], dict[str, list[str]]]:
    """In-degrees (from every record), and record ID -> current records that cite it, in one scan.

    ``resolved_by`` (question -> resolving records) stands in for the field of
    projected views when raw records are given; a resolved question then
    counts as citing each record that resolves it.
    """
    counts: dict[str, int] = {}
    incoming: dict[str, list[str]] = {}
    get = counts.get
    views = resolved_by is None
    for record in records:
        refs = cited(record, views)
        if not refs:
            continue
        for ref in refs:
            counts[ref] = get(ref, 0) + 1
        src = record["id"]
        if current is None or src in current:
            for ref in dict.fromkeys(refs):
                incoming.setdefault(ref, []).append(src)
    if resolved_by:
        for question, answering in resolved_by.items():
            cites = current is None or question in current
            for ref in answering:
                counts[ref] = get(ref, 0) + 1
                if cites:
                    incoming.setdefault(ref, []).append(question)
    return counts, incoming


class _Lazy(dict):
    """A map filled on demand: ``fetch(key)`` gives a key's value, or None when the key has none.

    Only what a briefing reaches is looked up; iterating it lists just what
    was looked up so far, so it stands in only for maps that are read by key.
    """

    def __init__(self, fetch: Callable[[str], object]) -> None:
        super().__init__()
        self._fetch = fetch

    def __missing__(self, key: str) -> object:
        value = self._fetch(key)
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
            record = self._parsed[rid] = ledger_index.records_of(self.ix, [rid])[0]
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

    def prefix_digest(self, rid: str) -> str:
        """SHA-256 of the ledger bytes up to and including rid's line."""
        return ledger_index.prefix_digest(self.ix, rid)

    def __iter__(self) -> Iterator[str]:
        return iter(self._pos)

    def __len__(self) -> int:
        return len(self._pos)


class _Scopes(Mapping[str, list[str]]):
    """Scope string as recorded -> the current records carrying it, in file order, from the index.

    The distinct strings are read once (from a covering index); each string's
    holders only when asked for.
    """

    def __init__(self, conn: sqlite3.Connection, current: set[str]) -> None:
        self.conn = conn
        self.current = current
        self._keys: list[str] | None = None
        self._holders: dict[str, list[str]] = {}

    def _all(self) -> list[str]:
        if self._keys is None:
            # Every distinct scope string (from the covering index); one only retired records carry has no holders.
            self._keys = [s for (s,) in self.conn.execute("SELECT DISTINCT scope FROM scopes")]
        return self._keys

    def __getitem__(self, scope: str) -> list[str]:
        holders = self._holders.get(scope)
        if holders is None:
            current = self.current
            rows = self.conn.execute("SELECT record FROM scopes WHERE scope = ?", (scope,))
            holders = [rid for (rid,) in rows if rid in current]
            holders.sort(key=lambda rid: int(rid[1:]))  # IDs increase along the file
            self._holders[scope] = holders
        return holders

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


class Outline(Plain):
    """What a briefing needs of a ledger before it knows the task; records in file order."""

    __slots__ = (
        "current",
        "degrees",
        "depends",
        "derived",
        "ids",
        "incoming",
        "live",
        "pinned",
        "pos",
        "records",
        "scopes",
    )

    def __init__(
        self,
        ids: list[str],
        derived: Derived,
        degrees: dict[str, int],
        incoming: dict[str, list[str]],
        pinned: set[str],
        scopes: Mapping[str, list[str]],
        depends: dict[str, list[str]],
        records: Mapping[str, dict] | None = None,
    ) -> None:
        self.ids = ids
        self.derived = derived
        #: Record ID -> references to it (supports, depends_on, answers, resolved_by) from any record.
        self.degrees = degrees
        #: Record ID -> current records citing it, in file order: the reverse index expansion walks.
        self.incoming = incoming
        #: Current pinned records.
        self.pinned = pinned
        #: Scope string as recorded -> the current records carrying it, in file order.
        self.scopes = scopes
        #: Decision -> its depends_on, for decisions that have one (coverage walks these).
        self.depends = depends
        #: Record ID -> the full record (a dict, or lazily parsed ledger lines).
        self.records: Mapping[str, dict] = {} if records is None else records
        self.pos = {rid: i for i, rid in enumerate(ids)}
        retired = derived.retired_by
        self.current = self.pos.keys() - retired.keys()
        #: Current records in file order.
        self.live = [rid for rid in ids if rid not in retired] if retired else list(ids)

    __hash__ = None  # type: ignore[assignment]  # mutable

    @classmethod
    def build(cls, records: list[dict]) -> Outline:
        """The outline of validated records (raw, or projected views) in file order."""
        outline = cls(
            ids=[r["id"] for r in records],
            derived=derive(records),
            degrees={},
            incoming={},
            pinned=set(),
            scopes={},
            depends={},
            records={r["id"]: r for r in records},
        )
        current, pos = outline.current, outline.pos
        outline.degrees, outline.incoming = references(records, current, outline.derived.resolved_by)
        for holders in outline.incoming.values():
            if len(holders) > 1:  # resolving questions were added after the citing records
                holders.sort(key=pos.__getitem__)
        for record in records:
            outline._index(record, current)
        return outline

    def _index(self, record: dict, current: set[str]) -> None:
        rid = record["id"]
        depends = record.get("depends_on")
        if depends:
            self.depends[rid] = depends
        if rid not in current:
            return
        if record.get("pinned"):
            self.pinned.add(rid)
        scopes = self.scopes
        for value in record.get("scope") or ():
            holders = scopes.get(value)
            if holders is None:
                scopes[value] = [rid]
            elif holders[-1] != rid:
                holders.append(rid)

    @classmethod
    def from_index(cls, ix: ledger_index.Index) -> Outline:
        """The outline of the ledger an index was just proven current for, read from its tables.

        What scoring reads for every record (order, retirement, degree, pins,
        prerequisites) is read in one pass each; blocking reasons, resolvers,
        citing records and scope holders only for the records selection reaches.
        """
        conn = ix.conn
        ids, degree_column, pinned_column, retired_column = ledger_index.outline_columns(conn)
        retired_by = {rid: by for rid, by in zip(ids, retired_column, strict=True) if by}
        degrees = {rid: int(n) for rid, n in zip(ids, degree_column, strict=True) if n != "0"}
        pinned = {rid for rid, pin, by in zip(ids, pinned_column, retired_column, strict=True) if pin == "1" and not by}
        depends: dict[str, list[str]] = {}
        for source, target in conn.execute(
            "SELECT source, target FROM relations WHERE type = 'depends_on' ORDER BY rowid"
        ):
            found = depends.get(source)
            if found is None:
                depends[source] = [target]
            else:
                found.append(target)
        derived = Derived(retired_by, _Lazy(_query_blocked(conn)), _Lazy(_query_resolved_by(conn)))
        outline = cls(
            ids=ids,
            derived=derived,
            degrees=degrees,
            incoming=_Lazy(_query_incoming(conn)),
            pinned=pinned,
            scopes={},
            depends=depends,
        )
        outline.scopes = _Scopes(conn, outline.current)
        outline.records = Lines(ix, outline.pos)
        return outline

    def many(self, ids: list[str]) -> list[dict]:
        """The full records with these IDs, ledger lines decoded in one go when they are lazy."""
        records = self.records
        return records.many(ids) if isinstance(records, Lines) else [records[rid] for rid in ids]

    def retired_count(self) -> int:
        """How many records a later record supersedes."""
        return len(self.ids) - len(self.current)


def _query_blocked(conn: sqlite3.Connection) -> Callable[[str], list[str] | None]:
    def fetch(rid: str) -> list[str] | None:
        if not rid.startswith("d"):
            return None  # only decisions have a blocked_by list
        rows = conn.execute("SELECT blocker FROM blocked_by WHERE decision = ? ORDER BY position", (rid,))
        return [b for (b,) in rows]

    return fetch


def _query_resolved_by(conn: sqlite3.Connection) -> Callable[[str], list[str] | None]:
    def fetch(rid: str) -> list[str] | None:
        rows = conn.execute("SELECT resolver FROM resolved_by WHERE question = ? ORDER BY position", (rid,))
        return [r for (r,) in rows] or None

    return fetch


def _query_incoming(conn: sqlite3.Connection) -> Callable[[str], list[str] | None]:
    """Record ID -> the current records citing it (supports, depends_on, answers; a question it resolves)."""

    def fetch(rid: str) -> list[str] | None:
        rows = conn.execute(
            "SELECT s.id FROM records s WHERE s.retired_by = '' AND ("
            " s.id IN (SELECT source FROM relations WHERE target = ?1 AND type != 'supersedes')"
            " OR s.id IN (SELECT question FROM resolved_by WHERE resolver = ?1)"
            ") ORDER BY s.seq",
            (rid,),
        )
        return [r for (r,) in rows] or None

    return fetch
