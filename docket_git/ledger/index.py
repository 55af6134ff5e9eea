"""The ledger index: one disposable SQLite database per ledger that every reader shares.

The JSONL file in git stays the only source of truth. The index lives in the
user cache directory (placed, locked and opened through ``ledger.db``, the
layer typed ledgers' projections share) and records what it was built from:
the file's size, mtime, ctime and inode, the length of the bytes it holds, a
digest of their last block, and digest checkpoints along the file.

``open_index`` proves it current before anyone reads it:

* an equal stat and an equal digest of the last block prove it in O(1)
  (ctime changes on every write, and ``os.utime`` cannot set it back);
* otherwise, under the ledger's shared lock, the checkpoints are compared
  block by block and only the lines past the last shared checkpoint are
  validated (``store.parse``, against the records the index holds) and
  indexed again: an append by another tool, a branch switch, a rebase's
  rewritten tail;
* a missing, corrupt, locked-out or foreign-version database, or one that
  would have to validate more than ``UPDATE_LIMIT`` new bytes, is built
  afresh silently: in a temporary file without a journal, one validated
  slice at a time (``store.validated``: a line as docket writes it proven
  by one regular expression, other clean lines by the C scanner and
  ``quick_accept``, any doubt left to the exact per-line path), then
  renamed into place; a cache directory that cannot be written degrades to an in-memory
  index with one notice.

So the index is also the ledger's validated prefix: ``append`` validates new
records against it (``known``), reading and writing only the file's tail when
the index proves it holds the whole file (``_append_tail``); ``parse``
validates other bytes that share a prefix with the ledger (a staged blob, a
rebase result) only past that prefix; and ``read`` hands full snapshots to
the commands that need every record. Locks are always taken in one order, the ledger's before the index's.

Derived state (retired, resolved, applicable, blocked_by, resolved_by) is
computed by ``ledger.project``, the same code every other reader uses:
an append that supersedes nothing settles only its own records; anything
else re-derives from the stored structural columns (no JSON decoding of the
old lines) and rewrites only the rows whose state changed.

The schema is documented in docs/sql.md (``docket sql --schema`` prints it).
"""

from __future__ import annotations

import bisect
import contextlib
import heapq
import itertools
import json
import operator
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from docket_git.digest import constructor as sha256_for
from docket_git.errors import LedgerError, notice, withdraw
from docket_git.ledger import canonical, db, jsonl, model, project, recording, store
from docket_git.ledger.validate import Index as Known
from docket_git.repo import files

#: Bump when the tables or what fills them change: an index of another version is rebuilt.
SCHEMA_VERSION = 7
#: Checkpoints fall on the first line end at or after every BLOCK bytes.
BLOCK = 1 << 16
#: The proof of currency hashes this many bytes at the end of the indexed ledger.
TAIL = 4096

SCHEMA = """\
CREATE TABLE meta (
  key TEXT PRIMARY KEY,                 -- schema_version, ledger, size, mtime_ns, ctime_ns, inode, length,
                                        -- lines (newlines within length), tail_digest, indexed_from (records
                                        -- kept by the last update), revision and records_end (SHA-256 of the
                                        -- bytes through the last record's line, once a reader asked)
  value
);
CREATE TABLE checkpoints (
  end_offset INTEGER PRIMARY KEY,       -- byte offset just past a line: the end of a block
  records INTEGER NOT NULL,             -- records wholly before end_offset
  lines INTEGER NOT NULL,               -- newlines before end_offset (blank lines included)
  digest TEXT NOT NULL                  -- SHA-256 of the block's bytes (from the previous checkpoint)
);
CREATE TABLE records (
  seq INTEGER PRIMARY KEY,              -- position in the file, from 0
  id TEXT NOT NULL UNIQUE,              -- c12, d3, q7
  kind TEXT NOT NULL,                   -- claim, decision, question
  recorded_state TEXT NOT NULL,         -- the state field as written
  state TEXT NOT NULL,                  -- effective state (a question some current record answers: resolved)
  retired_by TEXT NOT NULL,             -- the record superseding it, '' when current
  applicable INTEGER,                   -- decisions: 1 when blocked_by is empty; NULL for claims and questions
  pinned INTEGER NOT NULL,              -- 1 when pinned
  text TEXT NOT NULL,
  choice TEXT NOT NULL,                 -- decisions' choice, '' otherwise
  rationale TEXT NOT NULL,
  author TEXT NOT NULL,
  ts TEXT NOT NULL,                     -- ISO 8601, as recorded
  session TEXT NOT NULL,
  branch TEXT NOT NULL,
  line_offset INTEGER NOT NULL,         -- where the record's line starts in the ledger
  line_length INTEGER NOT NULL,         -- its length in bytes, newline excluded
  line_digest TEXT NOT NULL,            -- SHA-256 of the line's bytes
  supersedes TEXT NOT NULL,             -- JSON arrays of IDs, as recorded
  depends_on TEXT NOT NULL,
  answers TEXT NOT NULL,
  degree INTEGER NOT NULL               -- references to it: supports, depends_on, answers (from any record)
                                        -- and resolved_by; what the briefing's degree score counts
);
CREATE TABLE haystacks (                -- apart from records: a query scans only these bytes
  seq INTEGER PRIMARY KEY,              -- the record's seq
  haystack TEXT                         -- what --query matches, casefolded: id, text, rationale, choice,
                                        -- alternatives, scope joined by spaces; NULL when it holds a NUL
);
CREATE TABLE prerequisites (            -- each depends_on relation by position: coverage walks integers
  source INTEGER NOT NULL,              -- the seq of the decision that depends
  target INTEGER NOT NULL               -- the seq of its prerequisite (always earlier)
);
CREATE TABLE relations (
  source TEXT NOT NULL,                 -- the citing record
  type TEXT NOT NULL,                   -- supports, depends_on, answers, supersedes
  target TEXT NOT NULL,                 -- the cited record
  set_no INTEGER                        -- supports: which OR alternative (AND within one set); NULL otherwise
);
CREATE TABLE scopes (
  record TEXT NOT NULL,
  scope TEXT NOT NULL,                  -- as recorded
  kind TEXT NOT NULL                    -- exact (a path), directory (ends with /), glob, component (a name)
);
CREATE TABLE blocked_by (
  decision TEXT NOT NULL,               -- a decision that is not applicable
  blocker TEXT NOT NULL,                -- why: itself (not adopted / retired) or a failing prerequisite
  position INTEGER NOT NULL
);
CREATE TABLE resolved_by (
  question TEXT NOT NULL,
  resolver TEXT NOT NULL,               -- a current accepted claim or applicable decision answering it
  position INTEGER NOT NULL
);
CREATE INDEX records_kind ON records (kind, state);
CREATE INDEX records_rank ON records (retired_by, pinned, degree, seq, id);
CREATE INDEX records_facts ON records (id, retired_by, degree, pinned);
CREATE INDEX relations_source ON relations (source);
CREATE INDEX relations_target ON relations (target);
CREATE INDEX relations_depends ON relations (source, target) WHERE type = 'depends_on';
CREATE INDEX scopes_record ON scopes (record);
CREATE INDEX scopes_scope ON scopes (scope, record);
CREATE INDEX blocked_by_decision ON blocked_by (decision);
CREATE INDEX resolved_by_question ON resolved_by (question);
CREATE INDEX resolved_by_resolver ON resolved_by (resolver, question);
CREATE INDEX haystacks_nul ON haystacks (seq) WHERE haystack IS NULL;
CREATE INDEX prerequisites_source ON prerequisites (source, target);
"""

