"""The incremental update: validate and index only the lines past the prefix the index still shares."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from docket_git.errors import LedgerError
from docket_git.ledger import jsonl, store
from docket_git.ledger.index import schema
from docket_git.ledger.index.build import _fill
from docket_git.ledger.index.handle import known
from docket_git.ledger.index.proof import _checkpoints, _shared_prefix, _write_meta
from docket_git.ledger.index.schema import SCHEMA_VERSION, TABLE_NAMES, _count, _meta
from docket_git.ledger.index.settle import _settle_appended, _settle_changed

# -- updating --------------------------------------------------------------------------------------


def update(
    conn: sqlite3.Connection,
    ledger: Path,
    data: bytes,
    stat: tuple,
    trusted: tuple | None = None,
    *,
    prefix: tuple[int, int, int] | None = None,
) -> str:
    """Bring conn's tables to ``data``, the ledger's bytes as of ``stat``; "updated" or "rebuilt".

    Only the lines past the last checkpoint ``data`` still matches are
    validated and indexed. ``trusted`` is (bytes, records, lines) of a prefix
    the caller proved under the ledger's exclusive lock (its own append):
    then no checkpoint is hashed. ``prefix``: what ``_prefix`` found, when the
    caller asked already. Raises ``LedgerError`` when the new lines do not
    validate; the tables are then left as they were.
    """
    with jsonl.gc_paused():
        shared, kept, lines = prefix if prefix is not None else _prefix(conn, ledger, data, trusted)
        conn.execute("BEGIN IMMEDIATE")
        try:
            if _afresh((shared, kept, lines), data):
                _clear(conn)
                _fill(conn, ledger, data, stat)
                conn.execute("COMMIT")
                return "rebuilt"
            how = _update_past(conn, ledger, data, stat, (shared, kept, lines))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return how


def _update_past(
    conn: sqlite3.Connection, ledger: Path, data: bytes, stat: tuple, prefix: tuple[int, int, int], base: int = 0
) -> str:
    """In conn's open write transaction: index the lines past ``prefix`` (bytes, records, lines kept).

    ``data`` holds the ledger's bytes from offset ``base`` on: all of them
    (0), or a tail from at or before the checkpoint preceding ``prefix``'s
    end and the last TAIL bytes (``Follower.tail``). Offsets stored are the
    file's own.
    """
    shared, kept, lines = prefix
    total = _count(conn)
    removed = _truncate(conn, kept) if kept < total else []
    at = shared - base
    snap = store.parse(ledger, data, records=False, start=at, line_no=lines, known=known(conn, kept))
    how = _apply(conn, data, shared, kept, lines, snap, removed, base=base)
    newlines = lines + data.count(b"\n", at, snap.valid_length)
    _write_meta(conn, ledger, stat, data, snap.valid_length, newlines, base=base)
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('indexed_from', ?)", (kept,))
    return how


def _prefix(conn: sqlite3.Connection, ledger: Path, data: bytes, trusted: tuple | None) -> tuple[int, int, int]:
    """(bytes, records, lines) of what conn indexes that ``data`` still starts with (all zero: nothing)."""
    meta = _meta(conn)
    same = meta.get("ledger") == str(ledger.resolve()) and meta.get("schema_version") == SCHEMA_VERSION
    if not same:
        return 0, 0, 0
    if trusted is not None and (meta.get("length"), meta.get("lines")) == (trusted[0], trusted[2]):
        return trusted
    return _shared_prefix(conn, data)


#: An update that would validate more new bytes than this builds afresh instead: the build streams
#: in slices, while an update holds every new record (and the old rows' structure) at once.
UPDATE_LIMIT = 8 << 20


def _afresh(prefix: tuple[int, int, int], data: bytes) -> bool:
    """True when the index is better built afresh than updated past ``prefix`` (bytes, records, lines kept)."""
    shared, kept, _ = prefix
    return not kept or len(data) - shared > UPDATE_LIMIT


def _clear(conn: sqlite3.Connection) -> None:
    """Empty every table and drop the secondary indexes (``_fill`` creates them once, at the end)."""
    for table in TABLE_NAMES:
        conn.execute(f"DELETE FROM {table}")
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL").fetchall():
        conn.execute(f"DROP INDEX {name}")


def _apply(
    conn: sqlite3.Connection,
    data: bytes,
    shared: int,
    kept: int,
    lines: int,
    snap: store.Snapshot,
    removed: list[tuple[str, str, str]],
    *,
    base: int = 0,
) -> str:
    """Index the records validation found past ``shared`` after the first ``kept`` (the rest are truncated already).

    ``removed``: the (source, type, target) relations of the records truncated (``_truncate``).
    ``data`` starts at file offset ``base``; ``shared`` and the stored offsets are the file's.
    """
    length = snap.valid_length
    found, ends = jsonl.whole_lines(data, shared - base, length)
    new = snap.tail
    if snap.tail_ends != ends:  # never: both are the non-blank whole lines of the same region
        raise LedgerError(f"{snap.path}: the index could not line up the ledger's records; run the command again")
    # The last shared checkpoint may end a short block (the file's old end), or a last line
    # without its newline: blocks are cut again from the checkpoint before it, so appends do
    # not leave a trail of small blocks and the checkpoints are the ones a fresh build cuts.
    start, before, before_lines = shared, kept, lines
    row = conn.execute(
        "SELECT end_offset, records, lines FROM checkpoints WHERE end_offset < ? ORDER BY end_offset DESC LIMIT 1",
        (shared,),
    ).fetchone()
    if shared and (shared - (row[0] if row else 0) < schema.BLOCK or data[shared - base - 1] != 0x0A):
        start, before, before_lines = (row[0], row[1], row[2]) if row is not None else (0, 0, 0)
    if start < base:  # never: the caller's tail starts at or before the checkpoint
        raise LedgerError(f"{snap.path}: the index could not line up the ledger's records; run the command again")
    conn.execute("DELETE FROM checkpoints WHERE end_offset > ?", (start,))
    conn.executemany(
        "INSERT INTO checkpoints VALUES (?, ?, ?, ?)",
        _checkpoints(data, start - base, before, before_lines, length, base=base),
    )
    if not removed and not any(r.get("supersedes") for r in new):
        _settle_appended(conn, kept, new, found, ends, data, base)
    else:
        _settle_changed(conn, kept, removed, new, found, ends, data, base)
    return "updated"


def _truncate(conn: sqlite3.Connection, kept: int) -> list[tuple[str, str, str]]:
    """Forget the records from position ``kept`` on, and every row they own; returns their relations."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS gone (id TEXT PRIMARY KEY)")
    conn.execute("DELETE FROM gone")
    conn.execute("INSERT INTO gone SELECT id FROM records WHERE seq >= ?", (kept,))
    removed = conn.execute(
        "SELECT source, type, target FROM relations WHERE source IN (SELECT id FROM gone)"
    ).fetchall()
    conn.execute("DELETE FROM relations WHERE source IN (SELECT id FROM gone)")
    conn.execute("DELETE FROM scopes WHERE record IN (SELECT id FROM gone)")
    conn.execute("DELETE FROM blocked_by WHERE decision IN (SELECT id FROM gone)")
    # Questions a gone record resolved are settled again (_settle_changed); their rows go with them.
    conn.execute("DELETE FROM resolved_by WHERE question IN (SELECT id FROM gone) OR resolver IN (SELECT id FROM gone)")
    conn.execute("DELETE FROM records WHERE seq >= ?", (kept,))
    conn.execute("DELETE FROM haystacks WHERE seq >= ?", (kept,))
    conn.execute("DELETE FROM prerequisites WHERE source >= ?", (kept,))
    return removed
