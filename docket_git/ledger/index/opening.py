"""Opening an index: proven current, else updated or rebuilt under its lock; builds deferred past a hook's answer."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from docket_git.errors import LedgerError, notice
from docket_git.ledger import db, store
from docket_git.ledger.index.handle import Index
from docket_git.ledger.index.proof import _proven
from docket_git.ledger.index.schema import SCHEMA, SCHEMA_VERSION, db_path


def open_index(ledger: Path) -> Index:
    """The ledger's index, proven current (updated or rebuilt first when it is not).

    Raises ``LedgerError`` for a ledger that does not validate, as every reader does.
    """
    target = db_path(ledger)
    conn = _open_persistent(target)
    if conn is not None:
        try:
            # One read transaction for the whole command: the proof and every later lookup see
            # one state of the index, whatever another process commits meanwhile (WAL).
            conn.execute("BEGIN")
            if _proven(conn, ledger):
                return Index(conn, ledger, target)
        except sqlite3.Error:
            pass
        conn.close()
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


def _for_bytes(ledger: Path, target: Path, data: bytes, stat: tuple, trusted: tuple | None = None) -> Index:
    """The index brought to ``data`` (the ledger's bytes as of ``stat``), persistent when the cache dir allows."""
    try:
        with db.lock(target):
            ix = _update_persistent(ledger, target, data, stat, trusted)
            ix.data = data
            ix.conn.execute("BEGIN")  # later lookups see this state, as a proven index's do
            return ix
    except (OSError, sqlite3.Error) as exc:
        notice(f"cannot write the ledger index at {target.parent} ({_why(exc)}); using an in-memory index")
    from docket_git.ledger.index.incremental import update  # loaded only when the index must change

    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.executescript(SCHEMA)
    how = update(conn, ledger, data, stat)
    return Index(conn, ledger, None, how, data)


def _why(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


def _open_persistent(target: Path) -> sqlite3.Connection | None:
    """A connection to an existing index file, or None (missing, unreadable, not a database)."""
    if not target.exists():
        return None
    try:
        conn = sqlite3.connect(db.read_only_uri(target), uri=True, isolation_level=None)
    except sqlite3.Error:
        return None
    return conn


def _update_persistent(ledger: Path, target: Path, data: bytes, stat: tuple, trusted: tuple | None) -> Index:
    """Under the index's lock: make the file current.

    An index that shares a prefix with ``data`` is updated in place (one
    WAL transaction: readers keep the state they began with). One that is
    missing, corrupt, of another version or shares nothing is built afresh
    in a temporary file and renamed into place (``_build_file``).
    """
    # Loaded only when the index must change: a proven index (a warm session start) never imports them.
    from docket_git.ledger.index.build import _build_file
    from docket_git.ledger.index.incremental import _afresh, _prefix, update

    conn: sqlite3.Connection | None = None
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
            if trusted is None and _proven(conn, ledger, data):
                return Index(conn, ledger, target, "current")
            prefix = _prefix(conn, ledger, data, trusted)
            if not _afresh(prefix, data):  # update in place
                return Index(conn, ledger, target, update(conn, ledger, data, stat, trusted, prefix=prefix))
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


@contextlib.contextmanager
def opened(ledger: Path) -> Iterator[Index]:
    """``open_index`` as a context manager that closes the connection."""
    index = open_index(ledger)
    try:
        yield index
    finally:
        index.close()


def held(ledger: Path, data: bytes) -> Index:
    """The index brought to ``data``: the ledger's bytes, read by a caller that holds the ledger's lock.

    (``open_index`` would take the ledger's lock itself, which a holder of it must not.)
    """
    return _current_for(ledger, db_path(ledger), data, db.file_stat(ledger))


def _current_for(ledger: Path, target: Path, data: bytes, stat: tuple) -> Index:
    """The index proven to hold ``data`` (the ledger's bytes, read under its lock), or brought to them."""
    conn = _open_persistent(target)
    if conn is not None:
        try:
            if _proven(conn, ledger, data):
                return Index(conn, ledger, target, data=data)
        except sqlite3.Error:
            pass
        conn.close()
    return _for_bytes(ledger, target, data, stat)


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
                _update_persistent(ledger, target, data, stat, None).close()
    finally:
        os._exit(0)