#: The tables alone: a build creates the secondary indexes once its rows are in (several times faster).
TABLES = SCHEMA[: SCHEMA.index("CREATE INDEX")]
#: Every table's name, in the schema's order.
TABLE_NAMES = tuple(line.split()[2] for line in TABLES.splitlines() if line.startswith("CREATE TABLE "))
INDEXES = [line for line in SCHEMA.splitlines() if line.startswith("CREATE INDEX")]
_RECORD_COLUMNS = 22
_INSERT_RECORD = f"INSERT INTO records VALUES ({', '.join('?' * _RECORD_COLUMNS)})"
_INSERT_HAYSTACK = "INSERT INTO haystacks VALUES (?, ?)"
#: The prerequisites rows of the records from position ? on, once their depends_on relations are in:
#: a build's every relation in one pass (no secondary index yet), an update's new records one by one.
_INSERT_PREREQUISITES = (
    "INSERT INTO prerequisites SELECT s.seq, t.seq FROM relations r CROSS JOIN records s ON s.id = r.source"
    " CROSS JOIN records t ON t.id = r.target WHERE r.type = 'depends_on'"
)
_INSERT_NEW_PREREQUISITES = (
    "INSERT INTO prerequisites SELECT s.seq, t.seq FROM records s CROSS JOIN relations r INDEXED BY relations_source"
    " ON r.source = s.id CROSS JOIN records t ON t.id = r.target WHERE s.seq >= ? AND r.type = 'depends_on'"
)
_GLOB = frozenset("*?[]")


def db_path(ledger: Path) -> Path:
    """Where the index of this ledger lives: the user cache dir, keyed by the ledger's real path."""
    return db.cache_path("index", ledger)


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


def scope_kind(scope: str) -> str:
    """exact (a path), directory (``dir/``), glob, or component (a name with no ``/`` nor glob character)."""
    if _GLOB & set(scope):
        return "glob"
    if scope.endswith("/"):
        return "directory"
    return "exact" if "/" in scope or "\\" in scope else "component"


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

    def known(self) -> Known:
        """The validation index of every indexed record: what a new record is checked against."""
        return known(self.conn, self.count())


# -- the validation index, backed by SQL ------------------------------------------------------------


class _Ids(dict):
    """ID -> line of the records validated in this process, and the first ``limit`` indexed records."""

    def __init__(self, conn: sqlite3.Connection, limit: int) -> None:
        super().__init__()
        self.conn, self.limit = conn, limit

    def __contains__(self, rid: object) -> bool:
        if dict.__contains__(self, rid):
            return True
        if not self.limit or not isinstance(rid, str):
            return False
        row = self.conn.execute("SELECT 1 FROM records WHERE id = ? AND seq < ?", (rid, self.limit)).fetchone()
        return row is not None

    def copy(self) -> _Ids:  # type: ignore[override]
        out = _Ids(self.conn, self.limit)
        out.update(self)
        return out


class _Retired(set):
    """IDs superseded by a record validated in this process or by one of the first ``limit`` indexed records."""

    def __init__(self, conn: sqlite3.Connection, limit: int) -> None:
        super().__init__()
        self.conn, self.limit = conn, limit

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

    def copy(self) -> _Retired:  # type: ignore[override]
        out = _Retired(self.conn, self.limit)
        out.update(self)
        return out


def _count(conn: sqlite3.Connection) -> int:
    """How many records conn indexes: seq numbers them from 0 without gaps, so the last seq says (no scan)."""
    return conn.execute("SELECT coalesce(max(seq) + 1, 0) FROM records").fetchone()[0]


def known(conn: sqlite3.Connection, limit: int) -> Known:
    """The validation index of the first ``limit`` indexed records, looked up in SQL as rules ask."""
    row = conn.execute("SELECT id FROM records WHERE seq = ?", (limit - 1,)).fetchone() if limit else None
    top = model.seq(row[0]) if row else 0
    return Known(max_seq=top, lines=_Ids(conn, limit), retired=_Retired(conn, limit), count=limit)


# -- proving current -----------------------------------------------------------------------------


def _meta(conn: sqlite3.Connection) -> dict:
    return dict(conn.execute("SELECT key, value FROM meta").fetchall())


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


def _proven(conn: sqlite3.Connection, ledger: Path, data: bytes | None = None) -> bool:
    """True when the index provably holds the ledger's current bytes, without reading them all.

    ``data``: the bytes the caller read under the ledger's lock; then they must be what the index holds.
    """
    meta = _meta(conn)
    if meta.get("schema_version") != SCHEMA_VERSION or meta.get("ledger") != str(ledger.resolve()):
        return False
    size, mtime, ctime, ino = db.file_stat(ledger)
    if (size, mtime, ctime, ino) != (meta.get("size"), meta.get("mtime_ns"), meta.get("ctime_ns"), meta.get("inode")):
        return False
    if size != meta.get("length"):
        return False  # an unfinished batch or a torn line lies beyond: read it the long way
    tail = _read_tail(ledger, size) if data is None else (data[max(0, size - TAIL) :] if len(data) == size else None)
    return tail is not None and canonical.sha256(tail) == meta.get("tail_digest")


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


def _build_file(ledger: Path, target: Path, data: bytes, stat: tuple) -> None:
    """Build the index of ``data`` in a temporary file beside target, then rename it into place.

    A disposable database needs no journal while it is built (``journal_mode=OFF``,
    ``synchronous=OFF``); it is switched to WAL before the rename, so readers
    never see it half built. On an invalid ledger the old file stays as it was.
    """
    for stale in target.parent.glob(f".{target.name}.*.tmp"):
        db.discard(stale)  # a build killed midway (builds run under the index lock: none is running now)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    conn = sqlite3.connect(tmp, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        conn.executescript(TABLES)
        conn.execute("BEGIN")
        with jsonl.gc_paused():
            _fill(conn, ledger, data, stat)
        conn.execute("COMMIT")
        conn.execute("PRAGMA journal_mode=WAL")
    except BaseException:
        conn.close()
        db.discard(tmp)
        raise
    conn.close()
    # Built without a journal or syncs: on disk before it is renamed into place, so a power
    # loss can leave the old index or the whole new one, never a torn one proving itself current.
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    db.discard(target)
    os.replace(tmp, target)


def _fresh(target: Path) -> sqlite3.Connection:
    """A new, empty index file in place of whatever was at target."""
    db.discard(target)
    conn = db.open_wal(target)
    conn.executescript(SCHEMA)
    return conn


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
    end and the last TAIL bytes (``_append_tail``). Offsets stored are the
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


def _fill(conn: sqlite3.Connection, ledger: Path, data: bytes, stat: tuple) -> None:
    """Index every line of ``data`` into empty tables without secondary indexes, validating as it goes.

    Lines are validated and inserted a slice at a time (``store.validated``;
    a line as docket writes it is never decoded to a dict: its rows are built
    from ``validate.canonical_fields``), so memory holds one slice of records
    plus a small structural entry per record, never every record and every
    row at once. A record's
    derived columns (state, retired_by, applicable, degree) depend on later
    records: a slice's rows wait until the next slice is validated (most
    citations are of recent records) and go in with the degree and
    retirement known by then; once every line is in, ``project.derive`` (the
    one projection) settles them all and only the rows that differ are
    updated. Then the checkpoints, the
    secondary indexes and the meta rows. Raises ``LedgerError`` at the first
    invalid line, with the exact path's message.
    """
    snap = store.Snapshot(path=ledger, data=data)
    build = _Build(conn, data)
    for records, ends in store.validated(snap, canonical=True):
        build.take(records, ends)
    build.flush()
    _fill_settled(build, snap, ledger, stat)


