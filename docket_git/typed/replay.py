"""Replay a typed ledger into its SQLite projection: generic tables, per-type state, notes.

A full replay reads every record, orders them canonically, applies each
valid operation to an in-memory state (notes first, then votes) and writes
the tables in bulk. A record whose operation is invalid is skipped and
reported in ``diagnostics``; the rest replays. ``SqlState`` lets an append
apply its operations to the projection's rows directly, with no replay.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3

from docket_git.ledger import store
from docket_git.typed import canonical, envelope, ops, write
from docket_git.typed.declare import Ledger

PROJECTION_VERSION = 4
OUTPUT_VERSION = 1

GENERIC_DDL = """
CREATE TABLE records (ordinal INTEGER PRIMARY KEY, id TEXT NOT NULL, sha TEXT NOT NULL, type TEXT NOT NULL,
                      timestamp TEXT NOT NULL, payload TEXT NOT NULL, line INTEGER NOT NULL,
                      record_id TEXT NOT NULL);
CREATE TABLE parents (child_sha TEXT NOT NULL, parent_sha TEXT NOT NULL);
CREATE TABLE diagnostics (ordinal INTEGER PRIMARY KEY, code TEXT NOT NULL, line INTEGER, id TEXT, detail TEXT);
CREATE TABLE heads (sha TEXT PRIMARY KEY);
CREATE TABLE _lines (count INTEGER NOT NULL);
CREATE TABLE replay_metadata (ledger_name TEXT NOT NULL, ledger_type TEXT, projection_version INTEGER NOT NULL,
                      record_count INTEGER NOT NULL, script_sha256 TEXT NOT NULL, output_version INTEGER NOT NULL,
                      table_name TEXT NOT NULL, columns_json TEXT NOT NULL, source_sha256 TEXT NOT NULL);
CREATE TABLE source_blocks (n INTEGER PRIMARY KEY, sha BLOB NOT NULL, chain BLOB NOT NULL);
"""
#: Created after the bulk insert of a full replay: building an index once is faster than maintaining it.
#: Only the lookups docket makes (an append finds a record by ID, extending checks a sha); each index
#: costs a full replay a sort of every row, and SQLite builds automatic indexes for ad-hoc joins.
GENERIC_INDEXES = """
CREATE UNIQUE INDEX records_by_sha ON records(sha);
CREATE INDEX records_by_id ON records(id);
CREATE INDEX records_by_record_id ON records(record_id);
"""

STATE_COLUMNS = {
    "log": (("position", "INTEGER"), ("value", "TEXT")),
    "set": (("identity", "TEXT"), ("value", "TEXT")),
    "map": (("key", "TEXT"), ("value", "TEXT")),
    "table": (("key", "TEXT"), ("value", "TEXT")),
    "counter": (("name", "TEXT"), ("value", "INTEGER")),
}

NOTES_DDL = """
CREATE TABLE notes (id TEXT NOT NULL PRIMARY KEY, subject TEXT, note TEXT, reason TEXT, created_at TEXT,
                    record_sha TEXT);
CREATE TABLE note_citations (note_id TEXT NOT NULL, ordinal INTEGER NOT NULL, citation_type TEXT, path TEXT,
                    start_line INTEGER, end_line INTEGER, commit_sha TEXT, content_sha256 TEXT,
                    PRIMARY KEY (note_id, ordinal));
CREATE TABLE note_votes (record_id TEXT NOT NULL PRIMARY KEY, note_id TEXT, vote TEXT, reason TEXT, created_at TEXT);
CREATE INDEX note_votes_by_note ON note_votes(note_id);
CREATE VIEW note_state AS
WITH v AS (
  SELECT note_id,
         SUM(vote = 'up') AS upvotes,
         SUM(vote = 'down') AS downvotes,
         MAX(created_at) AS last_vote_at,
         MAX(CASE WHEN vote = 'up' THEN created_at END) AS last_positive_vote_at
  FROM note_votes GROUP BY note_id)
SELECT n.id AS note_id,
       COALESCE(v.upvotes, 0) AS upvotes,
       COALESCE(v.downvotes, 0) AS downvotes,
       COALESCE(v.upvotes, 0) - COALESCE(v.downvotes, 0) AS net_votes,
       v.last_vote_at,
       v.last_positive_vote_at
