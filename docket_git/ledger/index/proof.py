"""Opening an index proven current: ``Index``, the proof, the checkpoints and meta rows, deferred builds.

The meta rows record what the index was built from: the file's size, mtime,
ctime and inode, the length of the bytes it holds, a digest of their last
TAIL bytes, and digest checkpoints along the file. ``open_index`` proves it
current before anyone reads it:

* an equal stat and an equal digest of the last block prove it in O(1)
  (ctime changes on every write, and ``os.utime`` cannot set it back);
* otherwise, under the ledger's shared lock, the checkpoints are compared
  block by block and only the lines past the last shared checkpoint are
  validated (against the records the index holds) and indexed again
  (``update``): an append by another tool, a branch switch, a rebase;
* a missing, corrupt, locked-out or foreign-version database, or one that
  would have to validate more than ``UPDATE_LIMIT`` new bytes, is built
  afresh silently in a temporary file renamed into place (``build``); a
  cache directory that cannot be written degrades to an in-memory index
  with one notice.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from docket_git.digest import constructor as sha256_for
from docket_git.errors import LedgerError, notice
from docket_git.ledger import canonical, db, jsonl, model, store
from docket_git.ledger.index import schema
from docket_git.ledger.index.schema import SCHEMA, SCHEMA_VERSION, TAIL, _count, _meta, db_path
from docket_git.ledger.validate import Index as Known
from docket_git.repo import files


class Index:
    """An index proven current for one ledger: a connection, and where it lives (None: in memory)."""

    __slots__ = ("_fd", "conn", "data", "how", "ledger", "note", "path")

    def __init__(
        self, conn: sqlite3.Connection, ledger: Path, path: Path | None, how: str = "current", data: bytes | None = None
    ) -> None:
        self.conn = conn
        self.ledger = ledger
        self.path = path
        #: What proving it current took: "current", "updated" or "rebuilt".
        self.how = how
        #: The ledger's bytes as indexed, when this process read them anyway (else read on demand).
        self.data = data
        #: The ledger opened for reading single lines (``records_of``), once per index.
        self._fd: int | None = None
        #: Why this index is not of the ledger asked for (a stand-in for a broken one), "" when it is.
        self.note = ""

    def close(self) -> None:
        self.conn.close()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def line_reader(self) -> int:
        """A descriptor of the ledger for reading lines by offset (opened safely once; closed with the index)."""
        if self._fd is None:
            self._fd = files.open_fd(self.ledger, os.O_RDONLY, store.root_of(self.ledger))
        return self._fd

    def reader(self) -> sqlite3.Connection:
        """A read-only connection (mode=ro, query_only) to the same data."""
        if self.path is None:
            self.conn.execute("PRAGMA query_only = ON")
            return self.conn
        return db.reader(self.path)

    def count(self) -> int:
        """How many records the index holds."""
        return _count(self.conn)


# -- the validation index, backed by SQL ------------------------------------------------------------


class _Backed:
    """What this process validated, in memory, over the first ``limit`` indexed records, looked up in SQL."""

    def __init__(self, conn: sqlite3.Connection, limit: int) -> None:
        super().__init__()
        self.conn, self.limit = conn, limit

    def copy(self) -> _Backed:
        out = type(self)(self.conn, self.limit)
        out.update(self)  # type: ignore[attr-defined]
        return out


class _Ids(_Backed, dict):
    """ID -> line of the records validated in this process, and the first ``limit`` indexed records."""

    def __contains__(self, rid: object) -> bool:
        if dict.__contains__(self, rid):
            return True
        if not self.limit or not isinstance(rid, str):
            return False
        row = self.conn.execute("SELECT 1 FROM records WHERE id = ? AND seq < ?", (rid, self.limit)).fetchone()
        return row is not None


class _Retired(_Backed, set):
    """IDs superseded by a record validated in this process or by one of the first ``limit`` indexed records."""

    def __contains__(self, rid: object) -> bool:
        if set.__contains__(self, rid):
            return True
        if not self.limit:
            return False
        row = self.conn.execute(
            "SELECT 1 FROM relations r JOIN records s ON s.id = r.source "
            "WHERE r.target = ? AND r.type = 'supersedes' AND s.seq < ? LIMIT 1",
            (rid, self.limit),
        ).fetchone()
        return row is not None


def known(conn: sqlite3.Connection, limit: int) -> Known:
    """The validation index of the first ``limit`` indexed records, looked up in SQL as rules ask."""
    row = conn.execute("SELECT id FROM records WHERE seq = ?", (limit - 1,)).fetchone() if limit else None
    top = model.seq(row[0]) if row else 0
    return Known(max_seq=top, lines=_Ids(conn, limit), retired=_Retired(conn, limit), count=limit)


# -- the proof -------------------------------------------------------------------------------------


def _tail_digest(data: bytes | memoryview, length: int) -> str:
    return canonical.sha256(memoryview(data)[max(0, length - TAIL) : length])


def _holds(meta: dict, ledger: Path, stat: tuple) -> bool:
    """True when the meta rows say the index holds every byte of this ledger as ``stat`` finds it.

    The one statement of the stat comparison: same schema and ledger, equal (size, mtime, ctime, inode),
    and the indexed length is the file's (an unfinished batch or a torn line beyond it is read the long way).
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
    if data is not None:
        tail = data[max(0, size - TAIL) :] if len(data) == size else None
    else:  # the last TAIL bytes, read without following links
        try:
            fd = files.open_fd(ledger, os.O_RDONLY, store.root_of(ledger))
            try:
                tail = os.pread(fd, min(TAIL, size), max(0, size - TAIL))
            finally:
                os.close(fd)
        except OSError:
            tail = None
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

    ``_proven``'s proof, taken on the descriptor that will be written. ``base``
    is where the bytes the append needs begin: at or before the checkpoint
    before the last (``_update_past`` cuts blocks again from there) and at least
    TAIL bytes before the end (``store.write_records`` journals the 4 KB
    before a batch). None when the index is empty or proves nothing.
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