def _fill_settled(build: _Build, snap: store.Snapshot, ledger: Path, stat: tuple) -> None:
    """Settle every row (``project.derive``), then the checkpoints, the secondary indexes and the meta rows."""
    conn, data = build.conn, snap.data
    structure, degree, written = build.structure, build.degree, build.written
    derived = project.derive(structure)
    for resolvers in derived.resolved_by.values():
        for rid in resolvers:
            degree[rid] = degree.get(rid, 0) + 1
    settled = _settled(structure, derived, degree, written)
    conn.executemany("UPDATE records SET state = ?, retired_by = ?, applicable = ?, degree = ? WHERE seq = ?", settled)
    conn.executemany(
        "INSERT INTO blocked_by VALUES (?, ?, ?)",
        ((rid, b, n) for rid, why in derived.blocked.items() for n, b in enumerate(why)),
    )
    conn.executemany(
        "INSERT INTO resolved_by VALUES (?, ?, ?)",
        ((q, r, n) for q, who in derived.resolved_by.items() for n, r in enumerate(who)),
    )
    length = snap.valid_length
    conn.executemany(
        "INSERT INTO checkpoints VALUES (?, ?, ?, ?)", _checkpoints(data, 0, 0, 0, length, build.record_ends)
    )
    conn.execute(_INSERT_PREREQUISITES)
    for statement in INDEXES:
        conn.execute(statement)
    _write_meta(conn, ledger, stat, data, length, data.count(b"\n", 0, length))
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('indexed_from', 0)")


class _Build:
    """A cold build's running state: rows waiting a slice, structural entries, degrees and retirements so far."""

    __slots__ = (
        "conn",
        "data",
        "degree",
        "held",
        "record_ends",
        "retired",
        "seq",
        "sha256",
        "structure",
        "view",
        "written",
    )

    def __init__(self, conn: sqlite3.Connection, data: bytes) -> None:
        self.conn = conn
        self.data = data
        self.view = memoryview(data)
        self.sha256 = sha256_for(len(data))
        self.structure: list[dict] = []
        self.degree: dict[str, int] = {}
        self.record_ends: list[int] = []
        self.retired: dict[str, str] = {}  # retired ID -> the record retiring it, so far
        self.held: list[list] = []  # the previous slice's rows: citations from the next slice are counted first
        self.written: list[tuple[int, str]] = []  # (degree, retired_by) each row went in with
        self.seq = 0

    def take(self, records: list, ends: list[int]) -> None:
        """Index one validated slice: records (dicts or ``canonical_fields`` tuples) and the offset past each."""
        rows, hays, rels, scopes, entries = _rows(records, ends, self.data, self.seq, self.sha256, self.view)
        del records
        self._account(entries, ends)
        self.flush()
        self.held = rows
        conn = self.conn
        conn.executemany(_INSERT_RELATION, rels)
        conn.executemany(_INSERT_SCOPE, scopes)
        conn.executemany(_INSERT_HAYSTACK, hays)

    def _account(self, entries: list[tuple], ends: list[int]) -> None:
        """Note entries' structure, their citations' degrees and their supersessions."""
        degree, retired, structure = self.degree, self.retired, self.structure
        for rid, kind, state, supports, depends_on, answers, supersedes in entries:
            entry = {"id": rid, "kind": kind, "state": state}
            if supports:
                for group in supports:
                    for target in group:
                        degree[target] = degree.get(target, 0) + 1
            if depends_on:
                entry["depends_on"] = depends_on
                for target in depends_on:
                    degree[target] = degree.get(target, 0) + 1
            if answers:
                entry["answers"] = answers
                for target in answers:
                    degree[target] = degree.get(target, 0) + 1
            if supersedes:
                entry["supersedes"] = supersedes
                for target in supersedes:
                    retired[target] = rid
            structure.append(entry)
        self.record_ends.extend(ends)
        self.seq += len(entries)

    def flush(self) -> None:
        """Insert the held rows with the degree and retired_by known so far (``written`` notes them)."""
        _flush(self.conn, self.held, self.degree, self.retired, self.written)
        self.held = []


_INSERT_RELATION = "INSERT INTO relations VALUES (?2, ?3, ?4, ?5)"
_INSERT_SCOPE = "INSERT INTO scopes VALUES (?2, ?3, ?4)"


def _rows(
    records: list, ends: list[int], data: bytes, seq: int, sha256: object, view: memoryview
) -> tuple[list[list], list[tuple], list[tuple], list[tuple], list[tuple]]:
    """The rows of validated records (dicts or ``canonical_fields`` tuples) whose lines end at ``ends``, from seq on.

    (records rows, haystacks rows, relations rows and scopes rows (each led
    by its record's seq), and each record's structural entry: id, kind,
    state, supports, depends_on, answers, supersedes).
    """
    rows: list[list] = []
    hays: list[tuple] = []
    rels: list[tuple] = []
    scopes: list[tuple] = []
    entries: list[tuple] = []
    kinds = _SCOPE_KINDS
    for record, end in zip(records, ends, strict=True):
        stop = end - 1 if data[end - 1] == 10 else end
        start = data.rfind(b"\n", 0, stop) + 1
        digest = sha256(view[start:stop]).hexdigest()  # type: ignore[operator]
        if type(record) is tuple:  # a line as docket writes it: its fields, as canonical_fields captured them
            kind, fields, supports, depends_on, answers, supersedes = record
            rid, text, choice, alternatives, state, rationale, scope = _CANONICAL_PARTS(fields)
            applicable = (1 if state == "adopted" else 0) if kind == "decision" else None
            scope = scope[1:-1].split('","') if scope else ()
            rows.append(
                [
                    seq,
                    rid,
                    kind,
                    state,
                    state,
                    "",
                    applicable,
                    1 if fields[19] == "true" else 0,
                    text,
                    choice,
                    rationale,
                    *_CANONICAL_PROVENANCE(fields),
                    start,
                    stop - start,
                    digest,
                    "[" + fields[15].replace(",", ", ") + "]",  # _ids: IDs hold no comma
                    "[" + fields[13].replace(",", ", ") + "]",
                    "[" + fields[14].replace(",", ", ") + "]",
                    0,
                ]
            )
            # model.searchable, casefolded: the pattern admits no control character, so no NUL
            if alternatives:
                alternatives = alternatives[1:-1].split('","')
                hays.append((seq, " ".join((rid, text, rationale, choice, *alternatives, *scope)).casefold()))
            else:
                hays.append((seq, " ".join((rid, text, rationale, choice, *scope)).casefold()))
        else:
            rid, kind, state = record["id"], record["kind"], record["state"]
            get = record.get
            supports, depends_on, answers, supersedes = (
                get("supports"),
                get("depends_on"),
                get("answers"),
                get("supersedes"),
            )
            scope = get("scope")
            applicable = (1 if state == "adopted" else 0) if kind == "decision" else None
            rows.append(_record_row(seq, record, state, "", applicable, start, stop - start, digest))
            hays.append((seq, _haystack(record)))
        if supports:
            for n, group in enumerate(supports):
                for target in group:
                    rels.append((seq, rid, "supports", target, n))
        for name, targets in (("depends_on", depends_on), ("answers", answers), ("supersedes", supersedes)):
            if targets:
                for target in targets:
                    rels.append((seq, rid, name, target, None))
        if scope:
            for value in dict.fromkeys(scope):
                kind_of = kinds.get(value)
                if kind_of is None:
                    kind_of = kinds[value] = scope_kind(value)
                scopes.append((seq, rid, value, kind_of))
        entries.append((rid, kind, state, supports, depends_on, answers, supersedes))
        seq += 1
    return rows, hays, rels, scopes, entries


#: From ``validate.canonical_fields``' fields: id, text, choice, alternatives, state, rationale, scope; and
#: author, ts, session, branch (the ``records`` columns' order).
_CANONICAL_PARTS = operator.itemgetter(0, 1, 2, 3, 5, 11, 10)
_CANONICAL_PROVENANCE = operator.itemgetter(7, 6, 8, 9)

#: Scope -> its kind, as ``scope_kind`` says (a ledger repeats few distinct scopes many times).
_SCOPE_KINDS: dict[str, str] = {}


def _flush(
    conn: sqlite3.Connection,
    rows: list[list],
    degree: dict[str, int],
    retired: dict[str, str],
    written: list[tuple[int, str]],
) -> None:
    """Insert held rows with the degree and retired_by known so far (``written`` notes them, in seq order)."""
    for row in rows:
        rid = row[1]
        row[5] = retired.get(rid, "")
        row[21] = degree.get(rid, 0)
        written.append((row[21], row[5]))
    conn.executemany(_INSERT_RECORD, rows)