FROM notes n LEFT JOIN v ON v.note_id = n.id;
"""

NOTE_TABLES = {
    "notes": (("id", "text"), ("subject", "text"), ("note", "text"), ("reason", "text"), ("created_at", "text"),
              ("record_sha", "text")),
    "note_citations": (("note_id", "text"), ("ordinal", "integer"), ("citation_type", "text"), ("path", "text"),
                       ("start_line", "integer"), ("end_line", "integer"), ("commit_sha", "text"),
                       ("content_sha256", "text")),
    "note_votes": (("record_id", "text"), ("note_id", "text"), ("vote", "text"), ("reason", "text"),
                   ("created_at", "text")),
    "note_state": (("note_id", "text"), ("upvotes", "integer"), ("downvotes", "integer"), ("net_votes", "integer"),
                   ("last_vote_at", "text"), ("last_positive_vote_at", "text")),
}  # fmt: skip


def _key_column(ltype: str) -> str:
    return STATE_COLUMNS[ltype][0][0]


def create_tables(conn: sqlite3.Connection, ledger: Ledger) -> None:
    """The generic tables plus the ledger type's state tables, empty."""
    # Statement by statement: executescript would commit the caller's transaction.
    _script(conn, GENERIC_DDL)
    if ledger.type in STATE_COLUMNS:
        (key, ktype), (value, vtype) = STATE_COLUMNS[ledger.type]
        conn.execute(f'CREATE TABLE state ("{key}" {ktype} NOT NULL PRIMARY KEY, "{value}" {vtype})')
    elif ledger.type == "notes":
        _script(conn, NOTES_DDL)


def _script(conn: sqlite3.Connection, ddl: str) -> None:
    for statement in ddl.split(";"):
        if statement.strip():
            conn.execute(statement)


def tables(ledger: Ledger) -> dict[str, list[tuple[str, str]]]:
    """The tables the ledger's projection offers for its current state, with their (column, type)s."""
    if ledger.type in STATE_COLUMNS:
        out = {
            "state": [
                (n, t.lower() if n != "value" or t == "INTEGER" else "json") for n, t in STATE_COLUMNS[ledger.type]
            ]
        }
    elif ledger.type == "notes":
        out = {name: list(cols) for name, cols in NOTE_TABLES.items()}
    else:
        out = {"records": [("ordinal", "integer"), ("id", "text"), ("sha", "text"), ("type", "text"),
                              ("timestamp", "text"), ("payload", "json"), ("line", "integer"),
                              ("record_id", "text")]}  # fmt: skip
    return out


def _metadata_rows(ledger: Ledger, count: int, digest: str) -> list[tuple]:
    script = hashlib.sha256(f"builtin:{ledger.type or 'records'}".encode()).hexdigest()
    return [
        (ledger.name, ledger.type, PROJECTION_VERSION, count, script, OUTPUT_VERSION, name,
         json.dumps([{"name": n, "type": t} for n, t in cols]), digest)
        for name, cols in tables(ledger).items()
    ]  # fmt: skip


# -- the source's content digest: what proves the projection current by content (docs/typed-ledgers.md) --

#: The source is digested in blocks of this many bytes, so an append rehashes only its last block and
#: what it added (the bytes it already read), never the whole file.
BLOCK = 1 << 16


def block_digests(data: bytes | memoryview) -> list[bytes]:
    """SHA-256 of each BLOCK-byte block of data (which begins at a block's first byte)."""
    view = memoryview(data)
    sha = hashlib.sha256
    return [sha(view[i : i + BLOCK]).digest() for i in range(0, len(view), BLOCK)]


def chain(blocks: list[bytes], before: bytes = b"") -> list[bytes]:
    """The running digest after each block: SHA-256 of the previous one and the block's digest."""
    out, sha = [], hashlib.sha256
    for block in blocks:
        before = sha(before + block).digest()
        out.append(before)
    return out


def source_digest(blocks: list[bytes]) -> str:
    """The content digest of a source from its block digests: ``sha256:`` and the last running digest."""
    return "sha256:" + (chain(blocks)[-1].hex() if blocks else hashlib.sha256(b"").hexdigest())


