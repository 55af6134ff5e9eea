"""What history learns that never changes, kept in one SQLite database per repository.

The database lives in the user cache dir (``ledger.db.cache_path("history",
<common git dir>)``), so every work tree of a repository shares it, and is
never written into the repository. Every fact in it is keyed by blob or
commit IDs, so it is true forever and a new commit only adds rows:

- ``blob_counts``: how many records a ledger blob holds (``docket log``'s
  binary search over a ledger line);
- ``merges``: a merge commit's recomputed renumbering of the ledger at
  ``relpath``, as a JSON array of ``[old, new, merge, source, branch, index]``
  (``[]`` when it renumbered nothing: a row proves the merge was recomputed);
- ``kept``: the parent whose ledger a merge commit's ledger extends
  (``History.kept_parent``: "" when none does), read for every merge on a
  ledger line (``docket log``) and otherwise found by reading both blobs;
- ``renames``: the ``(old, new)`` renames of a HEAD's history, oldest first
  (scopes that follow renames), for the newest ``RENAME_HEADS`` HEADs;
- ``answers``: what an ID the ledger does not hold resolved to (``history.answers``),
  keyed by everything the answer depends on (HEAD, the ledger's revision, the
  journal, the search limit), so a second ask reads one row; the newest
  ``ANSWERS`` are kept.

Reads are per key; writes wait in memory and go in one transaction when the
command ends (``flush``). A missing, corrupt or other-version database is
created again (``db.open_cache``); an unwritable cache dir, a locked
database or any SQLite error mid-command leaves the command without a cache:
history is then recomputed, never wrong, never a failed command.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

from docket_git.ledger import db

#: The schema version (``PRAGMA user_version``). 3: SQLite replaced the JSON
#: files (version 2 and the renames' version 1), which are never read. 4: a
#: merge's renumbering follows the parent whose IDs it kept, and names its source
#: (``origin/main``, ``bob's local main``). 5: ``answers``. 6: ``kept``.
SCHEMA_VERSION = 6
#: How many HEADs' renames are kept (a HEAD's list can be long; older ones are dropped).
RENAME_HEADS = 32
#: How many answers about IDs the ledger does not hold are kept (older ones are dropped).
ANSWERS = 512
SCHEMA = (
    "CREATE TABLE blob_counts (blob TEXT PRIMARY KEY, records INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE TABLE merges (relpath TEXT NOT NULL, merge TEXT NOT NULL, aliases TEXT NOT NULL, "
    "PRIMARY KEY (relpath, merge)) WITHOUT ROWID",
    "CREATE TABLE renames (head TEXT PRIMARY KEY, pairs TEXT NOT NULL)",
    "CREATE TABLE answers (key TEXT PRIMARY KEY, answer TEXT NOT NULL)",
    "CREATE TABLE kept (relpath TEXT NOT NULL, merge TEXT NOT NULL, parent TEXT NOT NULL, "
    "PRIMARY KEY (relpath, merge)) WITHOUT ROWID",
)


def path_for(common: Path) -> Path:
    """Where the history database of the repository with this common git directory lives."""
    return db.cache_path("history", Path(common))


class HistoryCache:
    """One command's connection to a repository's history database: per-key reads, one batched write."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._opened = False
        self._counts: dict[str, int] = {}
        self._merges: dict[tuple[str, str], str] = {}
        self._renames: dict[str, str] = {}
        self._answers: dict[str, str] = {}
        self._kept: dict[tuple[str, str], str] = {}

    def _connection(self) -> sqlite3.Connection | None:
        if not self._opened:
            self._opened = True
            self._conn = db.open_cache(self.path, SCHEMA_VERSION, SCHEMA)
        return self._conn

    def _failed(self, exc: sqlite3.Error) -> None:
        """Go without the cache for the rest of the command; a corrupt database is discarded for the next."""
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
            with contextlib.suppress(OSError), db.lock(self.path):
                db.discard(self.path)

    def _one(self, sql: str, params: tuple) -> tuple | None:
        conn = self._connection()
        if conn is None:
            return None
        try:
            return conn.execute(sql, params).fetchone()
        except sqlite3.Error as exc:
            self._failed(exc)
            return None

    # -- reads ------------------------------------------------------------------------------

    def count(self, blob: str) -> int | None:
        """A ledger blob's record count, if known."""
        row = self._one("SELECT records FROM blob_counts WHERE blob = ?", (blob,))
        return row[0] if row is not None and isinstance(row[0], int) else None

    def merge(self, relpath: str, merge: str) -> list[list] | None:
        """A merge's stored renumbering (alias rows as lists), if it was recomputed before."""
        row = self._one("SELECT aliases FROM merges WHERE relpath = ? AND merge = ?", (relpath, merge))
        if row is None:
            return None
        try:
            entries = json.loads(row[0])
        except (TypeError, ValueError, RecursionError):
            return None
        ok = isinstance(entries, list) and all(isinstance(e, list) and len(e) == 6 for e in entries)
        return entries if ok else None

    def kept(self, relpath: str, merge: str) -> str | None:
        """The parent a merge's ledger extends ("" when none does), if it was found before."""
        row = self._one("SELECT parent FROM kept WHERE relpath = ? AND merge = ?", (relpath, merge))
        return row[0] if row is not None and isinstance(row[0], str) else None

    def renames(self, head: str) -> list[tuple[str, str]] | None:
        """The renames of HEAD's history, if they were found before."""
        row = self._one("SELECT pairs FROM renames WHERE head = ?", (head,))
        if row is None:
            return None
        try:
            return [(old, new) for old, new in json.loads(row[0])]
        except (TypeError, ValueError, RecursionError):
            return None

    def answer(self, key: str) -> object | None:
        """The stored answer under key (``history.answers``), as JSON, if there is one."""
        row = self._one("SELECT answer FROM answers WHERE key = ?", (key,))
        if row is None:
            return None
        try:
            return json.loads(row[0])
        except (TypeError, ValueError, RecursionError):
            return None

    # -- writes (held until flush) -------------------------------------------------------------

    def put_count(self, blob: str, records: int) -> None:
        """Remember a blob's record count."""
        self._counts[blob] = records

    def put_merge(self, relpath: str, merge: str, aliases: list[list]) -> None:
        """Remember a merge's renumbering."""
        self._merges[(relpath, merge)] = json.dumps(aliases, separators=(",", ":"))

    def put_kept(self, relpath: str, merge: str, parent: str | None) -> None:
        """Remember the parent a merge's ledger extends (None: none does)."""
        self._kept[(relpath, merge)] = parent or ""

    def put_renames(self, head: str, pairs: list[tuple[str, str]]) -> None:
        """Remember the renames of HEAD's history."""
        self._renames[head] = json.dumps(pairs, separators=(",", ":"))

    def put_answer(self, key: str, answer: object) -> None:
        """Remember an answer under key."""
        self._answers[key] = json.dumps(answer, separators=(",", ":"))

    def flush(self) -> None:
        """Write what was put, in one transaction, and close; silently keeps nothing when it cannot write."""
        counts, merges, renames, answers, kept = self._counts, self._merges, self._renames, self._answers, self._kept
        self._counts, self._merges, self._renames, self._answers, self._kept = {}, {}, {}, {}, {}
        if counts or merges or renames or answers or kept:
            conn = self._connection()
            if conn is not None:
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    conn.executemany("INSERT OR IGNORE INTO blob_counts VALUES (?, ?)", counts.items())
                    conn.executemany(
                        "INSERT OR IGNORE INTO merges VALUES (?, ?, ?)",
                        [(*key, value) for key, value in merges.items()],
                    )
                    conn.executemany("INSERT OR IGNORE INTO kept VALUES (?, ?, ?)", [(*k, v) for k, v in kept.items()])
                    if renames:
                        conn.executemany("INSERT OR REPLACE INTO renames VALUES (?, ?)", renames.items())
                        conn.execute(
                            "DELETE FROM renames WHERE rowid NOT IN (SELECT rowid FROM renames ORDER BY rowid DESC LIMIT ?)",
                            (RENAME_HEADS,),
                        )
                    if answers:
                        conn.executemany("INSERT OR REPLACE INTO answers VALUES (?, ?)", answers.items())
                        conn.execute(
                            "DELETE FROM answers WHERE rowid NOT IN (SELECT rowid FROM answers ORDER BY rowid DESC LIMIT ?)",
                            (ANSWERS,),
                        )
                    conn.execute("COMMIT")
                except sqlite3.Error as exc:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                    self._failed(exc)
        self.close()

    def close(self) -> None:
        """Close the connection (a later read opens it again)."""
        conn, self._conn = self._conn, None
        self._opened = False
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
