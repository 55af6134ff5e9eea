"""A new clone's or work tree's index seeded from another's: copied, then updated past what the ledgers share.

Each ledger file has its own index (keyed by the file's path), so each
``git worktree add`` and each clone of a repository on this machine used to
build its index afresh: seconds of CPU at 100k records. Another index in the
cache usually holds nearly all of the new ledger already. So before a cold
build, ``seed`` looks at the cache's other indexes, most recently used
first, proves how far each shares the new ledger's bytes block by block
against its checkpoints (as an index is proven after a branch switch; one
of another ledger stops at its first 64 KB block), and copies the first
worth updating (SQLite's backup); the caller updates the copy past the shared prefix. The
copy is rewritten to name the new ledger and no file stat, so it can never
prove itself current: its rows are kept only as far as its block digests
match the new bytes. Nothing is shared after the copy.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from docket_git.ledger import db
from docket_git.ledger.index.proof import _shared_prefix
from docket_git.ledger.index.schema import SCHEMA_VERSION, _meta
from docket_git.ledger.index.update import _afresh

#: At most this many other indexes are looked at, most recently used first (each costs an open and one row).
LOOK_AT = 64


def seed(ledger: Path, target: Path, data: bytes) -> bool:
    """Copy to target (missing; its lock held) another index worth updating to data; True when one was copied."""
    others = []
    for source in target.parent.glob("*.sqlite"):
        with contextlib.suppress(OSError):
            if source != target:
                others.append((source.stat().st_mtime_ns, source))
    others.sort(reverse=True)
    for _, source in others[:LOOK_AT]:
        with contextlib.suppress(OSError, sqlite3.Error), contextlib.closing(_open(source)) as conn:
            # another ledger's index costs one 64 KB digest: the comparison stops at the first block that differs
            if _meta(conn).get("schema_version") == SCHEMA_VERSION and not _afresh(_shared_prefix(conn, data), data):
                _copy(conn, target, ledger)
                return True
    return False


def _open(source: Path) -> sqlite3.Connection:
    return sqlite3.connect(db.read_only_uri(source), uri=True, isolation_level=None)


def _copy(conn: sqlite3.Connection, target: Path, ledger: Path) -> None:
    """conn's database, as of now, renamed into place at target, naming ledger and proving no stat."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.seed.tmp")
    with db.replacing(tmp, target) as copy:
        conn.backup(copy)
        copy.execute("PRAGMA journal_mode=WAL")
        copy.executemany(
            "UPDATE meta SET value = ? WHERE key = ?",
            [(str(ledger.resolve()), "ledger"), (0, "size"), (0, "mtime_ns"), (0, "ctime_ns"), (0, "inode")],
        )
        copy.execute("DELETE FROM meta WHERE key IN ('revision', 'records_end')")