# -- opening ---------------------------------------------------------------------------------------


def open_index(ledger: Path) -> Index:
    """The ledger's index, proven current (updated or rebuilt first when it is not).

    Raises ``LedgerError`` for a ledger that does not validate, as every reader does.
    """
    target = db_path(ledger)
    ix = _proven_file(ledger, target)
    if ix is not None:
        return ix
    # Not provably current: read the bytes under the ledger's shared lock (so no docket writer is
    # halfway through a batch), then bring the index to them under its own lock.
    stat, data = _locked_read(ledger)
    try:
        return _for_bytes(ledger, target, data, stat)
    except LedgerError:
        from docket_git.ledger import broken

        found = broken.stand_in(ledger, data)  # HEAD's ledger was committed broken: read the last good one
        if found is None:
            raise
        notice(found[1])
        stand_in = open_index(found[0])
        stand_in.note = found[1]
        return stand_in


def _locked_read(ledger: Path) -> tuple[tuple[int, int, int, int], bytes]:
    """(stat, bytes) of the ledger as readers see it; a missing ledger reads as empty."""
    return store.read_with_stat(ledger) or ((0, 0, 0, 0), b"")


def _for_bytes(ledger: Path, target: Path, data: bytes, stat: tuple) -> Index:
    """The index brought to ``data`` (the ledger's bytes as of ``stat``), persistent when the cache dir allows."""
    try:
        with db.lock(target):
            ix = _update_persistent(ledger, target, data, stat)
            ix.data = data
            ix.conn.execute("BEGIN")  # later lookups see this state, as a proven index's do
            return ix
    except (OSError, sqlite3.Error) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        notice(f"cannot write the ledger index at {target.parent} ({why}); using an in-memory index")
    from docket_git.ledger.index.update import update  # loaded only when the index must change

    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.executescript(SCHEMA)
    how = update(conn, ledger, data, stat)
    return Index(conn, ledger, None, how, data)


