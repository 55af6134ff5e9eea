"""The proof of currency: the stat and last-block digest, the digest checkpoints along the file, the meta rows.

An equal stat (``_holds``) and an equal digest of the last TAIL bytes prove
an index current in O(1) (``_proven``, and ``_tail_proof`` on an open descriptor);
otherwise the checkpoints say how long a prefix the index still shares with
the bytes (``_shared_prefix``).
"""

from __future__ import annotations

import bisect
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from docket_git.digest import constructor as sha256_for
from docket_git.ledger import canonical, db, jsonl, store
from docket_git.ledger.index import schema
from docket_git.ledger.index.schema import SCHEMA_VERSION, TAIL, _count, _meta
from docket_git.repo import files


def _tail_digest(data: bytes | memoryview, length: int) -> str:
    return canonical.sha256(memoryview(data)[max(0, length - TAIL) : length])


def _read_tail(ledger: Path, length: int) -> bytes | None:
    """The last TAIL bytes of the first ``length`` bytes of the ledger, read without following links."""
    try:
        fd = files.open_fd(ledger, os.O_RDONLY, store.root_of(ledger))
    except OSError:
        return None
    try:
        return os.pread(fd, min(TAIL, length), max(0, length - TAIL))
    except OSError:
        return None
    finally:
        os.close(fd)


def _holds(meta: dict, ledger: Path, stat: tuple) -> bool:
    """True when the meta rows say the index holds every byte of this ledger as ``stat`` finds it.

    The one statement of the stat comparison: same schema, same ledger, equal
    (size, mtime, ctime, inode), and the indexed length is the file's (an
    unfinished batch or a torn line beyond it is read the long way). The
    digest of the last TAIL bytes completes the proof (``_proven``, ``_tail_proof``).
    """
    return (
        meta.get("schema_version") == SCHEMA_VERSION
        and meta.get("ledger") == str(ledger.resolve())
        and stat == (meta.get("size"), meta.get("mtime_ns"), meta.get("ctime_ns"), meta.get("inode"))
        and stat[0] == meta.get("length")
    )


def _proven(conn: sqlite3.Connection, ledger: Path, data: bytes | None = None) -> bool:
    """True when the index provably holds the ledger's current bytes, without reading them all.

    ``data``: the bytes the caller read under the ledger's lock; then they must be what the index holds.
    """
    meta = _meta(conn)
    stat = db.file_stat(ledger)
    if not _holds(meta, ledger, stat):
        return False
    size = stat[0]
    tail = _read_tail(ledger, size) if data is None else (data[max(0, size - TAIL) :] if len(data) == size else None)
    return tail is not None and canonical.sha256(tail) == meta.get("tail_digest")


def _shared_prefix(conn: sqlite3.Connection, data: bytes) -> tuple[int, int, int]:
    """(bytes, records, lines) of the indexed prefix data still starts with, to the last matching checkpoint."""
    sha256 = sha256_for(len(data))
    view = memoryview(data)
    shared = kept = lines = start = 0
    rows = conn.execute("SELECT end_offset, records, lines, digest FROM checkpoints ORDER BY end_offset")
    for end, records, newlines, digest in rows:
        if end > len(data) or sha256(view[start:end]).hexdigest() != digest:
            break
        if end < len(data) and data[end - 1] != 0x0A:
            break  # the indexed file ended here without a newline: its last line may go on in data
        shared, kept, lines, start = end, records, newlines, end
    return shared, kept, lines


def _checkpoints(
    data: bytes,
    start: int,
    records_before: int,
    lines_before: int,
    length: int,
    ends: list[int] | None = None,
    base: int = 0,
) -> Iterator[tuple[int, int, int, str]]:
    """(end, records before end, newlines before end, digest of the block) from start to length, a block per BLOCK bytes.

    ``ends``: the offset just past each record's line from start on, when the caller has them (no line is split again).
    ``base``: the file offset of ``data[0]`` (data holds a tail), added to each end.
    """
    sha256 = sha256_for(length - start)
    view = memoryview(data)
    pos = start
    count, lines = records_before, lines_before
    while pos < length:
        nl = data.find(b"\n", min(pos + schema.BLOCK, length) - 1, length)
        end = length if nl < 0 else nl + 1
        if ends is None:
            count += len(jsonl.whole_lines(data, pos, end)[0])
        else:
            count = records_before + bisect.bisect_right(ends, end)
        lines += data.count(b"\n", pos, end)
        yield base + end, count, lines, sha256(view[pos:end]).hexdigest()
        pos = end


def _write_meta(
    conn: sqlite3.Connection, ledger: Path, stat: tuple, data: bytes, length: int, lines: int, base: int = 0
) -> None:
    """The meta rows: what the index was built from (``length``: within ``data``, which starts at file offset ``base``)."""
    size, mtime, ctime, ino = stat
    values = {
        "schema_version": SCHEMA_VERSION,
        "ledger": str(ledger.resolve()),
        "size": size,
        "mtime_ns": mtime,
        "ctime_ns": ctime,
        "inode": ino,
        "length": base + length,
        "lines": lines,
        "tail_digest": _tail_digest(data, length),
    }
    conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", values.items())
    conn.execute("DELETE FROM meta WHERE key IN ('revision', 'records_end')")


def _tail_proof(conn: sqlite3.Connection, ledger: Path, fd: int) -> tuple[dict, int, bytes] | None:
    """(meta, base, the ledger's bytes from base on) when the index provably holds every byte of the open ledger.

    The proof is ``_proven``'s (``_holds``, then the digest of the last TAIL
    bytes), taken on the descriptor that will be written. ``base`` is where
    the bytes the append needs begin: at or before the checkpoint before the
    last (``_apply`` cuts blocks again from there) and at least TAIL bytes
    before the end (``store.write_records`` journals the 4 KB before a
    batch). None when the index is empty or proves nothing.
    """
    meta = _meta(conn)
    st = os.fstat(fd)
    size = st.st_size
    if not size or not _holds(meta, ledger, (size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)) or not _count(conn):
        return None
    row = conn.execute("SELECT max(end_offset) FROM checkpoints WHERE end_offset < ?", (size,)).fetchone()
    base = max(0, min(row[0] or 0, size - TAIL))
    tail = store.read_from(fd, base, size)
    if len(tail) != size - base or _tail_digest(tail, len(tail)) != meta.get("tail_digest"):
        return None
    return meta, base, tail
