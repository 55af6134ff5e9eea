"""Putting a migrated ledger in place: keep the schema-1 original, then swap atomically.

The steps run in order from ``STEPS``; a crash between any two leaves a
ledger every command reads (the old one before the swap, the new one after),
and a rerun finishes the work.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from docket_git.errors import LedgerError
from docket_git.ledger import store
from docket_git.migrate.schema1 import BackupConflict
from docket_git.repo import files

# -- writing -------------------------------------------------------------------------


def backup_path(path: Path) -> Path:
    """Where the untouched schema-1 original is kept: ``ledger.jsonl.schema1``."""
    return path.with_name(path.name + ".schema1")


def temp_path(path: Path) -> Path:
    """The fully written, fsynced new ledger before it replaces the old one."""
    return path.with_name(path.name + ".migrating")


def backup_conflict(path: Path, original: bytes) -> str | None:
    """Why the backup slot is taken, or None when it is free or holds this very original."""
    backup = backup_path(path)
    try:
        kept = files.read_bytes(backup, store.root_of(path), files.LEDGER_CAP)
    except FileNotFoundError:
        return None
    except LedgerError as exc:
        return str(exc)
    except OSError as exc:
        return f"cannot read {backup}: {exc.strerror}"
    if kept == original:
        return None  # left by a crashed run: the same original
    return (
        f"{backup} already exists and differs from {path}; a second migration would overwrite the original. "
        f"Move {backup.name} aside (it is the schema-1 original of an earlier migration), then run again"
    )


def write_temp(path: Path, original: bytes, new: bytes) -> None:
    """Step 1: the new ledger, fully written and fsynced, at ``ledger.jsonl.migrating``."""
    store.write_synced(temp_path(path), new)


def keep_backup(path: Path, original: bytes, new: bytes) -> None:
    """Step 2: the original at ``ledger.jsonl.schema1`` (a hard link when the file system allows)."""
    backup = backup_path(path)
    if not os.path.lexists(backup):  # else backup_conflict() found it identical to the original
        try:
            os.link(path, backup)
        except OSError:
            store.write_atomic(backup, original)
    store.fsync_dir(path.parent)


def swap_in(path: Path, original: bytes, new: bytes) -> None:
    """Step 3: the temp file replaces the ledger in one rename."""
    os.replace(temp_path(path), path)
    store.fsync_dir(path.parent)


#: The swap, in order. A crash after any step leaves a ledger every command reads.
STEPS: tuple[Callable[[Path, bytes, bytes], None], ...] = (write_temp, keep_backup, swap_in)


def replace_ledger(path: Path, original: bytes, new: bytes) -> Path:
    """Swap the migrated bytes in; keep the original at ``.schema1``. Caller holds the exclusive lock.

    A crash before the last step leaves the old ledger in place and a rerun
    repeats the work; after it, the new one. Returns the backup path.
    """
    conflict = backup_conflict(path, original)
    if conflict:
        raise BackupConflict(conflict)
    try:
        for step in STEPS:
            step(path, original, new)
    except (OSError, LedgerError) as exc:
        with contextlib.suppress(OSError):
            temp_path(path).unlink()
        reason = exc.strerror if isinstance(exc, OSError) else str(exc)
        raise LedgerError(f"cannot migrate {path}: {reason}; the ledger is unchanged") from None
    return backup_path(path)
