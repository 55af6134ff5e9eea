"""The outline of a validated ledger: everything a briefing needs that no task changes.

Record order, projection (retired, blocked, resolved), in-degrees, the
reverse relation index, pinned records and which current records carry each
scope string. ``Outline.build`` computes it from parsed records; ``load``
gets it from a cache in the user cache directory, so a session hook on a
100k-record ledger neither decodes every line nor re-derives every state.
Full records are decoded from their lines only when a command prints or
weighs them (``Lines``), one at a time or many in one ``json.loads``.

The cache holds the outline of a ledger prefix, keyed by its byte length
and SHA-256. The same bytes give the same outline. When the ledger only
grew by records that retire nothing, the cached outline is extended in
place (``Outline.extend``); a supersession rebuilds it from the cached rows
(each record's structural fields) plus the new lines; any other change
rebuilds it from every line. Like the validated-prefix cache, it is never
trusted over the file, and losing it costs only time.
"""

from __future__ import annotations

import json
import marshal
import sys
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from docket_git.ledger import cachefile, canonical, jsonl
from docket_git.ledger.project import Derived, derive, settle

CACHE_VERSION = 2
#: marshal's format may change between Python versions: a cache is read only by the one that wrote it.
_FORMAT = f"{CACHE_VERSION}/py{sys.version_info[0]}.{sys.version_info[1]}"
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


class Lines(Mapping[str, dict]):
    """Record ID -> full record, each parsed from its ledger line on first use.

    ``ends[i]`` is the byte offset just past record i's line; blank lines
    between records are whitespace JSON ignores. The bytes were validated
    before an outline was made of them.
    """

    def __init__(self, data: bytes, ends: array, pos: dict[str, int]) -> None:
        self.data = data
        self.ends = ends
        self._pos = pos
        self._parsed: dict[str, dict] = {}

    def __getitem__(self, rid: str) -> dict:
        record = self._parsed.get(rid)
        if record is None:
            i = self._pos[rid]
            start = self.ends[i - 1] if i else 0
            record = self._parsed[rid] = json.loads(self.data[start : self.ends[i]])
        return record

    def __contains__(self, rid: object) -> bool:
        return rid in self._pos

    def many(self, ids: list[str]) -> list[dict]:
        """The records with these IDs, the unparsed ones decoded in one ``json.loads``."""
        missing = [rid for rid in ids if rid not in self._parsed]
        if len(missing) > 1:
            ends, data, pos = self.ends, self.data, self._pos
            chunks = []
            for rid in missing:
                i = pos[rid]
                chunks.append(data[ends[i - 1] if i else 0 : ends[i]])
            for rid, record in zip(missing, json.loads(b"[" + b",".join(chunks) + b"]"), strict=True):
                self._parsed[rid] = record
        return [self[rid] for rid in ids]

    def prefix_digest(self, rid: str) -> str:
        """SHA-256 of the ledger bytes up to and including rid's line."""
        return canonical.sha256(memoryview(self.data)[: self.ends[self._pos[rid]]])

    def __iter__(self) -> Iterator[str]:
        return iter(self._pos)

    def __len__(self) -> int:
        return len(self._pos)