def _block_rows(first: int, blocks: list[bytes], before: bytes) -> list[tuple]:
    return list(zip(range(first, first + len(blocks)), blocks, chain(blocks, before), strict=True))


def set_blocks(conn: sqlite3.Connection, first: int, data: bytes | memoryview) -> str:
    """Replace the block digests from block ``first`` on by those of data (the source's bytes from that
    block's first byte to its end); store and return the new content digest."""
    row = conn.execute("SELECT chain FROM source_blocks WHERE n = ?", (first - 1,)).fetchone()
    conn.execute("DELETE FROM source_blocks WHERE n >= ?", (first,))
    rows = _block_rows(first, block_digests(data), row[0] if row else b"")
    conn.executemany("INSERT INTO source_blocks VALUES (?, ?, ?)", rows)
    last = rows[-1][2] if rows else row[0] if row else None
    digest = "sha256:" + (last.hex() if last is not None else hashlib.sha256(b"").hexdigest())
    conn.execute("UPDATE replay_metadata SET source_sha256 = ?", (digest,))
    return digest


class MemState:
    """The state of a full replay, in memory."""

    def __init__(self, pins: dict | None = None) -> None:
        self.pins = pins or {}
        self.items: dict[str, object] = {}
        self.log: list[object] = []
        self.notes: dict[str, tuple] = {}
        self.citations: list[tuple] = []
        self.votes: list[tuple] = []
        # The hot methods as the containers' own (C) methods: a replay calls them once per record.
        self.get = self.items.get  # type: ignore[method-assign]
        self.put = self.items.__setitem__  # type: ignore[method-assign]
        self.log_append = self.log.append  # type: ignore[method-assign]
        self.has_note = self.notes.__contains__  # type: ignore[method-assign]

    def get(self, key: str) -> object | None:
        return self.items.get(key)

    def put(self, key: str, value: object) -> None:
        self.items[key] = value

    def delete(self, key: str) -> None:
        self.items.pop(key, None)

    def log_append(self, value: object) -> None:
        self.log.append(value)

    def has_note(self, note_id: str) -> bool:
        return note_id in self.notes

    def add_note(self, note_id: str, op: dict, created_at: str, sha: str) -> None:
        self.notes[note_id] = (note_id, op["subject"], op["note"], op["reason"], created_at, sha)
        self.citations.extend(_citation_rows(note_id, op, self.pins))

    def add_vote(self, record_id: str, op: dict, created_at: str) -> None:
        self.votes.append((record_id, op["note_id"], op["vote"], op.get("reason"), created_at))


def _citation_rows(note_id: str, op: dict, pins: dict) -> list[tuple]:
    """note_citations rows: the pins from the pins file (``typed.pins``), or those an older docket record
    holds in the citation itself; none for a note gh-aw wrote."""
    rows = []
    for i, c in enumerate(op["citations"]):
        commit, digest = pins.get((note_id, i)) or (c.get("commit"), c.get("content_sha256"))
        rows.append((note_id, i, c["type"], c["path"], c.get("start_line"), c.get("end_line"), commit, digest))
    return rows