def _settled(
    structure: list[dict], derived: project.Derived, degree: dict[str, int], written: list[tuple[int, str]]
) -> Iterator[tuple]:
    """(state, retired_by, applicable, degree, seq) of each row whose settled columns differ from those ``_fill`` wrote."""
    retired_by, blocked, resolved_by = derived.retired_by, derived.blocked, derived.resolved_by
    for seq, entry in enumerate(structure):
        rid, kind, state = entry["id"], entry["kind"], entry["state"]
        settled = state
        applicable = None
        if kind == "decision":
            applicable = 0 if blocked[rid] else 1
        elif kind == "question" and resolved_by.get(rid):
            settled = "resolved"
        retired = retired_by.get(rid, "")
        count = degree.get(rid, 0)
        if (
            settled != state
            or (count, retired) != written[seq]
            or (kind == "decision" and applicable != (1 if state == "adopted" else 0))
        ):
            yield settled, retired, applicable, count, seq


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
        nl = data.find(b"\n", min(pos + BLOCK, length) - 1, length)
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
    if shared and (shared - (row[0] if row else 0) < BLOCK or data[shared - base - 1] != 0x0A):
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


def _derived_columns(view: dict) -> tuple[str, str, int | None]:
    applicable = view.get("applicable")
    return view["state"], view["retired_by"], None if applicable is None else int(applicable)


def _record_row(
    seq: int, record: dict, state: str, retired_by: str, applicable: int | None, offset: int, length: int, digest: str
) -> list:
    """A ``records`` row (a list: a build fills in retired_by and degree once they are known, ``_flush``)."""
    get = record.get
    return [
        seq,
        record["id"],
        record["kind"],
        record["state"],
        state,
        retired_by,
        applicable,
        1 if get("pinned") else 0,
        record["text"],
        get("choice") or "",
        get("rationale") or "",
        record["author"],
        record["ts"],
        record["session"],
        record["branch"],
        offset,
        length,
        digest,
        _ids(get("supersedes")),
        _ids(get("depends_on")),
        _ids(get("answers")),
        0,  # degree: counted once the record's citers are in (_settle_changed, _settle_appended, _flush)
    ]


def _haystack(record: dict) -> str | None:
    """The ``haystacks`` row's text: ``model.searchable`` casefolded (None when it holds a NUL: SQL text stops there)."""
    folded = model.searchable(record).casefold()
    return None if "\x00" in folded else folded


def _ids(values: list[str] | None) -> str:
    """A JSON array of validated IDs (letters and digits only: nothing to escape), as json.dumps writes it."""
    return '["' + '", "'.join(values) + '"]' if values else "[]"


def _owned_rows(record: dict) -> tuple[list[tuple], list[tuple]]:
    """A record's relations and scopes rows."""
    rid = record["id"]
    rels: list[tuple] = []
    for n, group in enumerate(record.get("supports") or ()):
        rels.extend((rid, "supports", target, n) for target in group)
    for kind in ("depends_on", "answers", "supersedes"):
        rels.extend((rid, kind, target, None) for target in record.get(kind) or ())
    scopes = [(rid, value, scope_kind(value)) for value in dict.fromkeys(record.get("scope") or ())]
    return rels, scopes


def _insert_new(
    conn: sqlite3.Connection,
    first: int,
    new: list[dict],
    views: Iterable[dict],
    lines: list[bytes],
    ends: list[int],
    data: bytes,
    base: int = 0,
) -> None:
    """Insert the rows of new records (``ends``: offsets in ``data``, which starts at file offset ``base``)."""
    rows, rels, scopes, hays = [], [], [], []
    for i, (record, view, line, end) in enumerate(zip(new, views, lines, ends, strict=True)):
        offset = base + end - len(line) - (1 if data[end - 1 : end] == b"\n" else 0)
        digest = canonical.sha256(line)
        rows.append(_record_row(first + i, record, *_derived_columns(view), offset, len(line), digest))
        hays.append((first + i, _haystack(record)))
        r, s = _owned_rows(record)
        rels.extend(r)
        scopes.extend(s)
    conn.executemany(_INSERT_RECORD, rows)
    conn.executemany(_INSERT_HAYSTACK, hays)
    conn.executemany("INSERT INTO relations VALUES (?, ?, ?, ?)", rels)
    conn.executemany("INSERT INTO scopes VALUES (?, ?, ?)", scopes)
    conn.execute(_INSERT_NEW_PREREQUISITES, (first,))


