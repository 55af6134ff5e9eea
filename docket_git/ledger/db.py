"""Disposable SQLite projections of a file: one way to place, prove current, rebuild, extend and query them.

Both docket's ledger index (``ledger.index``) and the typed ledgers'
projections (``typed.replay``) live here: one placement in the user cache
dir, one stat-based proof, one lock, one read-only query path.

Self-contained (stdlib ``sqlite3``, ``dirs`` and ``digest``) so that any
append-only file docket keeps can be projected the same way: a caller gives
the source file, a fingerprint of everything else the projection depends on
(code version, declaration) and a ``build`` that fills an empty database from the
file's bytes.

Proof of currency is the ``_source`` row (``stamp``): the file's size, mtime,
ctime and inode as of the last build or write, the SHA-256 of its content when
known, and the fingerprint; the typed ledgers' projections read it
(``typed.api._ensure``: a matching stat proves it current in O(1), a grown
file whose old prefix still hashes the same is extended). A rebuild goes
into a temporary file swapped in atomically, so a reader never sees a
half-built database. Queries open the file read-only.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from docket_git.digest import sha256

Build = Callable[[sqlite3.Connection, bytes], None]

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


def read_only_uri(db_path: Path) -> str:
    """The ``file:`` URI that opens db_path read-only; ``%``, ``?`` and ``#`` in the path are escaped, so a
    cache directory named ``x?mode=rwc`` cannot turn the parameters into its own."""
    path = str(db_path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    return f"file:{path}?mode=ro"


def stamp(conn: sqlite3.Connection, source: Path, fingerprint: str, digest: str | None) -> None:
    """Record source's current stat (and content digest, when known) as what the projection reflects."""
    conn.execute(_SOURCE_DDL)
    size, mtime, ctime, ino = file_stat(source)
    conn.execute(
        "INSERT OR REPLACE INTO _source VALUES (1, ?, ?, ?, ?, ?, ?, ?)",
        (str(source), size, mtime, ctime, ino, digest, fingerprint),
    )


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


@contextlib.contextmanager
def replacing(tmp: Path, target: Path) -> Iterator[sqlite3.Connection]:
    """A connection to a new database at tmp, put in place at target once the block ends without error.

    Written without syncs, it is fsynced before the rename, so a power loss leaves the old database or the
    whole new one, never a torn one proving itself current; target's side files (an old WAL) go first. On
    any error tmp is discarded and target is left as it was.
    """
    conn = sqlite3.connect(tmp, isolation_level=None)
    try:
        yield conn
    except BaseException:
        conn.close()
        discard(tmp)
        raise
    conn.close()
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    discard(target)
    os.replace(tmp, target)


