"""Reading records back: lines by offset checked against their digests, whole snapshots, the revision digest,
and a ledger opened for a briefing (``for_briefing``).

``parse`` validates other bytes that share a prefix with the ledger (a staged
blob, a rebase result) only past that prefix.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

from docket_git.digest import constructor as digest_of
from docket_git.errors import LedgerError, withdraw
from docket_git.ledger import canonical, db, jsonl, store
from docket_git.ledger.index.proof import (
    Index,
    _locked_read,
    _shared_prefix,
    _tail_digest,
    build_later,
    first_use,
    known,
    open_index,
    opened,
)
from docket_git.ledger.index.schema import _meta

#: Up to this many records are read line by line (each checked against its digest) instead of reading the file.
FEW = 512


def records_of(ix: Index, ids: list[str], *, parse_float: Callable[[str], object] | None = None) -> list[dict]:
    """The full records with these IDs (decoded from their ledger lines in one go), in the order given.

    A few records are read line by line at the offsets the index holds, each
    line checked against its digest; many, from the whole file. Either way the
    bytes are the ones the index was proven against: if the file changed in
    between, the index is brought current again first.
    """
    if not ids:
        return []
    chunks = _read_lines(ix, _spans(ix, ids)) if len(ids) <= FEW and ix.data is None else None
    if chunks is None:  # many, or changed since it was proven: read it whole, proving the index again
        view = memoryview(ledger_bytes(ix))
        chunks = [view[o : o + n] for o, n, _ in _spans(ix, ids)]
    return json.loads(b"[" + b",".join(chunks) + b"]", **_hooks(parse_float))


def _hooks(parse_float: Callable[[str], object] | None) -> dict:
    """``json.loads``' keywords that hand every float, NaN and Infinity to parse_float (none: the defaults)."""
    return {} if parse_float is None else {"parse_float": parse_float, "parse_constant": parse_float}


#: ``records_in_slices`` decodes this many lines at a time.
SLICE = 2000


def records_in_slices(
    ix: Index,
    ids: list[str],
    spans: list[tuple[int, int]] | None = None,
    *,
    parse_float: Callable[[str], object] | None = None,
) -> Iterator[list[dict]]:
    """``records_of`` a slice at a time: listing 100k records never holds all of them decoded at once.

    ``spans``: each record's (line offset, line length), when the caller's query read them already.
    ``parse_float``: called with the text of each float and of each NaN or Infinity decoded
    (``json.loads``' ``parse_float`` and ``parse_constant``); it returns the value.
    """
    if len(ids) <= FEW:
        yield records_of(ix, ids, parse_float=parse_float)
        return
    if spans is None:
        spans = [(o, n) for o, n, _ in _spans(ix, ids)]
    view = memoryview(ledger_bytes(ix))
    hooks = _hooks(parse_float)
    for start in range(0, len(spans), SLICE):
        yield json.loads(b"[" + b",".join([view[o : o + n] for o, n in spans[start : start + SLICE]]) + b"]", **hooks)