def _settle_changed(
    conn: sqlite3.Connection,
    first: int,
    removed: list[tuple[str, str, str]],
    new: list[dict],
    lines: list[bytes],
    ends: list[int],
    data: bytes,
    base: int = 0,
) -> None:
    """Index new records after a tail rewrite or a supersession, settling only what they change.

    Derived state flows forward (validation forbids forward references): a
    kept record's state can change only through what a removed or new record
    supersedes or answers, and then through the decisions that depend on it.
    So the kept records whose retirement changed are found from the
    supersessions, the decisions they block or unblock by following
    ``depends_on`` backwards in file order (stopping where nothing changed),
    the questions whose resolvers changed from those records' answers, and
    degrees from the citations that came and went. ``project.derive`` over
    every record gives the same rows; tests/test_index.py compares them.
    """
    step = conn.execute
    facts: dict[str, tuple[int, str, str, str, str]] = {}  # kept record -> (seq, kind, recorded, retired_by, state)

    def fact(rid: str) -> tuple[int, str, str, str, str] | None:
        found = facts.get(rid)
        if found is None:
            row = step(
                "SELECT seq, kind, recorded_state, retired_by, state FROM records WHERE id = ?", (rid,)
            ).fetchone()
            if row is None:
                return None
            found = facts[rid] = row
        return found

    new_ids = {r["id"]: first + i for i, r in enumerate(new)}
    new_by_id = {r["id"]: r for r in new}
    # Retirement: the last record in file order that supersedes a record retires it.
    retired: dict[str, str] = {}  # record -> retired_by, for every record whose value may have changed
    for target in {t for _, kind, t in removed if kind == "supersedes"} - new_ids.keys():
        row = step(
            "SELECT r.source FROM relations r JOIN records s ON s.id = r.source"
            " WHERE r.type = 'supersedes' AND r.target = ? ORDER BY s.seq DESC LIMIT 1",
            (target,),
        ).fetchone()
        retired[target] = row[0] if row else ""
    for record in new:
        for target in record.get("supersedes") or ():
            retired[target] = record["id"]

    def retired_by(rid: str) -> str:
        if rid in retired:
            return retired[rid]
        if rid in new_ids:
            return ""
        found = fact(rid)
        return found[3] if found else ""

    blocked: dict[str, list[str]] = {}  # decision -> blocked_by, for the decisions settled again

    def blocked_of(rid: str) -> list[str]:
        if rid in blocked:
            return blocked[rid]
        return [b for (b,) in step("SELECT blocker FROM blocked_by WHERE decision = ? ORDER BY position", (rid,))]

    def kind_state(rid: str) -> tuple[str, str] | None:
        record = new_by_id.get(rid)
        if record is not None:
            return record["kind"], record["state"]
        found = fact(rid)
        return (found[1], found[2]) if found else None

    def block(rid: str, state: str, depends_on: list[str]) -> list[str]:
        """``project.settle``'s blocked_by for a decision, from the state settled so far."""
        if state != "adopted" or retired_by(rid):
            return [rid]
        reasons: list[str] = []
        for prereq in depends_on:
            target = kind_state(prereq)
            if target is None:
                reasons.append(prereq)
            elif target[0] == "claim":
                if target[1] != "accepted" or retired_by(prereq):
                    reasons.append(prereq)
            elif target[0] == "decision":
                why = blocked_of(prereq)
                if why:
                    reasons.append(prereq)
                    reasons.extend(why)
            else:
                reasons.append(prereq)
        return list(dict.fromkeys(reasons))

    # Availability changed for these records: what they answer is resolved again, what depends on them settled again.
    moved: set[str] = set()
    for rid, value in retired.items():
        found = None if rid in new_ids else fact(rid)
        if found is not None and found[3] != value:
            moved.add(rid)
    queue: list[tuple[int, str]] = []
    queued: set[str] = set()

    def requeue_dependers(rid: str) -> None:
        for source, seq, kind in step(
            "SELECT r.source, s.seq, s.kind FROM relations r JOIN records s ON s.id = r.source"
            " WHERE r.target = ? AND r.type = 'depends_on'",
            (rid,),
        ):
            if kind == "decision" and source not in queued:
                queued.add(source)
                heapq.heappush(queue, (seq, source))

    for rid in moved:
        found = fact(rid)
        if found is not None and found[1] == "decision" and rid not in queued:
            queued.add(rid)
            heapq.heappush(queue, (found[0], rid))
        requeue_dependers(rid)
    while queue:  # kept decisions, in file order: each settles after everything it depends on
        _, rid = heapq.heappop(queue)
        found = fact(rid)
        assert found is not None
        depends = step("SELECT depends_on FROM records WHERE id = ?", (rid,)).fetchone()[0]
        before = blocked_of(rid)
        now = block(rid, found[2], json.loads(depends))
        blocked[rid] = now
        if now != before:
            moved.add(rid)
            requeue_dependers(rid)
    for record in new:
        if record["kind"] == "decision":
            blocked[record["id"]] = block(record["id"], record["state"], record.get("depends_on") or [])

    # Resolution: every question a moved, removed or new record answers gets its resolvers again.
    questions = {target for _, kind, target in removed if kind == "answers"}
    for rid in moved:
        answers = step("SELECT answers FROM records WHERE id = ?", (rid,)).fetchone()[0]
        questions.update(json.loads(answers))
    for record in new:
        questions.update(record.get("answers") or ())

    def available(rid: str, kind: str, state: str) -> bool:
        if retired_by(rid):
            return False
        return state == "accepted" if kind == "claim" else kind == "decision" and not blocked_of(rid)

    resolved: dict[str, list[str]] = {}
    old_resolvers: set[str] = set()
    for question in questions:
        resolvers = [
            source
            for source, kind, state in step(
                "SELECT r.source, s.kind, s.recorded_state FROM relations r JOIN records s ON s.id = r.source"
                " WHERE r.target = ? AND r.type = 'answers' ORDER BY s.seq",
                (question,),
            )
            if available(source, kind, state)
        ]
        resolvers.extend(
            r["id"] for r in new if question in (r.get("answers") or ()) and available(r["id"], r["kind"], r["state"])
        )
        resolved[question] = list(dict.fromkeys(resolvers))
        old_resolvers.update(r for (r,) in step("SELECT resolver FROM resolved_by WHERE question = ?", (question,)))

    # Rows: the new records, then the kept records whose derived columns changed.
    derived = project.Derived(
        {rid: retired_by(rid) for rid in new_ids if retired_by(rid)},
        {rid: blocked[rid] for rid in new_ids if rid in blocked},
        {q: v for q, v in resolved.items() if v and q in new_ids},
    )
    _insert_new(conn, first, new, [project.view(r, derived) for r in new], lines, ends, data, base)
    changed = []
    for rid in (moved | questions) - new_ids.keys():
        found = fact(rid)
        if found is None:
            continue
        _, kind, recorded, _, stored = found
        if kind != "question":
            state = recorded
        elif rid in resolved:
            state = "resolved" if resolved[rid] else recorded
        else:
            state = stored  # its resolvers did not change
        applicable = None if kind != "decision" else int(not blocked_of(rid))
        changed.append((state, retired_by(rid), applicable, rid))
    conn.executemany("UPDATE records SET state = ?, retired_by = ?, applicable = ? WHERE id = ?", changed)
    for rid, why in blocked.items():
        step("DELETE FROM blocked_by WHERE decision = ?", (rid,))
        conn.executemany("INSERT INTO blocked_by VALUES (?, ?, ?)", ((rid, b, n) for n, b in enumerate(why)))
    for question, resolvers in resolved.items():
        step("DELETE FROM resolved_by WHERE question = ?", (question,))
        conn.executemany(
            "INSERT INTO resolved_by VALUES (?, ?, ?)", ((question, r, n) for n, r in enumerate(resolvers))
        )

    # Degrees: counted again for every record a citation or a resolution came to or went from.
    touched = {target for _, kind, target in removed if kind != "supersedes"}
    touched.update(ref for r in new for ref in _cites(r))
    touched.update(old_resolvers)
    touched.update(r for v in resolved.values() for r in v)
    touched.update(new_ids)
    conn.executemany(
        "UPDATE records SET degree = (SELECT count(*) FROM relations WHERE target = ?1 AND type != 'supersedes')"
        " + (SELECT count(*) FROM resolved_by WHERE resolver = ?1) WHERE id = ?1",
        ((rid,) for rid in touched),
    )


def _cited_state(conn: sqlite3.Connection, new: list[dict], limit: int) -> tuple[dict[str, dict], project.Derived]:
    """What settling ``new`` (records that supersede nothing) needs of the first ``limit`` indexed records.

    The records they cite (depends_on, answers) by ID, and those records'
    retired_by, blocked_by and resolved_by as the index holds them; citations
    of records among ``new`` are left to the caller. (When ``new`` are indexed
    already, a question's resolvers may list them: ``project.settle`` adds a
    resolver once.)
    """
    cited = {t for r in new for t in (*(r.get("depends_on") or ()), *(r.get("answers") or ()))}
    derived = project.Derived()
    by_id: dict[str, dict] = {}
    for rid in cited:
        row = conn.execute(
            "SELECT kind, recorded_state, retired_by FROM records WHERE id = ? AND seq < ?", (rid, limit)
        ).fetchone()
        if row is None:
            continue  # cites a record among the new ones
        by_id[rid] = {"id": rid, "kind": row[0], "state": row[1]}
        if row[2]:
            derived.retired_by[rid] = row[2]
        if row[0] == "decision":
            derived.blocked[rid] = [
                b
                for (b,) in conn.execute("SELECT blocker FROM blocked_by WHERE decision = ? ORDER BY position", (rid,))
            ]
        if row[0] == "question":
            resolvers = [
                r
                for (r,) in conn.execute(
                    "SELECT resolver FROM resolved_by WHERE question = ? ORDER BY position", (rid,)
                )
            ]
            if resolvers:
                derived.resolved_by[rid] = resolvers
    return by_id, derived


def _settle_appended(
    conn: sqlite3.Connection,
    first: int,
    new: list[dict],
    lines: list[bytes],
    ends: list[int],
    data: bytes,
    base: int = 0,
) -> None:
    """Records appended after ``first`` that supersede nothing: settle each against what it cites.

    Such records change no earlier record's state except questions they
    resolve (``project.settle`` records those), so only their own rows and the
    resolved questions are written.
    """
    by_id, derived = _cited_state(conn, new, first)
    before = {q: len(v) for q, v in derived.resolved_by.items()}
    views = []
    for record in new:
        by_id[record["id"]] = record
        project.settle(record, by_id, derived)
    for record in new:
        views.append(project.view(record, derived))
    _insert_new(conn, first, new, views, lines, ends, data, base)
    conn.executemany(
        "INSERT INTO blocked_by VALUES (?, ?, ?)",
        ((r["id"], b, n) for r in new if r["kind"] == "decision" for n, b in enumerate(derived.blocked[r["id"]])),
    )
    # Degrees: each reference the new records make, and each question one of them now resolves.
    referenced = [ref for r in new for ref in _cites(r)]
    for question, resolvers in derived.resolved_by.items():
        done = before.get(question, 0)
        if len(resolvers) > done:
            conn.executemany(
                "INSERT INTO resolved_by VALUES (?, ?, ?)",
                ((question, r, n) for n, r in enumerate(resolvers) if n >= done),
            )
            conn.execute("UPDATE records SET state = 'resolved' WHERE id = ? AND kind = 'question'", (question,))
            referenced.extend(resolvers[done:])
    conn.executemany("UPDATE records SET degree = degree + 1 WHERE id = ?", ((ref,) for ref in referenced))