class SqlState:
    """The projection's own rows as a state: an append changes only the rows its operations touch."""

    def __init__(self, conn: sqlite3.Connection, ledger: Ledger, pins: dict | None = None) -> None:
        self.pins = pins or {}
        self.conn = conn
        self.ledger = ledger
        self.key = _key_column(ledger.type) if ledger.type in STATE_COLUMNS else ""

    def get(self, key: str) -> object | None:
        row = self.conn.execute(f'SELECT value FROM state WHERE "{self.key}" = ?', (key,)).fetchone()
        if row is None:
            return None
        return row[0] if self.ledger.type == "counter" else json.loads(row[0])

    def put(self, key: str, value: object) -> None:
        stored = value if self.ledger.type == "counter" else canonical.dumps(value)
        self.conn.execute(f'INSERT OR REPLACE INTO state ("{self.key}", value) VALUES (?, ?)', (key, stored))

    def delete(self, key: str) -> None:
        self.conn.execute(f'DELETE FROM state WHERE "{self.key}" = ?', (key,))

    def log_append(self, value: object) -> None:
        (count,) = self.conn.execute("SELECT COALESCE(MAX(position) + 1, 0) FROM state").fetchone()
        self.conn.execute("INSERT INTO state (position, value) VALUES (?, ?)", (count, canonical.dumps(value)))

    def has_note(self, note_id: str) -> bool:
        return self.conn.execute("SELECT 1 FROM notes WHERE id = ?", (note_id,)).fetchone() is not None

    def add_note(self, note_id: str, op: dict, created_at: str, sha: str) -> None:
        self.conn.execute(
            "INSERT INTO notes VALUES (?, ?, ?, ?, ?, ?)",
            (note_id, op["subject"], op["note"], op["reason"], created_at, sha),
        )
        self.conn.executemany(
            "INSERT INTO note_citations VALUES (?, ?, ?, ?, ?, ?, ?, ?)", _citation_rows(note_id, op, self.pins)
        )

    def add_vote(self, record_id: str, op: dict, created_at: str) -> None:
        self.conn.execute(
            "INSERT INTO note_votes VALUES (?, ?, ?, ?, ?)",
            (record_id, op["note_id"], op["vote"], op.get("reason"), created_at),
        )


#: The envelope type gh-aw's persistence job gives every record; the operation is in the payload.
GH_AW_TYPE = envelope.GH_AW_TYPE


def operation_of(ledger: Ledger, record: envelope.Record) -> tuple[dict, str]:
    """The record's validated operation and its record ID; raises ``ops.OpError``.

    Two record formats hold an operation. docket's: the envelope ``type`` is the operation's name
    and the envelope ``id`` the record ID. gh-aw's: ``type`` is ``ledger_append``, and for every
    ledger but notes the payload carries the deterministic record ID as ``id`` beside the operation
    (a notes payload must not: there the envelope ``id`` is the record ID). See docs/typed-ledgers.md.
    """
    payload, rid = record.payload, record.id
    if record.type == GH_AW_TYPE and isinstance(payload, dict) and "id" in payload:
        if ledger.type == "notes":
            raise ops.OpError("a notes payload must not duplicate the envelope ID (gh-aw's rule)")
        rid = payload["id"]
        if not isinstance(rid, str) or not rid.strip() or len(rid.encode("utf-8")) > ops.NOTE_ID_MAX:
            raise ops.OpError(f"the payload id must be a nonempty string of at most {ops.NOTE_ID_MAX} bytes")
        payload = {k: v for k, v in payload.items() if k != "id"}
    op = ops.validate(ledger, payload, trusted=True)
    if ledger.type is not None and record.type not in (GH_AW_TYPE, op["operation"]):
        raise ops.OpError(f"the record type {record.type!r} differs from its operation {op['operation']!r}")
    return op, rid


def _is_vote(record: envelope.Record) -> bool:
    payload = record.payload
    return record.type == "vote" or (
        record.type == GH_AW_TYPE and isinstance(payload, dict) and payload.get("operation") == "vote"
    )


def step(ledger: Ledger, record: envelope.Record, state: ops.State) -> dict:
    """Validate and apply one record's operation; raises ``ops.OpError``."""
    op, rid = operation_of(ledger, record)
    if ledger.type is not None:
        ops.apply(ledger, op, rid, record.timestamp, record.sha, state)
    return op


