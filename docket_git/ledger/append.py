"""The append: the store validates new records and writes them under the ledger's lock; the index follows.

``append`` is the one write path of claims, decisions and questions. Under the
ledger's exclusive lock the drafts get their IDs and are validated against the
ledger's records, then written after its last line at once, flushed and
fsynced; on any failure the ledger is left byte-identical. The index
(``index.follower``) vouches for what it already holds, so the store need not
read or validate that again (with the whole file vouched for, only its tail is
read and written, d109), and takes in the new lines after the write; with no
index file yet, an append that writes has it built first (d228). Without an
index the write, its output and its refusals are the same byte for byte
(tests/test_append_store.py).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from docket_git.ledger import index, recording, store
from docket_git.ledger.validate import Index as Known
from docket_git.repo import files


def append(ledger: Path, drafts: list[dict], *, dry_run: bool = False) -> list[dict]:
    """Allocate IDs, validate and append drafts all or nothing; return the records (``dry_run``: write nothing)."""
    store.prepare_directory(ledger, dry_run=dry_run)
    with contextlib.ExitStack() as stack:
        lock_fd = stack.enter_context(store.locked(ledger, exclusive=True))
        assert lock_fd is not None
        follower = stack.enter_context(index.follower(ledger))
        fd = None if store.journaled(lock_fd) else _open(ledger, stack)
        vouched = follower.tail(fd, build=not dry_run) if fd is not None else None
        records: list[dict] | None = None
        if vouched is not None:
            known, base, data = vouched
            keep = base + len(data)
            try:
                # A refusal here is the ledger's own (the index holds all of it): it is raised as it is.
                records = recording.prepare(known, drafts)
            except sqlite3.Error:
                follower.forget()
        if records is None:
            fd, base = None, 0  # the whole file: a killed writer's batch is cut off first
            data = store.writer_bytes(ledger, lock_fd)
            records, keep = _validated(ledger, data, drafts, follower)
        if dry_run:
            return records
        payload = store.write_records(ledger, lock_fd, data, keep, records, base=base, ledger_fd=fd)
        # Written and fsynced: from here on the ledger holds the records whatever becomes of the index.
        follower.follow(data, base, keep, payload, fd)
    return records


def _open(ledger: Path, stack: contextlib.ExitStack) -> int | None:
    """The ledger open for writing (closed with stack), or None (missing, unsafe): then it is read whole."""
    try:
        fd = files.open_fd(ledger, os.O_RDWR, store.root_of(ledger))
    except (OSError, files.UnsafePath):
        return None
    stack.callback(os.close, fd)
    return fd


def _validated(ledger: Path, data: bytes, drafts: list[dict], follower: index.Follower) -> tuple[list[dict], int]:
    """(records, the length of the ledger's valid bytes): the drafts validated against every record of data.

    Lines of the prefix the index vouches for are not validated again; when
    the index fails on the way, the whole ledger is.
    """
    try:
        known, start, line_no = follower.prefix(data)
        snap = _checked(ledger, data, start, line_no, known)
    except sqlite3.Error:
        follower.forget()
        snap = _checked(ledger, data, 0, 0, None)
    return recording.prepare(snap.index, drafts), snap.valid_length


def _checked(ledger: Path, data: bytes, start: int, line_no: int, known: Known | None) -> store.Snapshot:
    """The snapshot of data validated from ``start`` on (its ``index`` and ``valid_length``; no records kept).

    Every line goes through ``store.validated`` (``parse_line``, ``check_line``,
    ``Index.check``), whose messages a refusal carries.
    """
    snap = store.Snapshot(ledger, data)
    with store.gc_paused():
        for _ in store.validated(snap, start=start, line_no=line_no, known=known):
            pass
    return snap