def _cites(record: dict) -> list[str]:
    """The IDs a record cites in supports (each occurrence), depends_on and answers: what degree counts."""
    return [ref for name, ref in model.references(record) if name != "supersedes"]


# -- reading ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def opened(ledger: Path) -> Iterator[Index]:
    """``open_index`` as a context manager that closes the connection."""
    index = open_index(ledger)
    try:
        yield index
    finally:
        index.close()


#: A query's distinct terms matched in one scan: a bit each of a mask (the phrase takes the next bit;
#: SQLite integers have 63 bits and a sign). A longer query is matched a term at a time.
MAX_TERMS = 62
#: GLOB patterns up to this many bytes (SQLite refuses those over 50,000); a longer needle is tested with instr.
_GLOB_BYTES = 40_000
#: What a GLOB pattern must bracket to match it literally (GLOB has no escape character).
_GLOB_LITERAL = str.maketrans({"*": "[*]", "?": "[?]", "[": "[[]"})
_TEMP = itertools.count()
#: The current records holding a needle (a term-at-a-time match), in file order.
_HOLDING = (
    "SELECT h.seq, r.id FROM haystacks h JOIN records r ON r.seq = h.seq"
    " WHERE r.retired_by = '' AND instr(h.haystack, ?) > 0 ORDER BY h.seq"
)


def temp_name(stem: str) -> str:
    """A name for a temporary table no other in this process has (a query's hits live in one)."""
    return f"{stem}_{next(_TEMP)}"


def query_needles(query: str) -> tuple[list[str], str]:
    """A query's distinct casefolded terms, in order, and its phrase (the terms as written, one space apart)."""
    words = query.casefold().split()
    return list(dict.fromkeys(words)), " ".join(words)


def _test(needle: str, param: str) -> tuple[str, str]:
    """SQL true when the ``haystack`` column holds needle, and the parameter it takes.

    GLOB ``*needle*`` with ``*``, ``?`` and ``[`` bracketed is an exact substring test,
    about twice as fast as ``instr`` over a whole table; a needle too long for a GLOB
    pattern is tested with ``instr``.
    """
    pattern = "*" + needle.translate(_GLOB_LITERAL) + "*"
    if len(pattern.encode()) <= _GLOB_BYTES:
        return f"haystack GLOB {param}", pattern
    return f"instr(haystack, {param}) > 0", needle


def nul_haystack(conn: sqlite3.Connection) -> bool:
    """True when a current record's haystack is NULL (its text holds a NUL, where SQL text would stop)."""
    row = conn.execute(
        "SELECT 1 FROM haystacks h INDEXED BY haystacks_nul CROSS JOIN records r ON r.seq = h.seq"
        " WHERE h.haystack IS NULL AND r.retired_by = '' LIMIT 1"
    ).fetchone()
    return row is not None


def current_count(conn: sqlite3.Connection) -> int:
    """How many records no later record supersedes."""
    return conn.execute("SELECT count(*) FROM records INDEXED BY records_rank WHERE retired_by = ''").fetchone()[0]