class _LostInserts:
    """Table keys a branch inserted after another branch had: that branch's later updates and deletes.

    Two branches that each insert key K merge into a history where the first insert in replay order
    wins and the other is skipped. An ``update`` or ``delete`` of K written on the losing branch (its
    history holds the skipped insert but not the winning one) meant the row its branch inserted, so
    it is skipped too, not applied to the winner's row. A record written after the merge sees both
    inserts and applies.
    """

    def __init__(self, ordered: list[envelope.Record]) -> None:
        self.present = {r.sha: r for r in ordered}
        self.inserted_by: dict[str, str] = {}  # key -> the sha whose insert or upsert made its current row
        self.lost_by: dict[str, frozenset] = {}  # sha -> keys whose insert its history lost

    def check(self, record: envelope.Record, lost: frozenset) -> None:
        payload = record.payload
        if not lost or not isinstance(payload, dict) or payload.get("operation") not in ("update", "delete"):
            return
        key = payload.get("key")
        if key in lost and not self._sees(record, self.inserted_by.get(key)):
            raise ops.OpError(
                f"table key {key!r}: this branch's insert of it was skipped (another branch inserted it first), "
                f"so its {payload['operation']} is skipped too"
            )

    def _sees(self, record: envelope.Record, target: str | None) -> bool:
        """target is record's ancestor (a walk up its parents: only ever for a losing branch's update)."""
        todo, seen = list(record.parents), set()
        while todo:
            sha = todo.pop()
            if sha == target:
                return True
            if sha not in seen and sha in self.present:
                seen.add(sha)
                todo.extend(self.present[sha].parents)
        return False

    def done(self, record: envelope.Record, lost: frozenset, op: dict | None, key_field: str) -> None:
        payload = record.payload if op is None else op
        if isinstance(payload, dict) and payload.get("operation") in ("insert", "upsert"):
            value = payload.get("value")
            if isinstance(value, dict) and isinstance(value.get(key_field), str):
                if op is not None:
                    self.inserted_by[value[key_field]] = record.sha
                elif payload["operation"] == "insert":
                    lost |= {value[key_field]}
        if lost:
            self.lost_by[record.sha] = lost


def replay(
    ledger: Ledger, data: bytes, pins: dict | None = None
) -> tuple[list[envelope.Record], MemState, list[envelope.Diagnostic], list[str]]:
    """Records in replay order, the resulting state, every diagnostic, and the heads."""
    records, diagnostics = envelope.read(data)
    ordered, more, heads = envelope.order(records)
    diagnostics += more
    state = MemState(pins)
    if ledger.type == "notes":
        # Notes first, then votes, so a vote never fails merely because it sorts before its note.
        votes = [_is_vote(r) for r in ordered]
        passes = [
            [r for r, v in zip(ordered, votes, strict=True) if not v],
            [r for r, v in zip(ordered, votes, strict=True) if v],
        ]
    else:
        passes = [ordered]
    inserts = _LostInserts(ordered) if ledger.type == "table" else None
    lost: frozenset = frozenset()
    for batch in passes:
        for record in batch:
            op = None
            if inserts is not None and inserts.lost_by:
                lost = frozenset().union(*[inserts.lost_by.get(p, ()) for p in record.parents])
            try:
                if lost:
                    inserts.check(record, lost)  # type: ignore[union-attr]
                op = step(ledger, record, state)
            except ops.OpError as exc:
                diagnostics.append(envelope.Diagnostic("invalid-operation", record.line, record.id, f"{exc}; skipped"))
            if inserts is not None:
                inserts.done(record, lost, op, ledger.key or "")
    return ordered, state, diagnostics, heads


def state_rows(ledger: Ledger, state: MemState) -> list[tuple]:
    """The ``state`` table's rows, sorted by key."""
    text = canonical.dumps_parsed  # values come from records whose canonical form replay checked
    if ledger.type == "log":
        return [(i, text(v)) for i, v in enumerate(state.log)]
    if ledger.type == "counter":
        return sorted(state.items.items())
    return sorted((k, text(v)) for k, v in state.items.items())


