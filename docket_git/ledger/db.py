"""Disposable SQLite projections of a file: one way to place, prove current, rebuild, extend and query them.

Both docket's ledger index (``ledger.index``) and the typed ledgers'
projections (``typed.replay``) live here: one placement in the user cache
dir, one stat-based proof, one lock, one read-only query path.

Self-contained (stdlib ``sqlite3``, ``dirs``, ``digest`` and ``repo.files`` for the safe read) so that any
append-only file docket keeps can be projected the same way: a caller gives
the source file, a fingerprint of everything else the projection depends on
(code version, declaration), a ``build`` that fills an empty database from the
file's bytes and, optionally, an ``extend`` that applies the bytes appended past an old size.

Proof of currency is the ``_source`` row: the file's size, mtime, ctime and
inode as of the last build or write, the SHA-256 of its content when known,
and the fingerprint. A matching stat proves the database current in O(1);
a grown file whose old prefix still hashes the same is extended; anything
else is rebuilt into a temporary file and swapped in atomically, so a reader
never sees a half-built database. Queries open the file read-only.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from docket_git.digest import sha256
from docket_git.repo import files

Build = Callable[[sqlite3.Connection, bytes], None]
Extend = Callable[[sqlite3.Connection, bytes, int], bool]

_SOURCE_DDL = (
    "CREATE TABLE IF NOT EXISTS _source (id INTEGER PRIMARY KEY CHECK (id = 1), path TEXT NOT NULL, "
    "size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, ctime_ns INTEGER NOT NULL, ino INTEGER NOT NULL, "
    "digest TEXT, fingerprint TEXT NOT NULL)"
)


def cache_path(kind: str, source: Path) -> Path:
    """Where the projection of source lives: the user cache dir, keyed by kind and the file's real path."""
    from docket_git.dirs import cache_dir

    key = sha256(str(source.resolve()).encode())[:32]
    return Path(cache_dir()) / kind / f"{key}.sqlite"


def file_stat(source: Path) -> tuple[int, int, int, int]:
    """(size, mtime_ns, ctime_ns, inode) of source, zeros when it is missing.

    ctime cannot be set back by ``os.utime``: a rewrite to the same length and
    mtime still changes it, so an equal stat proves the bytes unchanged.
    """
    try:
        st = os.stat(source)
    except FileNotFoundError:
        return (0, 0, 0, 0)
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


_stat = file_stat


@contextlib.contextmanager
def lock(db_path: Path) -> Iterator[None]:
    """Hold the projection's exclusive lock (held across prove-current, rebuild and writes)."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with open(db_path.with_name(db_path.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def try_lock(db_path: Path) -> int | None:
    """The projection's lock taken without waiting: its descriptor (close it to release), or None when held.

    Raises ``OSError`` when the lock file cannot be made (a cache dir that cannot be written).
    """
    db_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(db_path.with_name(db_path.name + ".lock"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _source_row(db_path: Path) -> tuple | None:
    if not db_path.exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        try:
            return conn.execute("SELECT size, mtime_ns, ctime_ns, ino, digest, fingerprint FROM _source").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None


def is_current(db_path: Path, source: Path, fingerprint: str) -> bool:
    """True when the projection at db_path provably reflects source's current bytes (O(1): a stat)."""
    row = _source_row(db_path)
    return row is not None and row[5] == fingerprint and tuple(row[:4]) == _stat(source)


def stamp(conn: sqlite3.Connection, source: Path, fingerprint: str, digest: str | None) -> None:
    """Record source's current stat (and content digest, when known) as what the projection reflects."""
    conn.execute(_SOURCE_DDL)
    size, mtime, ctime, ino = _stat(source)
    conn.execute(
        "INSERT OR REPLACE INTO _source VALUES (1, ?, ?, ?, ?, ?, ?, ?)",
        (str(source), size, mtime, ctime, ino, digest, fingerprint),
    )


def ensure(source: Path, db_path: Path, fingerprint: str, build: Build, extend: Extend | None = None) -> str:
    """Make db_path current for source (call under ``lock``); returns "current", "extended" or "rebuilt"."""
    row = _source_row(db_path)
    if row is not None and row[5] == fingerprint and tuple(row[:4]) == _stat(source):
        return "current"
    try:
        data = files.read_bytes(source, None, files.LEDGER_CAP)  # never through a link, never unbounded
    except FileNotFoundError:
        data = b""
    digest = sha256(data)
    if row is not None and row[5] == fingerprint and row[4] is not None and extend is not None:
        old = row[0]
        if len(data) >= old and sha256(memoryview(data)[:old]) == row[4]:
            conn = writer(db_path)
            try:
                if extend(conn, data, old):
                    stamp(conn, source, fingerprint, digest)
                    conn.execute("COMMIT")
                    return "extended"
                conn.execute("ROLLBACK")
            finally:
                conn.close()
    rebuild(source, db_path, fingerprint, build, data, digest)
    return "rebuilt"