def open_wal(db_path: Path, timeout: float = 10) -> sqlite3.Connection:
    """A read-write connection in WAL mode (readers never wait for a writer); raises OSError/sqlite3.Error."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db_path, isolation_level=None, timeout=timeout)
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
    conn = sqlite3.connect(read_only_uri(db_path), uri=True)
    conn.execute("PRAGMA query_only = ON")
    return conn


# -- a statement someone else wrote: no file touched, bounded in time and size -----------------------

#: Authorizer actions a statement may take: read (SELECT, a column, a function, a recursive CTE), and
#: the two the schema's own reads ask for (a PRAGMA from ``_PRAGMAS``; an UPDATE of sqlite_master, which
#: SQLite checks while it sets up a table-valued function such as pragma_table_info, and which it never
#: lets a statement do: writable_schema is not among the PRAGMAs). Everything else is refused: ATTACH and
#: DETACH (VACUUM, VACUUM INTO too: both attach their output), every write, DDL (temporary objects too),
#: transactions, ANALYZE, REINDEX and virtual tables.
_READ, _SELECT, _FUNCTION, _RECURSIVE, _PRAGMA, _UPDATE, _ATTACH, _DETACH = 20, 21, 31, 33, 19, 23, 24, 25
#: PRAGMAs that only read; the first group also takes an argument (a table, an index: what to read).
_PRAGMAS_WITH_ARGUMENT = frozenset(
    ("table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo", "foreign_key_list",
     "foreign_key_check", "integrity_check", "quick_check")
)  # fmt: skip
_PRAGMAS = _PRAGMAS_WITH_ARGUMENT | frozenset(
    ("database_list", "collation_list", "function_list", "module_list", "pragma_list", "compile_options",
     "user_version", "schema_version", "application_id", "data_version", "page_count", "page_size",
     "freelist_count", "encoding")
)  # fmt: skip
_REFUSED_FUNCTIONS = frozenset(("load_extension", "fts3_tokenizer"))
_ACTIONS = {
    1: "CREATE INDEX", 2: "CREATE TABLE", 3: "CREATE TEMP INDEX", 4: "CREATE TEMP TABLE", 5: "CREATE TEMP TRIGGER",
    6: "CREATE TEMP VIEW", 7: "CREATE TRIGGER", 8: "CREATE VIEW", 9: "DELETE", 10: "DROP INDEX", 11: "DROP TABLE",
    12: "DROP TEMP INDEX", 13: "DROP TEMP TABLE", 14: "DROP TEMP TRIGGER", 15: "DROP TEMP VIEW", 16: "DROP TRIGGER",
    17: "DROP VIEW", 18: "INSERT", 22: "a transaction", 23: "UPDATE", 24: "ATTACH (or VACUUM)", 25: "DETACH",
    26: "ALTER TABLE", 27: "REINDEX", 28: "ANALYZE", 29: "CREATE VIRTUAL TABLE", 30: "DROP VIRTUAL TABLE",
    32: "SAVEPOINT",
}  # fmt: skip
_SIZED = (str, bytes)


class Limits:
    """How long a statement may run and how much it may return; the options that raise each."""

    __slots__ = ("max_bytes", "max_rows", "timeout")

    #: The defaults: a statement over a 100k-record index takes well under a second.
    TIMEOUT, MAX_ROWS, MAX_BYTES = 5.0, 1_000_000, 256 * 1024 * 1024

    def __init__(self, timeout: float = TIMEOUT, max_rows: int = MAX_ROWS, max_bytes: int = MAX_BYTES) -> None:
        self.timeout, self.max_rows, self.max_bytes = timeout, max_rows, max_bytes


class Refused(Exception):
    """A statement refused or stopped; the message says why and, for a limit, the option that raises it."""


def run_sandboxed(conn: sqlite3.Connection, sql: str, limits: Limits) -> tuple[list[str], list[tuple]]:
    """Run one statement a user wrote on conn, which it may only read; (column names, rows).

    No statement can create, attach or write a file, whatever conn is
    (a ``mode=ro`` file, an in-memory index): an authorizer allows reads only,
    ``SQLITE_LIMIT_ATTACHED`` is 0, and the connection is ``query_only``. A
    progress handler stops it at ``limits.timeout`` seconds (reading the rows
    included), ``SQLITE_LIMIT_LENGTH`` bounds one value, and the rows are
    counted as they are read. Raises ``Refused`` for those, ``sqlite3.Error``
    for bad SQL, ``ValueError`` for a statement SQLite cannot take (a NUL).
    """
    import time

    refused: list[str] = []

    def authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None) -> int:
        if action in (_READ, _SELECT, _RECURSIVE):
            return sqlite3.SQLITE_OK
        if action == _FUNCTION and arg2 not in _REFUSED_FUNCTIONS:
            return sqlite3.SQLITE_OK
        if action == _PRAGMA and arg1 in _PRAGMAS and (arg2 is None or arg1 in _PRAGMAS_WITH_ARGUMENT):
            return sqlite3.SQLITE_OK
        if action == _UPDATE and arg1 in ("sqlite_master", "sqlite_temp_master"):
            return sqlite3.SQLITE_OK
        if arg1 in ("sqlite_master", "sqlite_temp_master"):
            pass  # the schema's own row of a CREATE or DROP: the statement's own action names it
        elif action == _FUNCTION:
            refused.append(f"{arg2}()")
        elif action == _PRAGMA:
            refused.append(f"PRAGMA {arg1}" + ("" if arg2 is None else " with a value"))
        else:
            refused.append(_ACTIONS.get(action, f"action {action}"))
        return sqlite3.SQLITE_DENY

    deadline = time.monotonic() + limits.timeout

    def progress() -> bool:
        return time.monotonic() > deadline

    old_attached = conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    old_length = conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, limits.max_bytes)
    conn.execute("PRAGMA query_only = ON")
    conn.set_authorizer(authorize)
    conn.set_progress_handler(progress, 4000)
    try:
        cursor = conn.execute(sql)
        columns = [d[0] for d in cursor.description or ()]
        rows: list[tuple] = []
        size, max_rows, max_bytes = 0, limits.max_rows, limits.max_bytes
        while chunk := cursor.fetchmany(1024):
            rows += chunk
            size += sum([len(v) if v.__class__ in _SIZED else 8 for row in chunk for v in row])
            if len(rows) > max_rows:
                raise Refused(f"the result passed {max_rows:,} rows; narrow the query (LIMIT), or raise --max-rows")
            if size > max_bytes:
                raise Refused(f"the result passed {max_bytes:,} bytes; narrow the query (LIMIT), or raise --max-bytes")
        return columns, rows
    except sqlite3.Error as exc:
        if refused or str(exc) == "not authorized":
            raise Refused(
                f"{refused[0] if refused else 'the statement'} is refused: a query may only read the database it was given "
                "(SELECT, WITH, read-only PRAGMAs); it can attach, create or write no file"
            ) from None
        reason = str(exc)
        if reason == "interrupted" and time.monotonic() > deadline:
            raise Refused(
                f"the query ran past its time limit of {limits.timeout:g} s; narrow it, or raise --timeout SECONDS"
            ) from None
        if "too big" in reason:
            raise Refused(
                f"a value passed the {limits.max_bytes:,}-byte limit ({reason}); narrow the query, or raise --max-bytes"
            ) from None
        raise
    finally:
        conn.set_progress_handler(None, 0)
        conn.set_authorizer(None)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, old_length)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, old_attached)


def query(db_path: Path, sql: str, params: tuple = ()) -> tuple[list[str], list[tuple]]:
    """Run one read-only statement; (column names, rows). Raises ``sqlite3.Error``."""
    conn = reader(db_path)
    try:
        cursor = conn.execute(sql, params)
        return [d[0] for d in cursor.description or ()], cursor.fetchall()
    finally:
        conn.close()


def _open_versioned(
    db_path: Path, version: int, schema: Sequence[str], busy_ms: int
) -> tuple[sqlite3.Connection | None, bool]:
    """(a connection at this version, or None; True when the database is corrupt or of another version)."""
    conn: sqlite3.Connection | None = None
    try:
        conn = open_wal(db_path, busy_ms / 1000)  # a held lock costs a cache, not ten seconds
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
    except (sqlite3.DatabaseError, OSError) as exc:
        if conn is not None:
            conn.close()
        # Unwritable, locked, out of space (OperationalError, OSError): go without; not a database, malformed: bad.
        return None, isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError)


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
