"""The append: drafts validated against the index and written under the ledger's lock; the index takes in the lines."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from docket_git.ledger import canonical, db, jsonl, recording, store
from docket_git.ledger.index import incremental
from docket_git.ledger.index.handle import known
from docket_git.ledger.index.incremental import _update_past, update
from docket_git.ledger.index.opening import _current_for, _for_bytes
from docket_git.ledger.index.proof import _tail_proof
from docket_git.ledger.index.schema import _count, _meta, db_path
from docket_git.repo import files


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
        if sum(len(canonical.line(r)) for r in records) > incremental.UPDATE_LIMIT:
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