def rebuild(source: Path, db_path: Path, fingerprint: str, build: Build, data: bytes, digest: str | None) -> None:
    """Build a fresh projection of data in a temporary file and swap it in atomically."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = db_path.with_name(f".{db_path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    conn = sqlite3.connect(tmp, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("BEGIN")
        build(conn, data)
        stamp(conn, source, fingerprint, digest)
        conn.execute("COMMIT")
    except BaseException:
        conn.close()
        tmp.unlink(missing_ok=True)
        raise
    conn.close()
    os.replace(tmp, db_path)
    for suffix in ("-journal", "-wal", "-shm"):
        Path(str(db_path) + suffix).unlink(missing_ok=True)


def discard(db_path: Path) -> None:
    """Delete a database and its side files (a corrupt or foreign one is rebuilt from scratch)."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        with contextlib.suppress(OSError):
            Path(str(db_path) + suffix).unlink()


def open_wal(db_path: Path) -> sqlite3.Connection:
    """A read-write connection in WAL mode (readers never wait for a writer); raises OSError/sqlite3.Error."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db_path, isolation_level=None, timeout=10)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    except BaseException:
        conn.close()
        raise
    return conn


def writer(db_path: Path) -> sqlite3.Connection:
    """A read-write connection with an open write transaction (``COMMIT`` or ``ROLLBACK`` it)."""
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    return conn


def reader(db_path: Path) -> sqlite3.Connection:
    """A read-only connection: the file is opened with mode=ro and the connection is query_only."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    conn.execute("PRAGMA query_only = ON")
    return conn


def run(conn: sqlite3.Connection, sql: str, params: tuple = ()) -> tuple[list[str], list[tuple]]:
    """Run one statement on conn; (column names, rows). Raises ``sqlite3.Error``."""
    cursor = conn.execute(sql, params)
    columns = [d[0] for d in cursor.description or ()]
    return columns, cursor.fetchall()


def query(db_path: Path, sql: str, params: tuple = ()) -> tuple[list[str], list[tuple]]:
    """Run one read-only statement; (column names, rows). Raises ``sqlite3.Error``."""
    conn = reader(db_path)
    try:
        return run(conn, sql, params)
    finally:
        conn.close()


def _open_versioned(
    db_path: Path, version: int, schema: Sequence[str], busy_ms: int
) -> tuple[sqlite3.Connection | None, bool]:
    """(a connection at this version, or None; True when the database is corrupt or of another version)."""
    conn: sqlite3.Connection | None = None
    try:
        # open_wal's, with a busy timeout of busy_ms: a held lock costs a cache, not ten seconds
        db_path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(db_path, isolation_level=None, timeout=busy_ms / 1000)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        found = conn.execute("PRAGMA user_version").fetchone()[0]
        if found == 0:
            conn.execute("BEGIN IMMEDIATE")  # of two creators, the second sees the first's version
            found = conn.execute("PRAGMA user_version").fetchone()[0]
            empty = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
            if found == 0 and empty:
                for statement in schema:
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {int(version)}")
                found = version
            conn.execute("COMMIT")
        if found == version:
            return conn, False
        conn.close()
        return None, True
    except sqlite3.OperationalError:  # unwritable, locked, out of space: go without
        if conn is not None:
            conn.close()
        return None, False
    except sqlite3.DatabaseError:  # not a database, malformed
        if conn is not None:
            conn.close()
        return None, True
    except OSError:
        if conn is not None:
            conn.close()
        return None, False


def open_cache(db_path: Path, version: int, schema: Sequence[str], busy_ms: int = 2000) -> sqlite3.Connection | None:
    """A WAL connection to a persistent cache database at schema ``version``, or None when none can be had.

    For facts that never change (keyed by content or commit IDs) and that
    many commands add to, unlike the rebuilt projections above. A missing
    database is created with ``schema`` (its statements and ``PRAGMA
    user_version = version`` in one transaction); a corrupt one, or one of
    another version, is discarded under ``lock`` and created again. An
    unwritable directory, or a database locked for longer than ``busy_ms``,
    gives None: a cache is an optimisation, so the caller goes without.
    """
    conn, bad = _open_versioned(db_path, version, schema, busy_ms)
    if not bad:
        return conn
    try:
        with lock(db_path):
            conn, bad = _open_versioned(db_path, version, schema, busy_ms)  # another process may have redone it
            if not bad:
                return conn
            discard(db_path)
            conn, _ = _open_versioned(db_path, version, schema, busy_ms)
            return conn
    except OSError:
        return None