def _proven_file(ledger: Path, target: Path, data: bytes | None = None) -> Index | None:
    """The index file, read-only, when it proves it holds the ledger (``data``: as read under its lock); else None.

    One read transaction for the whole command: the proof and every later lookup see one state of
    the index, whatever another process commits meanwhile (WAL).
    """
    if not target.exists():
        return None
    try:
        conn = sqlite3.connect(db.read_only_uri(target), uri=True, isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        conn.execute("BEGIN")
        if _proven(conn, ledger, data):
            return Index(conn, ledger, target, data=data)
    except sqlite3.Error:
        pass
    conn.close()
    return None


def _update_persistent(ledger: Path, target: Path, data: bytes, stat: tuple) -> Index:
    """Under the index's lock: make the file current.

    An index that shares a prefix with ``data`` is updated in place (one
    WAL transaction: readers keep the state they began with); a missing one
    is first copied from another work tree's, when one shares most of data
    (``seed``). One that is still missing, or corrupt, of another version or
    sharing nothing, is built afresh in a temporary file renamed into place
    (``_build_file``).
    """
    # Loaded only when the index must change: a proven index (a warm session start) never imports them.
    from docket_git.ledger.index.build import _build_file
    from docket_git.ledger.index.update import _afresh, _prefix, update

    conn: sqlite3.Connection | None = None
    if not os.path.exists(target):
        from docket_git.ledger.index.seed import seed

        with contextlib.suppress(OSError, sqlite3.Error):
            seed(ledger, target, data)  # another work tree's index, when it shares most of data
    if os.path.exists(target):
        try:
            conn = db.open_wal(target)
            if not _usable(conn):
                conn.close()
                conn = None
        except sqlite3.DatabaseError:
            if conn is not None:
                conn.close()
            conn = None
    if conn is not None:
        try:
            if _proven(conn, ledger, data):
                return Index(conn, ledger, target, "current")
            prefix = _prefix(conn, ledger, data)
            if not _afresh(prefix, data):  # update in place
                return Index(conn, ledger, target, update(conn, ledger, data, stat, prefix=prefix))
        except sqlite3.DatabaseError:
            pass
        except BaseException:
            conn.close()
            raise
        conn.close()
    _build_file(ledger, target, data, stat)
    return Index(db.open_wal(target), ledger, target, "rebuilt")


def _usable(conn: sqlite3.Connection) -> bool:
    """True for an index of this version (tables in place); an empty new file is set up here."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables:
        conn.executescript(SCHEMA)
        return True
    if "meta" not in tables:
        return False
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return row is not None and row[0] == SCHEMA_VERSION


def opened(ledger: Path) -> contextlib.closing[Index]:
    """``open_index`` as a context manager that closes the connection."""
    return contextlib.closing(open_index(ledger))


def held(ledger: Path, data: bytes) -> Index:
    """The index brought to ``data``: the ledger's bytes, read by a caller that holds the ledger's lock.

    (``open_index`` would take the ledger's lock itself, which a holder of it must not.)
    """
    target = db_path(ledger)
    return _proven_file(ledger, target, data) or _for_bytes(ledger, target, data, db.file_stat(ledger))


# -- builds deferred past a hook's answer ----------------------------------------------------------

#: A ledger no larger than this that has no index yet is read in memory by a session hook or the guard
#: (``first_use``); its index is built by a child forked once the hook has answered (``build_later``).
DEFER_LIMIT = 8 << 20

#: Ledgers whose index ``finish_later`` builds after this process answers.
_later: list[Path] = []


def first_use(ledger: Path) -> bool:
    """True when ledger has no index file yet and is small enough to read in memory (and this OS can fork)."""
    if not hasattr(os, "fork"):
        return False
    try:
        size = os.stat(ledger).st_size
    except OSError:
        return False
    return size <= DEFER_LIMIT and not db_path(ledger).exists()


def build_later(ledger: Path) -> None:
    """Have ``finish_later`` build ledger's index once this process has answered."""
    if ledger not in _later:
        _later.append(ledger)


def finish_later() -> None:
    """Fork a detached child that builds the indexes ``build_later`` named; the caller goes on at once.

    A session hook in a fresh clone answers from memory and exits: the agent
    does not wait for the build (0.1 s at 1k records, 1 s at 10k), and the
    next command finds the index, or waits on its lock until the child is
    done: the lock is taken here, before the fork, so no reader can slip in
    between. The child leaves the agent's pipes (its standard streams are the
    null device, in a session of its own) and says nothing; what it could
    not build, the next reader builds (and reports).
    """
    held = []
    for ledger in _later:
        target = db_path(ledger)
        try:
            fd = db.try_lock(target)
        except OSError:
            continue
        if fd is not None:  # else another process is building it
            held.append((ledger, target, fd))
    _later.clear()
    if not held:
        return
    try:
        pid = os.fork()
    except OSError:
        pid = 1
    if pid:
        for _, _, fd in held:
            os.close(fd)  # the child holds the locks now (or, when the fork failed, nobody)
        return
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        for ledger, target, _ in held:
            with contextlib.suppress(Exception):
                stat, data = _locked_read(ledger)
                _update_persistent(ledger, target, data, stat).close()
    finally:
        os._exit(0)