@dataclass
class Outline:
    """What a briefing needs of a ledger before it knows the task; records in file order."""

    ids: list[str]
    derived: Derived
    #: Record ID -> references to it (supports, depends_on, answers, resolved_by) from any record.
    degrees: dict[str, int]
    #: Record ID -> current records citing it, in file order: the reverse index expansion walks.
    incoming: dict[str, list[str]]
    #: Current pinned records.
    pinned: set[str]
    #: Scope string as recorded -> the current records carrying it, in file order.
    scopes: dict[str, list[str]]
    #: Decision -> its depends_on, for decisions that have one (coverage walks these).
    depends: dict[str, list[str]]
    #: Record ID -> the full record (a dict, or lazily parsed ledger lines).
    records: Mapping[str, dict] = field(default_factory=dict)
    pos: dict[str, int] = field(init=False)
    current: set[str] = field(init=False)
    #: Current records in file order.
    live: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.pos = {rid: i for i, rid in enumerate(self.ids)}
        retired = self.derived.retired_by
        self.current = self.pos.keys() - retired.keys()
        self.live = [rid for rid in self.ids if rid not in retired] if retired else list(self.ids)

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

    def extend(self, records: list[dict]) -> bool:
        """Add records appended after this outline's, as ``build`` over all of them would.

        False, with the outline unchanged, when one of them supersedes a
        record: retiring an earlier record can change the state of anything
        that depends on it, so that calls for a full build.
        """
        if any(r.get("supersedes") for r in records):
            return False
        derived, lookup = self.derived, self.records
        resolved = derived.resolved_by
        counts, incoming, pos = self.degrees, self.incoming, self.pos
        for record in records:
            rid = record["id"]
            self.pos[rid] = len(self.ids)
            self.ids.append(rid)
            self.current.add(rid)
            self.live.append(rid)
            before = {q: len(resolved.get(q, ())) for q in record.get("answers") or ()}
            settle(record, lookup, derived)
            refs = cited(record, False)
            for ref in refs:
                counts[ref] = counts.get(ref, 0) + 1
            for ref in dict.fromkeys(refs):
                incoming.setdefault(ref, []).append(rid)
            for question, n in before.items():
                if len(resolved.get(question, ())) > n:  # this record now resolves the question
                    counts[rid] = counts.get(rid, 0) + 1
                    if question in self.current:
                        holders = incoming.setdefault(rid, [])
                        holders.append(question)
                        holders.sort(key=pos.__getitem__)
            self._index(record, self.current)
        return True

    def many(self, ids: list[str]) -> list[dict]:
        """The full records with these IDs, ledger lines decoded in one go when they are lazy."""
        records = self.records
        return records.many(ids) if isinstance(records, Lines) else [records[rid] for rid in ids]

    def retired_count(self) -> int:
        """How many records a later record supersedes."""
        return len(self.ids) - len(self.current)


# -- the cache -----------------------------------------------------------------------------------
#
# Two files per ledger in the user cache directory, each a marshal header
# (version, ledger path, byte length and SHA-256 of the prefix it describes)
# followed by its payload: ``.outline`` holds the outline itself, rewritten
# whenever the ledger changed; ``.rows`` holds each record's structural fields
# for the full rebuild a supersession needs, rewritten only by full builds.
# marshal is the fastest loader in the standard library; the files live in
# the user's own cache directory and are trusted no more than the bytes they
# were checked against.


def _cache_file(path: Path, kind: str) -> Path:
    return cachefile.cache_path("outline", cachefile.ledger_key(path), kind)


def records_end(data: bytes, valid_length: int) -> int:
    """The byte offset just past the last record's line within the valid bytes (0 if none)."""
    last = valid_length - 1
    while last >= 0 and data[last] in b" \t\r\n\f\v":  # trailing blank lines (no copy of the data)
        last -= 1
    if last < 0:
        return 0
    nl = data.find(b"\n", last + 1, valid_length)
    return nl + 1 if nl >= 0 else valid_length


def _new_lines(data: bytes, start: int, stop: int, parsed: Parsed | None = None) -> tuple[list[dict], list[int]]:
    """The records of data[start:stop] (whole validated lines) and the offset just past each."""
    if parsed is not None:
        first, records, ends = parsed
        if first == start and (ends[-1] if ends else start) == stop:
            return records, ends
    keep, ends = jsonl.whole_lines(data, start, stop)
    records = json.loads(b"[" + b",".join(keep) + b"]") if keep else []  # validated lines: never None
    return records, ends


#: Records a caller already decoded: (byte offset they start at, records, offset past each).
Parsed = tuple[int, list[dict], list[int]]