def build(ledger: Ledger, pins: dict | None = None) -> callable:
    """A ``db.Build`` that fills an empty database with a full replay of the ledger file's bytes (and a
    notes ledger's citation pins, ``typed.pins``)."""

    def _build(conn: sqlite3.Connection, data: bytes) -> None:
        with store.gc_paused():  # parsed records hold no cycles; the collector would only rescan them
            ordered, state, diagnostics, heads = replay(ledger, data, pins)
        create_tables(conn, ledger)
        rid = write.record_id_of
        conn.executemany(
            "INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            ((i, r.id, r.sha, r.type, r.timestamp, r.payload_text, r.line, rid(r)) for i, r in enumerate(ordered)),
        )
        conn.executemany("INSERT INTO parents VALUES (?, ?)", [(r.sha, p) for r in ordered for p in r.parents])
        write_diagnostics(conn, diagnostics)
        conn.executemany("INSERT INTO heads VALUES (?)", ((h,) for h in heads))
        conn.execute("INSERT INTO _lines VALUES (?)", (data.count(b"\n"),))  # so an append knows its line
        if ledger.type in STATE_COLUMNS:
            conn.executemany("INSERT INTO state VALUES (?, ?)", state_rows(ledger, state))
        elif ledger.type == "notes":
            conn.executemany("INSERT INTO notes VALUES (?, ?, ?, ?, ?, ?)", state.notes.values())
            conn.executemany("INSERT INTO note_citations VALUES (?, ?, ?, ?, ?, ?, ?, ?)", state.citations)
            conn.executemany("INSERT INTO note_votes VALUES (?, ?, ?, ?, ?)", state.votes)
        blocks = block_digests(data)
        conn.executemany("INSERT INTO source_blocks VALUES (?, ?, ?)", _block_rows(0, blocks, b""))
        conn.executemany(
            "INSERT INTO replay_metadata VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            _metadata_rows(ledger, len(ordered), source_digest(blocks)),
        )
        _script(conn, GENERIC_INDEXES)

    return _build


def write_diagnostics(conn: sqlite3.Connection, diagnostics: list[envelope.Diagnostic]) -> None:
    """Add diagnostics to the projection's table, sorted by line for a stable listing."""
    rows = sorted(diagnostics, key=lambda d: (d.line or 0, d.code))
    conn.executemany(
        "INSERT INTO diagnostics (code, line, id, detail) VALUES (?, ?, ?, ?)",
        ((d.code, d.line, d.id, d.detail) for d in rows),
    )


def apply_new(conn: sqlite3.Connection, ledger: Ledger, record: envelope.Record, pins: dict | None = None) -> None:
    """Add one record that follows every current head to the projection, applying its operation."""
    (ordinal,) = conn.execute("SELECT COALESCE(MAX(ordinal) + 1, 0) FROM records").fetchone()
    step(ledger, record, SqlState(conn, ledger, pins))
    conn.execute(
        "INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (ordinal, record.id, record.sha, record.type, record.timestamp, record.payload_text, record.line,
         write.record_id_of(record)),
    )  # fmt: skip
    conn.executemany("INSERT INTO parents VALUES (?, ?)", ((record.sha, p) for p in record.parents))
    conn.execute("DELETE FROM heads")
    conn.execute("INSERT INTO heads VALUES (?)", (record.sha,))
    conn.execute("UPDATE replay_metadata SET record_count = record_count + 1")


def heads(conn: sqlite3.Connection) -> list[str]:
    """The projection's current heads, sorted."""
    return [row[0] for row in conn.execute("SELECT sha FROM heads ORDER BY sha")]


def extend(ledger: Ledger, pins: dict | None = None) -> callable:
    """Extend a projection: apply appended lines when each follows exactly the current heads, else ask for a rebuild."""

    def _extend(conn: sqlite3.Connection, data: bytes, start: int) -> bool:
        if ledger.type in ("notes", "table") and conn.execute("SELECT 1 FROM diagnostics LIMIT 1").fetchone():
            # A new note could revive a skipped vote, an update could follow a skipped insert
            # (step's lost keys): only a full replay decides.
            return False
        tail = data[start:]
        if (start and not data[:start].endswith(b"\n")) or not tail.endswith(b"\n"):
            return False
        lines = data.count(b"\n", 0, start)
        for raw in tail.split(b"\n")[:-1]:
            lines += 1
            found = envelope.parse_line(raw, lines)
            if isinstance(found, envelope.Diagnostic) or list(found.parents) != heads(conn):
                return False
            if conn.execute("SELECT 1 FROM records WHERE id = ? OR sha = ?", (found.id, found.sha)).fetchone():
                return False
            try:
                apply_new(conn, ledger, found, pins)
            except ops.OpError:
                return False
        conn.execute("UPDATE _lines SET count = ?", (lines,))
        first = start // BLOCK
        set_blocks(conn, first, memoryview(data)[first * BLOCK :])
        return True

    return _extend
