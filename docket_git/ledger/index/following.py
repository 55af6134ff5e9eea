"""The index's part in an append the store makes: what it vouches for before the write, and catching up after it.

The store (``ledger.append``) validates the new records and writes them;
nothing here writes the ledger. Before the write, under the ledger's
exclusive lock, the index says what it already holds, so the store need not
read or validate it again: every byte of the open ledger (``tail``: then only
the file's tail is read, decision d109), or the prefix it still shares with
the bytes the store read (``prefix``). After the write it takes in the new
lines (``follow``). An index that is missing, locked out, corrupt, of another
version or in a cache dir that cannot be written vouches for nothing, and
what it cannot take in the next reader brings up to date: what a write does
never depends on it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

from docket_git.errors import LedgerError
from docket_git.ledger import db, jsonl, store
from docket_git.ledger.index import incremental
from docket_git.ledger.index.handle import known
from docket_git.ledger.index.incremental import _update_past, update
from docket_git.ledger.index.opening import _update_persistent, _usable
from docket_git.ledger.index.proof import _proven, _shared_prefix, _tail_proof
from docket_git.ledger.index.schema import _count, _meta, db_path
from docket_git.ledger.validate import Index as Known
from docket_git.repo import files


class Follower:
    """One append's view of the ledger's index, under the ledger's exclusive lock (and the index's, once taken)."""

    __slots__ = ("_stack", "conn", "held", "ledger", "prefix_held", "tail_held", "target")

    def __init__(self, ledger: Path, stack: contextlib.ExitStack) -> None:
        self.ledger = ledger
        self.target = db_path(ledger)
        self._stack = stack
        self.conn: sqlite3.Connection | None = None
        #: True once this process holds the index's lock (taken before it is read, kept until the append ends).
        self.held = False
        #: What the index vouched for: (bytes, records, lines) of the ledger it holds, and whether that was
        #: every byte of the open file, read from its tail (``tail``) or a prefix of bytes read whole (``prefix``).
        self.tail_held: tuple[int, int, int] | None = None
        self.prefix_held: tuple[int, int, int] | None = None

    def _open(self) -> sqlite3.Connection | None:
        """The index's connection, under its lock; None when there is no usable index file (or no lock)."""
        if self.conn is None and not self.held and self.target.exists():
            try:
                if not self._lock():
                    return None
                conn = db.open_wal(self.target)
                if _usable(conn) and _count(conn):
                    self.conn = conn
                    self._stack.callback(conn.close)
                else:
                    conn.close()
            except (OSError, sqlite3.Error):
                self.forget()
        return self.conn

    def _lock(self) -> bool:
        """Take the index's lock, waiting at most LOCK_WAIT seconds; False when another process kept it.

        The holder may be waiting for the ledger's lock, which this append
        holds: a build a session hook deferred (``finish_later``) takes the
        index's lock before the fork and the ledger's after it. Waiting on
        would deadlock; the append goes on without the index instead.
        """
        deadline = time.monotonic() + LOCK_WAIT
        while not self.held:
            fd = db.try_lock(self.target)
            if fd is not None:
                self._stack.callback(os.close, fd)
                self.held = True
            elif time.monotonic() >= deadline:
                return False
            else:
                time.sleep(0.01)
        return True

    def forget(self) -> None:
        """Vouch for nothing more: the store reads and validates the whole ledger itself."""
        self.tail_held = self.prefix_held = None
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def tail(self, fd: int) -> tuple[Known, int, bytes] | None:
        """(the validation index, base, the ledger's bytes from base on) when the index holds every byte of fd.

        ``fd``: the ledger, open for writing. The proof (``_tail_proof``) reads
        only the last bytes; ``base`` is at or before the checkpoint before the
        last and at least TAIL bytes before the end. None when it proves nothing.
        """
        conn = self._open()
        if conn is None:
            return None
        try:
            proof = _tail_proof(conn, self.ledger, fd)
            if proof is None:
                return None
            meta, base, data = proof
            count = _count(conn)
            self.tail_held = (meta["length"], count, meta["lines"])
            return known(conn, count), base, data
        except (OSError, sqlite3.Error):
            self.forget()
            return None

    def prefix(self, data: bytes) -> tuple[Known | None, int, int]:
        """(validation index, bytes, lines) of the prefix of ``data`` the index holds; (None, 0, 0): none of it.

        ``data``: the ledger's whole bytes, read under its exclusive lock.
        """
        conn = self._open()
        if conn is None:
            return None, 0, 0
        try:
            meta = _meta(conn)
            if meta.get("ledger") != str(self.ledger.resolve()):
                return None, 0, 0
            if _proven(conn, self.ledger, data):
                held = (meta["length"], _count(conn), meta["lines"])
            else:
                held = _shared_prefix(conn, data)
            if not held[1]:
                return None, 0, 0
            self.prefix_held = held
            return known(conn, held[1]), held[0], held[2]
        except (OSError, sqlite3.Error):
            self.forget()
            return None, 0, 0

    def follow(self, data: bytes, base: int, keep: int, payload: bytes, fd: int | None) -> None:
        """Take in ``payload``, written at ``keep``; ``data``: the ledger's bytes from ``base`` on, as read before.

        In place when the index vouched for what precedes the payload; else
        updated or rebuilt from the whole file. A failure leaves the index as it
        was: its meta rows still record the old stat, so the next reader finds
        it stale and brings it up to date.
        """
        with contextlib.suppress(OSError, sqlite3.Error, LedgerError, files.UnsafePath):
            st = os.fstat(fd) if fd is not None else None
            stat = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) if st else db.file_stat(self.ledger)
            conn = self.conn
            if conn is not None and self.tail_held is not None and len(payload) <= incremental.UPDATE_LIMIT:
                new = data[: keep - base] + payload
                conn.execute("BEGIN IMMEDIATE")
                try:
                    with jsonl.gc_paused():
                        _update_past(conn, self.ledger, new, stat, self.tail_held, base)
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                return
            whole = data[:keep] + payload if not base else _whole(self.ledger, fd)
            if conn is not None and self.prefix_held is not None:
                update(conn, self.ledger, whole, stat, prefix=self.prefix_held)
                return
            self.forget()
            if self._lock():
                _update_persistent(self.ledger, self.target, whole, stat, None).close()


#: Seconds an append waits for the index's lock before it writes without the index (``Follower._lock``).
LOCK_WAIT = 2.0


def _whole(ledger: Path, fd: int | None) -> bytes:
    """Every byte of the ledger (the store holds its exclusive lock: no batch is unfinished)."""
    if fd is None:
        raise OSError("no descriptor")
    return store.read_from(fd, 0, os.fstat(fd).st_size)


@contextlib.contextmanager
def follower(ledger: Path) -> Iterator[Follower]:
    """The ledger's index for one append; enter it under the ledger's exclusive lock (locks go ledger, then index)."""
    with contextlib.ExitStack() as stack:
        yield Follower(ledger, stack)