def load(path: Path, data: bytes, end: int, revision: str, parsed: Parsed | None = None) -> Outline:
    """The outline of data[:end] (validated records ending at ``end``, SHA-256 ``revision``).

    From the cache when it holds exactly these bytes; extended by the new
    lines when the ledger only grew by records that retire nothing; else
    rebuilt from the cached rows plus the new lines, or from every line.
    A changed outline is saved for the next caller; a damaged cache file
    costs a rebuild, never a wrong or failed briefing. ``parsed`` are records
    the caller decoded while validating, used instead of decoding them again.
    """
    try:
        outline = _cached(path, data, end, revision, parsed)
    except Exception:
        outline = None
    if outline is not None:
        return outline
    try:
        start, rows, ends = _cached_rows(path, data, end, revision)
    except Exception:
        start, rows, ends = 0, [], array("q")
    new, new_ends = _new_lines(data, start, end, parsed)
    rows.extend(row(r) for r in new)
    ends.extend(new_ends)
    outline = Outline.build(rows)
    outline.records = Lines(data, ends, outline.pos)
    _write(path, "rows", end, revision, marshal.dumps((rows, ends.tobytes())))
    _write(path, "outline", end, revision, _pack(outline, ends))
    return outline


def _cached(path: Path, data: bytes, end: int, revision: str, parsed: Parsed | None) -> Outline | None:
    """The cached outline, extended by appended records; None when a rebuild is needed."""
    cached = _read(path, "outline", data, end, revision)
    if cached is None:
        return None
    length, payload = cached
    outline, ends = _unpack(payload)
    outline.records = Lines(data, ends, outline.pos)
    if length == end:
        return outline
    new, new_ends = _new_lines(data, length, end, parsed)
    ends.extend(new_ends)  # so a new record can look up the new records before it
    if not outline.extend(new):
        return None
    _write(path, "outline", end, revision, _pack(outline, ends))
    return outline


def _cached_rows(path: Path, data: bytes, end: int, revision: str) -> tuple[int, list[dict], array]:
    """(bytes covered, rows, line ends) from the rows cache, or (0, [], []) without one."""
    stored = _read(path, "rows", data, end, revision)
    if stored is None:
        return 0, [], array("q")
    length, payload = stored
    rows, ends_bytes = marshal.loads(payload)
    ends = array("q")
    ends.frombytes(ends_bytes)
    if not isinstance(rows, list) or len(ends) != len(rows):
        raise ValueError("outline cache: rows and ends differ in length")
    return length, rows, ends


def _pack(outline: Outline, ends: array) -> bytes:
    d = outline.derived
    return marshal.dumps(
        (
            outline.ids,
            ends.tobytes(),
            d.retired_by,
            d.blocked,
            d.resolved_by,
            outline.degrees,
            outline.incoming,
            sorted(outline.pinned),
            outline.scopes,
            outline.depends,
        )
    )


def _unpack(payload: memoryview) -> tuple[Outline, array]:
    ids, ends_bytes, retired_by, blocked, resolved_by, degrees, incoming, pinned, scopes, depends = marshal.loads(
        payload
    )
    ends = array("q")
    ends.frombytes(ends_bytes)
    outline = Outline(ids, Derived(retired_by, blocked, resolved_by), degrees, incoming, set(pinned), scopes, depends)
    if len(ends) != len(ids):
        raise ValueError("outline cache: ends and ids differ in length")
    return outline, ends


def _read(path: Path, kind: str, data: bytes, end: int, revision: str) -> tuple[int, memoryview] | None:
    """(prefix length, payload) of a cache file describing data[:length], length <= end; or None."""
    try:
        blob = memoryview(_cache_file(path, kind).read_bytes())
        size = int.from_bytes(blob[:4], "little")
        header = marshal.loads(blob[4 : 4 + size])
        if header["version"] != _FORMAT or header["path"] != str(path.resolve()):
            return None
        length = header["length"]
        if length == end:
            fresh = header["digest"] == revision
        else:
            fresh = 0 < length < end and canonical.sha256(memoryview(data)[:length]) == header["digest"]
        return (length, blob[4 + size :]) if fresh else None
    except (OSError, ValueError, EOFError, TypeError, KeyError):
        return None


def _write(path: Path, kind: str, end: int, revision: str, payload: bytes) -> None:
    header = marshal.dumps({"version": _FORMAT, "path": str(path.resolve()), "length": end, "digest": revision})
    target = _cache_file(path, kind)
    cachefile.write(target, len(header).to_bytes(4, "little"), header, payload)
