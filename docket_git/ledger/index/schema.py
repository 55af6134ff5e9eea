"""The index's tables, the constants its proof rests on, and how a record becomes rows.

The schema is documented in docs/sql.md (``docket sql --schema`` prints it).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from docket_git.ledger import db, model

#: Bump when the tables or what fills them change: an index of another version is rebuilt.
SCHEMA_VERSION = 8
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
  id TEXT NOT NULL,                     -- c12, d3, q7 (unique: records_id)
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
CREATE UNIQUE INDEX records_id ON records (id);
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

#: The tables alone: a build creates the indexes once its rows are in (several times faster; the unique
#: index on records.id too: kept up row by row it costs a cold 100k build about 0.1 s of CPU).
TABLES = SCHEMA[: SCHEMA.index("CREATE UNIQUE INDEX")]
#: Every table's name, in the schema's order.
TABLE_NAMES = tuple(line.split()[2] for line in TABLES.splitlines() if line.startswith("CREATE TABLE "))
INDEXES = [line for line in SCHEMA.splitlines() if line.startswith(("CREATE INDEX", "CREATE UNIQUE INDEX"))]
_RECORD_COLUMNS = 22
_INSERT_RECORD = f"INSERT INTO records VALUES ({', '.join('?' * _RECORD_COLUMNS)})"
_INSERT_HAYSTACK = "INSERT INTO haystacks VALUES (?, ?)"
#: The prerequisites rows of the records from position ? on, once their depends_on relations are in:
#: a build's every relation in one pass (once the indexes are in), an update's new records one by one.
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


def scope_kind(scope: str) -> str:
    """exact (a path), directory (``dir/``), glob, or component (a name with no ``/`` nor glob character)."""
    if _GLOB & set(scope):
        return "glob"
    if scope.endswith("/"):
        return "directory"
    return "exact" if "/" in scope or "\\" in scope else "component"


def _count(conn: sqlite3.Connection) -> int:
    """How many records conn indexes: seq numbers them from 0 without gaps, so the last seq says (no scan)."""
    return conn.execute("SELECT coalesce(max(seq) + 1, 0) FROM records").fetchone()[0]


def _meta(conn: sqlite3.Connection) -> dict:
    return dict(conn.execute("SELECT key, value FROM meta").fetchall())


def _derived_columns(view: dict) -> tuple[str, str, int | None]:
    applicable = view.get("applicable")
    return view["state"], view["retired_by"], None if applicable is None else int(applicable)


def _record_row(
    seq: int, record: dict, state: str, retired_by: str, applicable: int | None, offset: int, length: int, digest: str
) -> list:
    """A ``records`` row (a list: a build fills in retired_by and degree once they are known, ``_Build.flush``)."""
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
        0,  # degree: counted once the record's citers are in (_settle_changed, _settle_appended, _Build.flush)
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
    for kind in model.FLAT_RELATIONS:
        rels.extend((rid, kind, target, None) for target in record.get(kind) or ())
    scopes = [(rid, value, scope_kind(value)) for value in dict.fromkeys(record.get("scope") or ())]
    return rels, scopes