def _spans(ix: Index, ids: list[str]) -> list[tuple[int, int, str]]:
    """(offset, length, digest) of each record's line, in the order of ids."""
    if len(ids) > 4096:
        spans = {rid: (o, n, d) for rid, o, n, d in ix.conn.execute(_SPANS)}
    else:  # one query by ID (a JSON array in, the rows by the ID index out)
        rows = ix.conn.execute(_SPANS + " WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(ids),))
        spans = {rid: (o, n, d) for rid, o, n, d in rows}
    return [spans[rid] for rid in ids]


_SPANS = "SELECT id, line_offset, line_length, line_digest FROM records"


def _read_lines(ix: Index, spans: list[tuple[int, int, str]]) -> list[bytes] | None:
    """The lines at these (offset, length, digest) spans, or None when one does not match its digest."""
    try:
        fd = ix.line_reader()
        out = []
        for offset, length, digest in spans:
            line = os.pread(fd, length, offset)
            if canonical.sha256(line) != digest:
                return None  # the file changed since it was proven: take the long way
            out.append(line)
        return out
    except OSError:
        return None


def prefix_digest(ix: Index, rid: str) -> str:
    """SHA-256 of the ledger bytes up to and including rid's line (``ID@DIGEST`` baselines)."""
    data = ledger_bytes(ix)
    row = ix.conn.execute("SELECT line_offset, line_length FROM records WHERE id = ?", (rid,)).fetchone()
    if row is None:
        raise KeyError(rid)
    end = min(row[0] + row[1] + 1, len(data))
    return canonical.sha256(memoryview(data)[:end])


def ledger_bytes(ix: Index) -> bytes:
    """The ledger's bytes, checked to be the ones the index holds (brought current again if they changed)."""
    for attempt in range(3):
        data = ix.data if ix.data is not None and attempt == 0 else _locked_read(ix.ledger)[1]  # as indexed
        meta = _meta(ix.conn)
        length = meta.get("length", 0)
        if len(data) >= length and _tail_digest(data, length) == meta.get("tail_digest"):
            ix.data = data
            return data
        fresh = open_index(ix.ledger)  # changed under us: prove (and update) again
        ix.close()  # the line reader too: a checkout may have put a new file in place
        ix.conn, ix.path, ix.data = fresh.conn, fresh.path, fresh.data
    raise store.LedgerError(f"{ix.ledger} keeps changing while it is read; try again")


def texts(conn: sqlite3.Connection, ids: list[str]) -> dict[str, dict]:
    """Record ID -> {"text": ...} for the IDs the index holds (labels for cited records)."""
    out: dict[str, dict] = {}
    for rid in dict.fromkeys(ids):
        row = conn.execute("SELECT text FROM records WHERE id = ?", (rid,)).fetchone()
        if row is not None:
            out[rid] = {"text": row[0]}
    return out


def records_end(data: bytes, valid_length: int) -> int:
    """The byte offset just past the last record's line within the valid bytes (0 if none)."""
    last = valid_length - 1
    while last >= 0 and data[last] in b" \t\r\n\f\v":  # trailing blank lines (no copy of the data)
        last -= 1
    if last < 0:
        return 0
    nl = data.find(b"\n", last + 1, valid_length)
    return nl + 1 if nl >= 0 else valid_length


#: Ledger -> (end, digest of the TAIL bytes before it, SHA-256 state of the bytes before it): what this
#: process last hashed for a revision. A long-lived process (``docket mcp``) extends it over the lines
#: appended since instead of hashing the whole ledger again (80 ms of CPU at 100k records).
_hashed: dict[Path, tuple[int, str, object]] = {}


def revision(ix: Index) -> tuple[str, int]:
    """(SHA-256 of the ledger through its last record's line, that line's end): the briefing's revision.

    Hashing a large ledger costs tens of milliseconds, so the first reader
    after a change computes it and files it in the index for the next ones.
    A process that hashed an earlier version hashes only what was appended,
    when the last TAIL bytes it hashed are still where they were (the proof
    an append itself rests on, d109).
    """
    meta = _meta(ix.conn)
    if meta.get("revision") and meta.get("records_end") is not None:
        return meta["revision"], meta["records_end"]
    data = ledger_bytes(ix)
    meta = _meta(ix.conn)
    end = records_end(data, meta.get("length", 0))
    view = memoryview(data)
    known = _hashed.get(ix.ledger)
    if known is not None and known[0] <= end and _tail_digest(view, known[0]) == known[1]:
        state = known[2].copy()  # type: ignore[attr-defined]
        state.update(view[known[0] : end])
    else:
        state = digest_of(end)(view[:end])
    _hashed[ix.ledger] = (end, _tail_digest(view, end), state.copy())
    digest = state.hexdigest()  # type: ignore[attr-defined]
    # Filed for the next readers when the index still holds the bytes it was computed from (best effort).
    with contextlib.suppress(OSError, sqlite3.Error):
        conn = ix.conn if ix.path is None else db.open_wal(ix.path)
        try:
            conn.execute("BEGIN IMMEDIATE")
            now = _meta(conn)
            if (now.get("length"), now.get("tail_digest")) == (meta.get("length"), meta.get("tail_digest")):
                conn.executemany(
                    "INSERT OR REPLACE INTO meta VALUES (?, ?)", (("revision", digest), ("records_end", end))
                )
            conn.execute("COMMIT")
        finally:
            if conn is not ix.conn:
                conn.close()
    return digest, end


def read(ledger: Path | None, *, records: bool = True, ix: Index | None = None) -> store.Snapshot:
    """The ledger validated (only what the index had not seen), as a snapshot; a missing file reads as empty.

    With ``records`` every record is decoded (in one go: the bytes were
    validated when they were indexed); the snapshot's ``index`` is not filled.
    ``ix``: the ledger's index, when the caller has it open already.
    """
    if ledger is None:
        return store.Snapshot(path=Path(store.LEDGER_DIR) / store.LEDGER_NAME)
    if ix is None:
        with opened(ledger) as own:
            return read(ledger, records=records, ix=own)
    with jsonl.gc_paused():
        data = ledger_bytes(ix)
        meta = _meta(ix.conn)
        length = meta.get("length", 0)
        snap = store.Snapshot(path=ledger, data=data, valid_length=length)
        if records and length:
            lines, snap.ends = jsonl.whole_lines(data, 0, length)
            snap.records = json.loads(b"[" + b",".join(lines) + b"]") if lines else []
        digest = meta.get("revision")
        if digest and meta.get("records_end") is not None:
            snap.hashed = (meta["records_end"], digest)
        return snap


def parse(ledger: Path, data: bytes, *, records: bool = True, ix: Index | None = None) -> store.Snapshot:
    """Validate bytes that may share a prefix with the ledger's (a staged blob, a rebase's result).

    The lines up to the last checkpoint they share with the indexed ledger
    are the ones validated there already; only the rest are validated. When
    the ledger itself cannot be indexed (it is invalid), every line is.
    ``ix``: the ledger's index, when the caller holds the ledger's lock (``held``).
    """
    if ix is not None:
        return _parse_over(ix, ledger, data, records)
    try:
        own = open_index(ledger)
    except LedgerError:
        return store.parse(ledger, data, records=records)
    with contextlib.closing(own):
        if not own.note:
            return _parse_over(own, ledger, data, records)
        withdraw(own.note)  # a stand-in for a ledger committed broken (``broken.stand_in``): validate every line
    return store.parse(ledger, data, records=records)


def _parse_over(ix: Index, ledger: Path, data: bytes, records: bool) -> store.Snapshot:
    shared, kept, lines = _shared_prefix(ix.conn, data)
    return store.parse(ledger, data, records=records, start=shared, line_no=lines, known=known(ix.conn, kept))


class Briefed:
    """A ledger opened for a briefing (``for_briefing``): where it is, the caller's settings for it, its
    index proven current (``ix``) or a fresh clone's records in memory (``snapshot``), and its revision."""

    __slots__ = ("ix", "path", "prepared", "revision", "short", "snapshot")

    def __init__(
        self,
        path: Path | None,
        prepared: object,
        ix: Index | None = None,
        snapshot: store.Snapshot | None = None,
        revision: str = "",
    ) -> None:
        #: The ledger (None: there is none at or above the start).
        self.path = path
        #: What ``prepare`` gave for it.
        self.prepared = prepared
        self.ix = ix
        self.snapshot = snapshot
        #: SHA-256 of the ledger through its last record's line, and the 12 hex characters shown of it.
        self.revision = revision
        self.short = canonical.short(revision)


@contextlib.contextmanager
def for_briefing(
    start: Path, ledger: Path | None, prepare: Callable[[Path | None], object], *, fresh: bool
) -> Iterator[Briefed]:
    """The ledger a briefing reads, opened in one call: settings -> index.

    The ledger is ``ledger``, or found at or above ``start``; ``prepare(path)``
    (the caller's settings, which may refuse them) runs before anything is
    opened, with None when there is no ledger. Then, with the cyclic GC paused
    (a briefing builds many short-lived, acyclic objects), the index is opened,
    proven current, and closed on exit; or, ``fresh``, a ledger with no index yet
    is read in memory.
    """
    path = ledger if ledger is not None else store.find_ledger(start)
    prepared = prepare(path)
    if path is None:
        yield Briefed(None, prepared)
        return
    with jsonl.gc_paused():
        # A ledger with no index yet (small enough to read in memory) is read so, and its index built once
        # this process has answered (d108); one that cannot be read is left to the indexed read to report.
        snapshot = None
        if fresh and first_use(path):
            with contextlib.suppress(store.LedgerError):
                snapshot = store.read(path)
                build_later(path)
        if snapshot is not None:
            yield Briefed(path, prepared, snapshot=snapshot, revision=snapshot.revision())
            return
        with opened(path) as ix:
            yield Briefed(path, prepared, ix=ix, revision=revision(ix)[0])