def match_query(conn: sqlite3.Connection, terms: list[str], phrase: str, table: str, current: int) -> list[int]:
    """Fill ``temp.<table>`` (its seq and mask columns) with the current records a query hits; the points of each bit.

    One scan of ``haystacks`` tests every term: bit i of a record's mask is
    ``terms[i]``, worth ``1000 * (N + 1 - df) // (N + 1)`` over the N = ``current``
    current records (``score.text_points``); the bit after the terms is the
    phrase, worth 1000, tested only in the records holding every term (no
    other can hold it). A one-term phrase is the term itself: its 1000 joins
    the term's bit. Records whose points come to 0 are left out, as scoring
    leaves them out. The caller has checked that nothing holds a NUL
    (``nul_haystack``) and that there are at most MAX_TERMS terms.
    """
    tests, params = [], []
    for i, term in enumerate(terms):
        test, param = _test(term, f"?{i + 1}")
        tests.append(f"(({test}) << {i})")
        params.append(param)
    # LIMIT -1 keeps the mask computed once a row: a flattened subquery would test every term again in WHERE.
    conn.execute(
        f"INSERT INTO temp.{table} (seq, mask) SELECT seq, mask FROM"
        f" (SELECT seq, {' | '.join(tests)} AS mask FROM haystacks LIMIT -1) WHERE mask",
        params,
    )
    conn.execute(
        f"DELETE FROM temp.{table} WHERE seq IN (SELECT seq FROM records INDEXED BY records_rank WHERE retired_by > '')"
    )
    counts = conn.execute(
        f"SELECT {', '.join(f'sum((mask >> {i}) & 1)' for i in range(len(terms)))} FROM temp.{table}"
    ).fetchone()
    n = current
    points = [1000 * (n + 1 - (df or 0)) // (n + 1) for df in counts]
    if len(terms) == 1 and phrase == terms[0]:
        points[0] += 1000
    else:
        every = (1 << len(terms)) - 1
        test, param = _test(phrase, "?1")
        conn.execute(
            f"UPDATE temp.{table} SET mask = mask | {every + 1} WHERE mask = {every}"
            f" AND (SELECT {test} FROM haystacks h WHERE h.seq = {table}.seq)",
            (param,),
        )
        points.append(1000)
    scoring = sum(1 << i for i, p in enumerate(points) if p)
    if scoring != (1 << len(points)) - 1:
        conn.execute(f"DELETE FROM temp.{table} WHERE mask & {scoring} = 0")
    return points


def mask_points(points: list[int], mask: int) -> int:
    """A record's query points from its mask (``match_query``)."""
    return sum(p for i, p in enumerate(points) if mask >> i & 1)


def text_points(conn: sqlite3.Connection, query: str) -> dict[str, int] | None:
    """A query's points per current record, in file order (``score.text_points``), matched in SQL.

    A term's weight is ``1000 * (N + 1 - df) // (N + 1)`` over the N current records; a record
    holding the whole query as a phrase gains 1000 more. None when a current record's haystack
    or the query holds a NUL (SQL text would stop there): the caller then scores decoded records.
    """
    terms, phrase = query_needles(query)
    if not terms:
        return {}
    if "\x00" in phrase or nul_haystack(conn):
        return None
    n = current_count(conn)
    table = temp_name("docket_points")
    try:
        conn.execute(f"CREATE TEMP TABLE {table} (seq INTEGER PRIMARY KEY, mask INTEGER NOT NULL)")
    except sqlite3.Error:  # no temporary tables here (a read-only connection): a term at a time
        table = ""
    if table and len(terms) <= MAX_TERMS:
        try:
            points = match_query(conn, terms, phrase, table, n)
            rows = conn.execute(
                f"SELECT r.id, t.mask FROM temp.{table} t JOIN records r ON r.seq = t.seq ORDER BY t.seq"
            )
            return {rid: mask_points(points, mask) for rid, mask in rows}
        finally:
            conn.execute(f"DROP TABLE temp.{table}")
    if table:
        conn.execute(f"DROP TABLE temp.{table}")
    found: dict[int, list] = {}  # seq -> [ID, points]: file order, as the records were scored
    for needle, fixed in [*((term, None) for term in terms), (phrase, 1000)]:
        hit = conn.execute(_HOLDING, (needle,)).fetchall()
        weight = fixed if fixed is not None else 1000 * (n + 1 - len(hit)) // (n + 1)
        for seq, rid in hit:
            entry = found.get(seq)
            if entry is None:
                found[seq] = [rid, weight]
            else:
                entry[1] += weight
    return {rid: p for _, (rid, p) in sorted(found.items()) if p > 0}


def derived_for(conn: sqlite3.Connection, ids: list[str]) -> project.Derived:
    """The projection facts (retired_by, blocked_by, resolved_by) of these records, read from the index."""
    wanted = set(ids)
    derived = project.Derived()
    for rid, by in conn.execute("SELECT id, retired_by FROM records WHERE retired_by != ''"):
        if rid in wanted:
            derived.retired_by[rid] = by
    for rid in ids:
        if rid[0] == "d":
            derived.blocked[rid] = []
    for rid, blocker in conn.execute("SELECT decision, blocker FROM blocked_by ORDER BY rowid"):
        if rid in wanted:
            derived.blocked[rid].append(blocker)
    for question, resolver in conn.execute("SELECT question, resolver FROM resolved_by ORDER BY rowid"):
        if question in wanted:
            derived.resolved_by.setdefault(question, []).append(resolver)
    return derived


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
    chunks = None
    if len(ids) <= FEW and ix.data is None:
        chunks = _read_lines(ix, _spans(ix, ids))
        if chunks is None:  # changed since it was proven: read it whole, proving the index again
            ix.data = None
    if chunks is None:
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


def revision(ix: Index) -> tuple[str, int]:
    """(SHA-256 of the ledger through its last record's line, that line's end): the briefing's revision.

    Hashing a large ledger costs tens of milliseconds, so the first reader
    after a change computes it and files it in the index for the next ones.
    """
    meta = _meta(ix.conn)
    if meta.get("revision") and meta.get("records_end") is not None:
        return meta["revision"], meta["records_end"]
    data = ledger_bytes(ix)
    meta = _meta(ix.conn)
    end = records_end(data, meta.get("length", 0))
    digest = canonical.sha256(memoryview(data)[:end])
    _file_revision(ix, meta, digest, end)
    return digest, end


def _file_revision(ix: Index, meta: dict, digest: str, end: int) -> None:
    """Store a computed revision when the index still holds the bytes it was computed from (best effort)."""
    try:
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
    except (OSError, sqlite3.Error):
        pass


def read(ledger: Path | None, *, records: bool = True) -> store.Snapshot:
    """The ledger validated (only what the index had not seen), as a snapshot; a missing file reads as empty.

    With ``records`` every record is decoded (in one go: the bytes were
    validated when they were indexed); the snapshot's ``index`` is not filled.
    """
    if ledger is None:
        return store.Snapshot(path=Path(store.LEDGER_DIR) / store.LEDGER_NAME)
    with jsonl.gc_paused(), opened(ledger) as ix:
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
    if own.note:  # a stand-in for a ledger committed broken (``broken.stand_in``): validate every line
        withdraw(own.note)
        own.close()
        return store.parse(ledger, data, records=records)
    try:
        return _parse_over(own, ledger, data, records)
    finally:
        own.close()


def _parse_over(ix: Index, ledger: Path, data: bytes, records: bool) -> store.Snapshot:
    shared, kept, lines = _shared_prefix(ix.conn, data)
    return store.parse(ledger, data, records=records, start=shared, line_no=lines, known=known(ix.conn, kept))


def effects(ledger: Path, records: list[dict], *, dry_run: bool) -> list[str] | None:
    """``project.consequences`` of records just appended (or, ``dry_run``, about to be), read from the index.

    Records that supersede nothing change no earlier record's state: their
    only effect to report is an ``answers`` that resolves nothing, which
    depends on the records they cite alone (``project.idle_answers``). None
    when that does not hold (a record supersedes, or the ledger has grown
    past them since): the caller derives the whole ledger.
    """
    with opened(ledger) as ix:
        count = _count(ix.conn)
        if dry_run:
            first = count
        else:
            row = ix.conn.execute("SELECT seq FROM records WHERE id = ?", (records[0]["id"],)).fetchone()
            if row is None or row[0] + len(records) != count:
                return None
            first = row[0]
        if any(r.get("supersedes") for r in records):
            return _supersession_effects(ix.conn, records, first)
        by_id, derived = _cited_state(ix.conn, records, first)
    for record in records:
        by_id[record["id"]] = record
        project.settle(record, by_id, derived)
    return project.idle_answers(records, derived)


#: The records the supersession targets (a JSON array) are, and the earlier records that depend on them,
#: directly or through other decisions, in file order: all whose state a supersession can change.
_AFFECTED = """
WITH RECURSIVE hit(id) AS (
  SELECT value FROM json_each(?1)
  UNION SELECT r.source FROM relations r INDEXED BY relations_target JOIN hit ON r.target = hit.id
  WHERE r.type = 'depends_on'
)
SELECT s.id, s.kind, s.recorded_state, s.retired_by, s.depends_on, s.answers
FROM hit CROSS JOIN records s ON s.id = hit.id WHERE s.seq < ?2 ORDER BY s.seq
"""


def _facts(conn: sqlite3.Connection, ids: Iterable[str], limit: int) -> dict[str, tuple[str, str, str, list[str]]]:
    """ID -> (kind, recorded state, retired_by, blocked_by) of the records among ids before position limit."""
    wanted = json.dumps(sorted(ids))
    facts: dict[str, tuple[str, str, str, list[str]]] = {}
    rows = conn.execute(
        "SELECT id, kind, recorded_state, retired_by FROM records WHERE id IN (SELECT value FROM json_each(?)) AND seq < ?",
        (wanted, limit),
    )
    for rid, kind, state, retired in rows:
        facts[rid] = (kind, state, retired, [])
    rows = conn.execute(
        "SELECT decision, blocker FROM blocked_by WHERE decision IN (SELECT value FROM json_each(?)) ORDER BY position",
        (wanted,),
    )
    for rid, blocker in rows:
        if rid in facts:
            facts[rid][3].append(blocker)
    return facts


def _supersession_effects(conn: sqlite3.Connection, new: list[dict], first: int) -> list[str]:
    """``project.consequences`` of ``new`` (records from position ``first`` on, some superseding), from the index.

    A supersession changes the state of no earlier record but its targets,
    the decisions that depend on them (through any chain of decisions) and
    the questions those answer. That subgraph is settled twice from the
    index's facts of everything around it, without the new records and with
    them; every other record's state is the same in both. Whether ``new``
    are indexed already (an append) or not (``--dry-run``) does not matter:
    nothing read here is a fact the new records change, but for the
    targets' retirement, which is set here.
    """
    retirements = {t: r["id"] for r in new for t in r.get("supersedes") or ()}
    affected = [
        {
            "id": rid,
            "kind": kind,
            "state": state,
            "retired": retired,
            "depends_on": json.loads(deps),
            "answers": json.loads(ans),
        }
        for rid, kind, state, retired, deps, ans in conn.execute(_AFFECTED, (json.dumps(sorted(retirements)), first))
    ]
    inside = {a["id"] for a in affected}
    questions = {q for a in affected for q in a["answers"]}
    answerers: dict[str, list[str]] = {q: [] for q in questions}
    rows = conn.execute(
        "SELECT r.target, r.source FROM relations r INDEXED BY relations_target CROSS JOIN records s ON s.id = r.source"
        " WHERE r.target IN (SELECT value FROM json_each(?)) AND r.type = 'answers' AND s.seq < ? ORDER BY s.seq",
        (json.dumps(sorted(questions)), first),
    )
    for question, source in rows:
        answerers[question].append(source)
    for question, sources in answerers.items():
        answerers[question] = list(dict.fromkeys(sources))
    cited = {t for r in new for t in (*(r.get("depends_on") or ()), *(r.get("answers") or ()))}
    around = {p for a in affected for p in a["depends_on"]} | {s for a in answerers.values() for s in a} | cited
    facts = _facts(conn, (around | questions) - inside, first)

    def settled(after: bool) -> tuple[project.Derived, dict[str, dict]]:
        derived = project.Derived()
        by_id: dict[str, dict] = {}
        for rid, (kind, state, retired, blocked) in facts.items():
            by_id[rid] = {"id": rid, "kind": kind, "state": state}
            if retired:
                derived.retired_by[rid] = retired
            if kind == "decision":
                derived.blocked[rid] = blocked
        for a in affected:
            if a["retired"] and a["id"] not in retirements:
                derived.retired_by[a["id"]] = a["retired"]
        if after:
            derived.retired_by.update(retirements)
        for a in affected:
            by_id[a["id"]] = a
            project.settle(a, by_id, derived)
        if after:
            for record in new:
                by_id[record["id"]] = record
                project.settle(record, by_id, derived)
        return derived, by_id

    before, _ = settled(False)
    after, by_id = settled(True)

    def resolvers(question: str, derived: project.Derived) -> list[str]:
        return [
            r
            for r in answerers[question]
            if r not in derived.retired_by
            and (
                (by_id[r]["kind"] == "claim" and by_id[r]["state"] == "accepted")
                or (by_id[r]["kind"] == "decision" and not derived.blocked[r])
            )
        ]

    lines: list[str] = []
    for a in affected:
        rid = a["id"]
        if a["kind"] == "decision" and rid not in after.retired_by and not before.blocked[rid] and after.blocked[rid]:
            lines.append(f"{rid} is now blocked: {project.blocked_because(after.blocked[rid], after)}")
    reopened = []
    for question in _in_file_order(conn, questions - set(after.retired_by), first):
        gone = resolvers(question, before)
        if (
            gone
            and not resolvers(question, after)
            and not any(r["id"] in after.resolved_by.get(question, ()) for r in new)
        ):
            reopened.append(f"{question} is open again: {project.no_longer_holds(gone, after)}")
    lines.extend(reopened)
    lines.extend(project.idle_answers(new, after))
    return lines


def _in_file_order(conn: sqlite3.Connection, ids: set[str], limit: int) -> list[str]:
    """The indexed records among ids before position limit, in file order."""
    rows = conn.execute(
        "SELECT id FROM records WHERE id IN (SELECT value FROM json_each(?)) AND seq < ? ORDER BY seq",
        (json.dumps(sorted(ids)), limit),
    )
    return [rid for (rid,) in rows]


def held(ledger: Path, data: bytes) -> Index:
    """The index brought to ``data``: the ledger's bytes, read by a caller that holds the ledger's lock.

    (``open_index`` would take the ledger's lock itself, which a holder of it must not.)
    """
    return _current_for(ledger, db_path(ledger), data, db.file_stat(ledger))


def append(ledger: Path, drafts: list[dict], *, dry_run: bool = False) -> list[dict]:
    """Allocate IDs, validate and append drafts all or nothing; return the records.

    Under the ledger's exclusive lock: the index is brought to the file's
    bytes (validating only what it had not seen), each draft is validated
    against it and the drafts before it, then all lines are written at once,
    flushed and fsynced, and the index takes in just the new lines. On any
    failure the ledger is left byte-identical. When the index proves it holds
    the whole file, only the file's tail is read (``_append_tail``), so an
    append costs the same at any ledger size.
    """
    store.prepare_directory(ledger, dry_run=dry_run)
    with store.locked(ledger, exclusive=True) as fd:
        assert fd is not None
        records = _append_tail(ledger, fd, drafts, dry_run=dry_run)
        if records is not None:
            return records
        data = store.writer_bytes(ledger, fd)
        stat = db.file_stat(ledger)
        target = db_path(ledger)
        ix = _current_for(ledger, target, data, stat)
        try:
            records = recording.prepare(ix.known(), drafts)
            if dry_run:
                return records
            meta = _meta(ix.conn)
            keep, lines, count = meta.get("length", 0), meta.get("lines", 0), ix.count()
            new = data[:keep] + store.write_records(ledger, fd, data, keep, records)
            # The index takes in the new lines; nothing before them changed (we hold the lock).
            trusted, stat = (keep, count, lines), db.file_stat(ledger)
            if ix.path is None:
                update(ix.conn, ledger, new, stat, trusted)
            else:
                ix.close()
                _for_bytes(ledger, target, new, stat, trusted).close()
        finally:
            ix.close()
    return records


def _append_tail(ledger: Path, lock_fd: int, drafts: list[dict], *, dry_run: bool) -> list[dict] | None:
    """``append`` reading only the ledger's tail, when the index proves it holds every byte of the file.

    Under the ledger's exclusive lock (``lock_fd``) and then the index's: the
    index's proof (``_tail_proof``: stat, length, the digest of the last TAIL
    bytes) is checked on the open ledger, the drafts are validated against the
    index's records (``known``), the lines are written at the file's end and
    fsynced (a failed write cuts the file back to its length), and the index
    takes in the new lines from the bytes past its last checkpoint but one.

    None, having written nothing, when any of that cannot be had: a batch
    journaled in the lock file (a killed writer's, which the whole-file path
    settles), no index or one that cannot prove itself current (the ledger
    changed behind its back, a torn last line), a cache that cannot be
    written, a batch too large to index in place. The caller then reads the
    whole ledger, as before.
    """
    target = db_path(ledger)
    if store.journaled(lock_fd) or not target.exists():
        return None
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(db.lock(target))
            conn = stack.enter_context(contextlib.closing(db.open_wal(target)))
            fd = files.open_fd(ledger, os.O_RDWR, store.root_of(ledger))
            stack.callback(os.close, fd)
            proof = _tail_proof(conn, ledger, fd)
            if proof is None:
                return None
            meta, base, tail = proof
            count = _count(conn)
            # A refusal here is the ledger's own (the index holds all of it): it is raised as it is.
            records = recording.prepare(known(conn, count), drafts)
        except (OSError, sqlite3.Error, files.UnsafePath):
            return None
        if dry_run:
            return records
        if sum(len(canonical.line(r)) for r in records) > UPDATE_LIMIT:
            return None  # the index would be built afresh, from every byte
        keep = meta["length"]
        payload = store.write_records(ledger, lock_fd, tail, keep, records, base=base, ledger_fd=fd)
        # Written and fsynced: from here on the ledger holds the records whatever becomes of the index.
        st = os.fstat(fd)
        stat = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                with jsonl.gc_paused():
                    _update_past(conn, ledger, tail + payload, stat, (keep, count, meta["lines"]), base)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.Error:
            pass  # the index still records the old stat: the next reader proves it stale and updates it
    return records


def _tail_proof(conn: sqlite3.Connection, ledger: Path, fd: int) -> tuple[dict, int, bytes] | None:
    """(meta, base, the ledger's bytes from base on) when the index provably holds every byte of the open ledger.

    The proof is ``_proven``'s (equal stat, the indexed length is the file's,
    the digest of its last TAIL bytes), taken on the descriptor that will be
    written. ``base`` is where the bytes the append needs begin: at or before
    the checkpoint before the last (``_apply`` cuts blocks again from there)
    and at least TAIL bytes before the end (``store.write_records`` journals
    the 4 KB before a batch). None when the index is empty or proves nothing.
    """
    meta = _meta(conn)
    if meta.get("schema_version") != SCHEMA_VERSION or meta.get("ledger") != str(ledger.resolve()):
        return None
    st = os.fstat(fd)
    stat = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    if stat != (meta.get("size"), meta.get("mtime_ns"), meta.get("ctime_ns"), meta.get("inode")):
        return None
    size = st.st_size
    if not size or size != meta.get("length") or not _count(conn):
        return None
    row = conn.execute("SELECT max(end_offset) FROM checkpoints WHERE end_offset < ?", (size,)).fetchone()
    base = max(0, min(row[0] or 0, size - TAIL))
    tail = store.read_from(fd, base, size)
    if len(tail) != size - base or _tail_digest(tail, len(tail)) != meta.get("tail_digest"):
        return None
    return meta, base, tail


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
