"""The ledger index: one disposable SQLite database per ledger that readers query.

The JSONL file in git stays the only source of truth. The index lives in the
user cache directory (placed, locked and opened through ``ledger.db``, the
layer typed ledgers' projections share) and records what it was built from:
the file's size, mtime, ctime and inode, the length of the bytes it holds, a
digest of their last block, and digest checkpoints along the file.

``open_index`` proves it current before anyone reads it:

* an equal stat and an equal digest of the last block prove it in O(1)
  (ctime changes on every write, and ``os.utime`` cannot set it back);
* otherwise the ledger is read and validated (``store.read``), the
  checkpoints are compared block by block, and only the records past the
  last shared checkpoint are deleted and indexed again (an append, a branch
  switch, a rebase's rewritten tail);
* a missing, corrupt, locked-out or foreign-version database is rebuilt
  silently, and a cache directory that cannot be written degrades to an
  in-memory index with one notice.

Derived state (retired, resolved, applicable, blocked_by, resolved_by) is
computed by ``ledger.project``, the same code every other reader uses:
an append that supersedes nothing settles only its own records; anything
else re-derives from the stored structural columns (no JSON decoding of the
old lines) and rewrites only the rows whose state changed.

The schema is documented in docs/sql.md (``docket sql --schema`` prints it).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from docket_git.errors import notice
from docket_git.ledger import db, jsonl, project, store
from docket_git.repo import files

#: Bump when the tables or what fills them change: an index of another version is rebuilt.
SCHEMA_VERSION = 1
#: Checkpoints fall on the first line end at or after every BLOCK bytes.
BLOCK = 1 << 16
#: The proof of currency hashes this many bytes at the end of the indexed ledger.
TAIL = 4096

SCHEMA = """\
CREATE TABLE meta (
  key TEXT PRIMARY KEY,                 -- schema_version, ledger, size, mtime_ns, ctime_ns, inode, length,
                                        -- tail_digest, indexed_from (records kept by the last update)
  value
);
CREATE TABLE checkpoints (
  end_offset INTEGER PRIMARY KEY,       -- byte offset just past a line: the end of a block
  records INTEGER NOT NULL,             -- records wholly before end_offset
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
  answers TEXT NOT NULL
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
CREATE INDEX relations_source ON relations (source);
CREATE INDEX relations_target ON relations (target);
CREATE INDEX scopes_record ON scopes (record);
CREATE INDEX scopes_scope ON scopes (scope);
CREATE INDEX blocked_by_decision ON blocked_by (decision);
CREATE INDEX resolved_by_question ON resolved_by (question);
"""

_RECORD_COLUMNS = 21
_INSERT_RECORD = f"INSERT INTO records VALUES ({', '.join('?' * _RECORD_COLUMNS)})"
_GLOB = frozenset("*?[]")


def db_path(ledger: Path) -> Path:
    """Where the index of this ledger lives: the user cache dir, keyed by the ledger's real path."""
    return db.cache_path("index", ledger)


def scope_kind(scope: str) -> str:
    """exact (a path), directory (``dir/``), glob, or component (a name with no ``/`` nor glob character)."""
    if _GLOB & set(scope):
        return "glob"
    if scope.endswith("/"):
        return "directory"
    return "exact" if "/" in scope or "\\" in scope else "component"


@dataclass
class Index:
    """An index proven current for one ledger: a connection, and where it lives (None: in memory)."""

    conn: sqlite3.Connection
    ledger: Path
    path: Path | None
    #: What proving it current took: "current", "updated" or "rebuilt".
    how: str = "current"

    def close(self) -> None:
        self.conn.close()

    def reader(self) -> sqlite3.Connection:
        """A read-only connection (mode=ro, query_only) to the same data."""
        if self.path is None:
            self.conn.execute("PRAGMA query_only = ON")
            return self.conn
        return db.reader(self.path)


# -- proving current -----------------------------------------------------------------------------


def _meta(conn: sqlite3.Connection) -> dict:
    return dict(conn.execute("SELECT key, value FROM meta").fetchall())


def _tail_digest(data: bytes | memoryview, length: int) -> str:
    return hashlib.sha256(memoryview(data)[max(0, length - TAIL) : length]).hexdigest()


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


def _proven(conn: sqlite3.Connection, ledger: Path) -> bool:
    """True when the index provably holds the ledger's current bytes, without reading them all."""
    meta = _meta(conn)
    if meta.get("schema_version") != SCHEMA_VERSION or meta.get("ledger") != str(ledger.resolve()):
        return False
    size, mtime, ctime, ino = db.file_stat(ledger)
    if (size, mtime, ctime, ino) != (meta.get("size"), meta.get("mtime_ns"), meta.get("ctime_ns"), meta.get("inode")):
        return False
    if size != meta.get("length"):
        return False  # an unfinished batch or a torn line lies beyond: read it the long way
    tail = _read_tail(ledger, size)
    return tail is not None and hashlib.sha256(tail).hexdigest() == meta.get("tail_digest")


def open_index(ledger: Path) -> Index:
    """The ledger's index, proven current (updated or rebuilt first when it is not).

    Raises ``LedgerError`` for a ledger that does not validate, as every reader does.
    """
    target = db_path(ledger)
    conn = _open_persistent(target)
    if conn is not None:
        try:
            if _proven(conn, ledger):
                return Index(conn, ledger, target)
        except sqlite3.Error:
            pass
        conn.close()
    try:
        with db.lock(target):
            return _update_persistent(ledger, target)
    except (OSError, sqlite3.Error) as exc:
        notice(f"cannot write the ledger index at {target.parent} ({_why(exc)}); using an in-memory index")
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.executescript(SCHEMA)
    how = update(conn, ledger)
    return Index(conn, ledger, None, how)


def _why(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


def _open_persistent(target: Path) -> sqlite3.Connection | None:
    """A connection to an existing index file, or None (missing, unreadable, not a database)."""
    if not target.exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{target}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error:
        return None
    return conn


def _update_persistent(ledger: Path, target: Path) -> Index:
    """Under the index's lock: make the file current (a corrupt or foreign one is started afresh)."""
    try:
        conn = db.open_wal(target)
        if not _usable(conn):
            conn.close()
            conn = _fresh(target)
    except sqlite3.DatabaseError:
        conn = _fresh(target)
    try:
        how = "current" if _proven(conn, ledger) else update(conn, ledger)
    except sqlite3.DatabaseError:
        conn.close()
        conn = _fresh(target)
        how = update(conn, ledger)
    return Index(conn, ledger, target, how)


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


def update(conn: sqlite3.Connection, ledger: Path) -> str:
    """Bring conn's tables to the ledger's current bytes; "updated" or "rebuilt"."""
    with jsonl.gc_paused():
        snap = store.read(ledger, records=False)
        stat = db.file_stat(ledger)
        data = snap.data
        length = snap.valid_length
        meta = _meta(conn)
        same_ledger = meta.get("ledger") == str(ledger.resolve())
        shared, kept = _shared_prefix(conn, data, length) if same_ledger else (0, 0)
        decoded = (snap.tail_from, snap.tail, snap.tail_ends)
        conn.execute("BEGIN IMMEDIATE")
        try:
            how = _apply(conn, data, shared, kept, length, decoded)
            _write_meta(conn, ledger, stat, data, length)
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('indexed_from', ?)", (kept,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return how


def _shared_prefix(conn: sqlite3.Connection, data: bytes, length: int) -> tuple[int, int]:
    """(bytes, records) of the indexed prefix the ledger still starts with, to the last matching checkpoint."""
    view = memoryview(data)
    shared = kept = start = 0
    for end, records, digest in conn.execute("SELECT end_offset, records, digest FROM checkpoints ORDER BY end_offset"):
        if end > length or hashlib.sha256(view[start:end]).hexdigest() != digest:
            break
        shared, kept, start = end, records, end
    return shared, kept


def _checkpoints(data: bytes, start: int, records_before: int, length: int) -> Iterator[tuple[int, int, str]]:
    """(end, records before end, digest of the block) from start to length, a block per BLOCK bytes."""
    view = memoryview(data)
    pos = start
    count = records_before
    while pos < length:
        nl = data.find(b"\n", min(pos + BLOCK, length) - 1, length)
        end = length if nl < 0 else nl + 1
        lines, _ = jsonl.whole_lines(data, pos, end)
        count += len(lines)
        yield end, count, hashlib.sha256(view[pos:end]).hexdigest()
        pos = end


def _write_meta(conn: sqlite3.Connection, ledger: Path, stat: tuple, data: bytes, length: int) -> None:
    size, mtime, ctime, ino = stat
    values = {
        "schema_version": SCHEMA_VERSION,
        "ledger": str(ledger.resolve()),
        "size": size,
        "mtime_ns": mtime,
        "ctime_ns": ctime,
        "inode": ino,
        "length": length,
        "tail_digest": _tail_digest(data, length),
    }
    conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", values.items())


def _apply(
    conn: sqlite3.Connection, data: bytes, shared: int, kept: int, length: int, decoded: tuple = (0, [], [])
) -> str:
    """Replace the records past the first ``kept`` (bytes from ``shared`` on) with the ledger's lines.

    ``decoded`` is (offset, records, ends) that validation already decoded; the
    records past ``shared`` are taken from it rather than decoded again.
    """
    lines, ends = jsonl.whole_lines(data, shared, length)
    start, tail, tail_ends = decoded
    skip = len(tail_ends) - len(ends)
    if start <= shared and skip >= 0 and tail_ends[skip:] == ends:
        new = tail[skip:]
    else:
        new = json.loads(b"[" + b",".join(lines) + b"]") if lines else []  # validated lines
    total = conn.execute("SELECT count(*) FROM records").fetchone()[0]
    appended_only = total == kept
    if kept < total:
        _truncate(conn, kept)
    # The last shared checkpoint may end a short block (the file's old end): blocks are cut
    # again from the checkpoint before it, so appends do not leave a trail of small blocks.
    start, before = shared, kept
    row = conn.execute(
        "SELECT end_offset, records FROM checkpoints WHERE end_offset < ? ORDER BY end_offset DESC LIMIT 1",
        (shared,),
    ).fetchone()
    if shared and shared - (row[0] if row else 0) < BLOCK:
        start, before = (row[0], row[1]) if row is not None else (0, 0)
    conn.execute("DELETE FROM checkpoints WHERE end_offset > ?", (start,))
    conn.executemany("INSERT INTO checkpoints VALUES (?, ?, ?)", _checkpoints(data, start, before, length))
    if not kept:
        conn.execute("DELETE FROM records")
        for table in ("relations", "scopes", "blocked_by", "resolved_by"):
            conn.execute(f"DELETE FROM {table}")
        _settle_all(conn, [], new, lines, ends, data)
        return "rebuilt"
    if appended_only and not any(r.get("supersedes") for r in new):
        _settle_appended(conn, kept, new, lines, ends, data)
    else:
        _settle_all(conn, _stored_rows(conn), new, lines, ends, data, first=kept)
    return "updated"


def _truncate(conn: sqlite3.Connection, kept: int) -> None:
    """Forget the records from position ``kept`` on, and every row they own."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS gone (id TEXT PRIMARY KEY)")
    conn.execute("DELETE FROM gone")
    conn.execute("INSERT INTO gone SELECT id FROM records WHERE seq >= ?", (kept,))
    conn.execute("DELETE FROM relations WHERE source IN (SELECT id FROM gone)")
    conn.execute("DELETE FROM scopes WHERE record IN (SELECT id FROM gone)")
    conn.execute("DELETE FROM records WHERE seq >= ?", (kept,))


def _stored_rows(conn: sqlite3.Connection) -> list[dict]:
    """The structural fields of every indexed record, in file order: what projection reads."""
    rows = []
    loads = json.loads
    for rid, kind, state, supersedes, depends, answers in conn.execute(
        "SELECT id, kind, recorded_state, supersedes, depends_on, answers FROM records ORDER BY seq"
    ):
        rows.append(
            {
                "id": rid,
                "kind": kind,
                "state": state,
                "supersedes": loads(supersedes) if supersedes != "[]" else (),
                "depends_on": loads(depends) if depends != "[]" else (),
                "answers": loads(answers) if answers != "[]" else (),
            }
        )
    return rows


def _derived_columns(view: dict) -> tuple[str, str, int | None]:
    applicable = view.get("applicable")
    return view["state"], view["retired_by"], None if applicable is None else int(applicable)


def _record_row(seq: int, record: dict, view: dict, offset: int, end: int, line: bytes) -> tuple:
    state, retired_by, applicable = _derived_columns(view)
    return (
        seq,
        record["id"],
        record["kind"],
        record["state"],
        state,
        retired_by,
        applicable,
        1 if record.get("pinned") else 0,
        record["text"],
        record.get("choice") or "",
        record.get("rationale") or "",
        record["author"],
        record["ts"],
        record["session"],
        record["branch"],
        offset,
        len(line),
        hashlib.sha256(line).hexdigest(),
        _ids(record.get("supersedes")),
        _ids(record.get("depends_on")),
        _ids(record.get("answers")),
    )


def _ids(values: list[str] | None) -> str:
    return json.dumps(values) if values else "[]"


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
) -> None:
    rows, rels, scopes = [], [], []
    for i, (record, view, line, end) in enumerate(zip(new, views, lines, ends, strict=True)):
        offset = end - len(line) - (1 if data[end - 1 : end] == b"\n" else 0)
        rows.append(_record_row(first + i, record, view, offset, end, line))
        r, s = _owned_rows(record)
        rels.extend(r)
        scopes.extend(s)
    conn.executemany(_INSERT_RECORD, rows)
    conn.executemany("INSERT INTO relations VALUES (?, ?, ?, ?)", rels)
    conn.executemany("INSERT INTO scopes VALUES (?, ?, ?)", scopes)


def _settle_all(
    conn: sqlite3.Connection,
    old: list[dict],
    new: list[dict],
    lines: list[bytes],
    ends: list[int],
    data: bytes,
    first: int = 0,
) -> None:
    """Derive every record's state again (``project.derive``); write the new rows and the changed old ones."""
    records = old + new
    derived = project.derive(records)
    views = [project.view(r, derived) for r in new]
    _insert_new(conn, first, new, views, lines, ends, data)
    changed = []
    stored = conn.execute("SELECT id, state, retired_by, applicable FROM records WHERE seq < ?", (first,))
    by_id = {r["id"]: r for r in old}
    for rid, state, retired_by, applicable in stored:
        now = _derived_columns(project.view(by_id[rid], derived))
        if now != (state, retired_by, applicable):
            changed.append((*now, rid))
    conn.executemany("UPDATE records SET state = ?, retired_by = ?, applicable = ? WHERE id = ?", changed)
    conn.execute("DELETE FROM blocked_by")
    conn.execute("DELETE FROM resolved_by")
    conn.executemany(
        "INSERT INTO blocked_by VALUES (?, ?, ?)",
        ((rid, b, n) for rid, why in derived.blocked.items() for n, b in enumerate(why)),
    )
    conn.executemany(
        "INSERT INTO resolved_by VALUES (?, ?, ?)",
        ((q, r, n) for q, who in derived.resolved_by.items() for n, r in enumerate(who)),
    )


def _settle_appended(
    conn: sqlite3.Connection, first: int, new: list[dict], lines: list[bytes], ends: list[int], data: bytes
) -> None:
    """Records appended after ``first`` that supersede nothing: settle each against what it cites.

    Such records change no earlier record's state except questions they
    resolve (``project.settle`` records those), so only their own rows and the
    resolved questions are written.
    """
    cited = {t for r in new for t in (*(r.get("depends_on") or ()), *(r.get("answers") or ()))}
    derived = project.Derived()
    by_id: dict[str, dict] = {}
    for rid in cited:
        row = conn.execute("SELECT kind, recorded_state, retired_by FROM records WHERE id = ?", (rid,)).fetchone()
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
    before = {q: len(v) for q, v in derived.resolved_by.items()}
    views = []
    for record in new:
        by_id[record["id"]] = record
        project.settle(record, by_id, derived)
    for record in new:
        views.append(project.view(record, derived))
    _insert_new(conn, first, new, views, lines, ends, data)
    conn.executemany(
        "INSERT INTO blocked_by VALUES (?, ?, ?)",
        ((r["id"], b, n) for r in new if r["kind"] == "decision" for n, b in enumerate(derived.blocked[r["id"]])),
    )
    for question, resolvers in derived.resolved_by.items():
        done = before.get(question, 0)
        if len(resolvers) > done:
            conn.executemany(
                "INSERT INTO resolved_by VALUES (?, ?, ?)",
                ((question, r, n) for n, r in enumerate(resolvers) if n >= done),
            )
            conn.execute("UPDATE records SET state = 'resolved' WHERE id = ? AND kind = 'question'", (question,))


# -- reading ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def opened(ledger: Path) -> Iterator[Index]:
    """``open_index`` as a context manager that closes the connection."""
    index = open_index(ledger)
    try:
        yield index
    finally:
        index.close()


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


def records_of(ix: Index, ids: list[str]) -> list[dict]:
    """The full records with these IDs (decoded from their ledger lines in one go), in the order given.

    The lines are read from the ledger the index was just proven against; if
    the file changed in between, the index is brought current again first.
    """
    if not ids:
        return []
    data = ledger_bytes(ix)
    spans = dict(
        (
            (rid, (offset, size))
            for rid, offset, size in ix.conn.execute("SELECT id, line_offset, line_length FROM records")
        )
        if len(ids) > 64
        else (
            (rid, row)
            for rid in ids
            for row in ix.conn.execute("SELECT line_offset, line_length FROM records WHERE id = ?", (rid,))
        )
    )
    view = memoryview(data)
    chunks = [view[o : o + n] for o, n in (spans[rid] for rid in ids)]
    return json.loads(b"[" + b",".join(chunks) + b"]")


def ledger_bytes(ix: Index) -> bytes:
    """The ledger's bytes, checked to be the ones the index holds (brought current again if they changed)."""
    for _ in range(3):
        data = _ledger_bytes(ix.ledger)
        meta = _meta(ix.conn)
        length = meta.get("length", 0)
        if len(data) >= length and _tail_digest(data, length) == meta.get("tail_digest"):
            return data
        fresh = open_index(ix.ledger)  # changed under us: prove (and update) again
        ix.conn.close()
        ix.conn, ix.path = fresh.conn, fresh.path
    raise store.LedgerError(f"{ix.ledger} keeps changing while it is read; try again")


def texts(conn: sqlite3.Connection, ids: list[str]) -> dict[str, dict]:
    """Record ID -> {"text": ...} for the IDs the index holds (labels for cited records)."""
    out: dict[str, dict] = {}
    for rid in dict.fromkeys(ids):
        row = conn.execute("SELECT text FROM records WHERE id = ?", (rid,)).fetchone()
        if row is not None:
            out[rid] = {"text": row[0]}
    return out


def _ledger_bytes(ledger: Path) -> bytes:
    """The ledger's bytes as readers see them (under its shared lock; "" when it is gone)."""
    try:
        with store.locked(ledger, exclusive=False) as fd:
            return store.current_bytes(ledger, fd)
    except FileNotFoundError:
        return b""
