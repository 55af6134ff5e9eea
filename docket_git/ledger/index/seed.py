"""A new work tree's index seeded from a sibling's: copied, then updated past what the two ledgers share.

``git worktree add`` gives each agent its own work tree, and each work tree
its own ledger file and index (the index is keyed by the ledger's path).
Built afresh, a 100k-record index costs seconds of CPU; the same ledger's
index in another work tree of the repository usually holds nearly all of
it. So before a cold build, ``seed`` copies (SQLite's backup) the sibling
index that shares a prefix with the new ledger's bytes, proven block by
block against its checkpoints exactly as an index is proven after a branch
switch, and the caller updates the copy past that prefix. The copy is
rewritten to name this ledger and no file stat, so it can never prove
itself current: only its checkpoints are trusted, and only as far as the
bytes match. Nothing is shared between work trees after the copy.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from docket_git.ledger import db
from docket_git.ledger.index.proof import _shared_prefix
from docket_git.ledger.index.schema import SCHEMA_VERSION, _meta, db_path
from docket_git.ledger.index.update import _afresh
from docket_git.repo import gitio


def seed(ledger: Path, target: Path, data: bytes) -> bool:
    """Copy to target (missing; its lock held) a sibling work tree's index worth updating to data; True if copied."""
    found = gitio.work_trees(ledger.parent)
    if found is None:
        return False
    here, others = found
    try:
        relative = ledger.resolve().relative_to(here)
    except ValueError:
        return False
    sources = [source for source in (db_path(root / relative) for root in others) if source.is_file()]
    sources.sort(key=lambda source: source.stat().st_mtime_ns, reverse=True)  # the freshest first
    for source in sources:
        with contextlib.suppress(OSError, sqlite3.Error), contextlib.closing(_open(source)) as conn:
            if _meta(conn).get("schema_version") == SCHEMA_VERSION and not _afresh(_shared_prefix(conn, data), data):
                _copy(conn, target, ledger)
                return True
    return False


def _open(source: Path) -> sqlite3.Connection:
    return sqlite3.connect(db.read_only_uri(source), uri=True, isolation_level=None)


def _copy(conn: sqlite3.Connection, target: Path, ledger: Path) -> None:
    """conn's database, as of now, renamed into place at target, naming ledger and proving no stat."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.seed.tmp")
    copy = sqlite3.connect(tmp, isolation_level=None)
    try:
        conn.backup(copy)
        copy.execute("PRAGMA journal_mode=WAL")
        copy.executemany(
            "UPDATE meta SET value = ? WHERE key = ?",
            [(str(ledger.resolve()), "ledger"), (0, "size"), (0, "mtime_ns"), (0, "ctime_ns"), (0, "inode")],
        )
        copy.execute("DELETE FROM meta WHERE key IN ('revision', 'records_end')")
    except BaseException:
        copy.close()
        db.discard(tmp)
        raise
    copy.close()
    fd = os.open(tmp, os.O_RDONLY)  # on disk before the rename, as a build is: a power loss leaves no torn copy
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, target)
