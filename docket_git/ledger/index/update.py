"""Updating an index: only the lines past the prefix it still shares are validated and indexed; and the
index's part in an append the store makes (``follower``: vouch for what it holds, then catch up; ``effects``:
what it changed for earlier records).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from docket_git.errors import LedgerError
from docket_git.ledger import db, jsonl, project, store
from docket_git.ledger.index import schema
from docket_git.ledger.index.build import _fill
from docket_git.ledger.index.proof import (
    _checkpoints,
    _proven,
    _shared_prefix,
    _tail_proof,
    _update_persistent,
    _usable,
    _write_meta,
    known,
    opened,
)
from docket_git.ledger.index.schema import SCHEMA_VERSION, TABLE_NAMES, _count, _meta, db_path
from docket_git.ledger.index.settle import _cited_state, _settle_appended, _settle_changed
from docket_git.ledger.validate import Index as Known
from docket_git.repo import files


def update(
    conn: sqlite3.Connection, ledger: Path, data: bytes, stat: tuple, *, prefix: tuple[int, int, int] | None = None
) -> str:
    """Bring conn's tables to ``data``, the ledger's bytes as of ``stat``; "updated" or "rebuilt".

    Only the lines past the last checkpoint ``data`` still matches are
    validated and indexed. ``prefix``: what ``_prefix`` found, when the
    caller asked already. Raises ``LedgerError`` when the new lines do not
    validate; the tables are then left as they were.
    """
    with jsonl.gc_paused():
        shared, kept, lines = prefix if prefix is not None else _prefix(conn, ledger, data)
        conn.execute("BEGIN IMMEDIATE")
        try:
            if _afresh((shared, kept, lines), data):
                _clear(conn)
                _fill(conn, ledger, data, stat)
                how = "rebuilt"
            else:
                _update_past(conn, ledger, data, stat, (shared, kept, lines))
                how = "updated"
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return how


def _update_past(
    conn: sqlite3.Connection, ledger: Path, data: bytes, stat: tuple, prefix: tuple[int, int, int], base: int = 0
) -> None:
    """In conn's open write transaction: validate and index the lines past ``prefix`` (bytes, records, lines kept).

    ``data`` holds the ledger's bytes from offset ``base`` on: all of them
    (0), or a tail from at or before the checkpoint preceding ``prefix``'s
    end and the last TAIL bytes (``Follower.tail``). Offsets stored are the
    file's own.
    """
    shared, kept, lines = prefix
    removed = _truncate(conn, kept) if kept < _count(conn) else []  # their (source, type, target) relations
    at = shared - base
    snap = store.parse(ledger, data, records=False, start=at, line_no=lines, known=known(conn, kept))
    length = snap.valid_length
    found, ends = jsonl.whole_lines(data, at, length)
    new = snap.tail
    # The last shared checkpoint may end a short block (the file's old end), or a last line
    # without its newline: blocks are cut again from the checkpoint before it, so appends do
    # not leave a trail of small blocks and the checkpoints are the ones a fresh build cuts.
    start, before, before_lines = shared, kept, lines
    row = conn.execute(
        "SELECT end_offset, records, lines FROM checkpoints WHERE end_offset < ? ORDER BY end_offset DESC LIMIT 1",
        (shared,),
    ).fetchone()
    if shared and (shared - (row[0] if row else 0) < schema.BLOCK or data[at - 1] != 0x0A):
        start, before, before_lines = (row[0], row[1], row[2]) if row is not None else (0, 0, 0)
    # Never: both are the non-blank whole lines of the same region, and the caller's tail starts
    # at or before the checkpoint.
    if snap.tail_ends != ends or start < base:
        raise LedgerError(f"{snap.path}: the index could not line up the ledger's records; run the command again")
    conn.execute("DELETE FROM checkpoints WHERE end_offset > ?", (start,))
    conn.executemany(
        "INSERT INTO checkpoints VALUES (?, ?, ?, ?)",
        _checkpoints(data, start - base, before, before_lines, length, base=base),
    )
    if not removed and not any(r.get("supersedes") for r in new):
        _settle_appended(conn, kept, new, found, ends, data, base)
    else:
        _settle_changed(conn, kept, removed, new, found, ends, data, base)
    _write_meta(conn, ledger, stat, data, length, lines + data.count(b"\n", at, length), base=base)
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('indexed_from', ?)", (kept,))


def _prefix(conn: sqlite3.Connection, ledger: Path, data: bytes) -> tuple[int, int, int]:
    """(bytes, records, lines) of what conn indexes that ``data`` still starts with (all zero: nothing)."""
    meta = _meta(conn)
    if meta.get("ledger") != str(ledger.resolve()) or meta.get("schema_version") != SCHEMA_VERSION:
        return 0, 0, 0
    return _shared_prefix(conn, data)


#: An update that would validate more new bytes than this builds afresh instead: the build streams
#: in slices, while an update holds every new record (and the old rows' structure) at once.
UPDATE_LIMIT = 8 << 20


def _afresh(prefix: tuple[int, int, int], data: bytes) -> bool:
    """True when the index is better built afresh than updated past ``prefix`` (bytes, records, lines kept)."""
    shared, kept, _ = prefix
    return not kept or len(data) - shared > UPDATE_LIMIT


def _clear(conn: sqlite3.Connection) -> None:
    """Empty every table and drop the secondary indexes (``_fill`` creates them once, at the end)."""
    for table in TABLE_NAMES:
        conn.execute(f"DELETE FROM {table}")
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL").fetchall():
        conn.execute(f"DROP INDEX {name}")


def _truncate(conn: sqlite3.Connection, kept: int) -> list[tuple[str, str, str]]:
    """Forget the records from position ``kept`` on, and every row they own; returns their relations."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS gone (id TEXT PRIMARY KEY)")
    conn.execute("DELETE FROM gone")
    conn.execute("INSERT INTO gone SELECT id FROM records WHERE seq >= ?", (kept,))
    removed = conn.execute(
        "SELECT source, type, target FROM relations WHERE source IN (SELECT id FROM gone)"
    ).fetchall()
    conn.execute("DELETE FROM relations WHERE source IN (SELECT id FROM gone)")
    conn.execute("DELETE FROM scopes WHERE record IN (SELECT id FROM gone)")
    conn.execute("DELETE FROM blocked_by WHERE decision IN (SELECT id FROM gone)")
    # Questions a gone record resolved are settled again (_settle_changed); their rows go with them.
    conn.execute("DELETE FROM resolved_by WHERE question IN (SELECT id FROM gone) OR resolver IN (SELECT id FROM gone)")
    conn.execute("DELETE FROM records WHERE seq >= ?", (kept,))
    conn.execute("DELETE FROM haystacks WHERE seq >= ?", (kept,))
    conn.execute("DELETE FROM prerequisites WHERE source >= ?", (kept,))
    return removed


# -- the index's part in an append (``ledger.append``) ------------------------------------------------


class Follower:
    """One append's view of the ledger's index, under the ledger's exclusive lock (and the index's, once taken).

    The store writes; before the write the index vouches for what it holds (every byte of the open file:
    ``tail``; a prefix of the bytes read: ``prefix``), after it the index takes in the new lines
    (``follow``). An index that cannot vouches for nothing: what a write does never depends on it.
    """

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

    def _open(self, fd: int | None = None) -> sqlite3.Connection | None:
        """The index's connection, under its lock; None when there is no usable index file (or no lock).

        ``fd``: the ledger, open for writing: with no index file yet it is built from that first
        (``_build_first``), so the store need not validate every line before the write and the index
        again after it.
        """
        if self.conn is None and not self.held and (fd is not None or self.target.exists()):
            try:
                if not self._lock():
                    return None
                if fd is not None and not self.target.exists() and not _build_first(self.ledger, self.target, fd):
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

    def tail(self, fd: int, *, build: bool = False) -> tuple[Known, int, bytes] | None:
        """(the validation index, base, the ledger's bytes from base on) when the index holds every byte of fd.

        ``fd``: the ledger, open for writing; only its tail is read (``_tail_proof``). None: it proves nothing.
        ``build``: with no index file yet, build it first (an append that will write: the index follows it).
        """
        conn = self._open(fd if build else None)
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
            if _proven(conn, self.ledger, data):
                meta = _meta(conn)
                held = (meta["length"], _count(conn), meta["lines"])
            else:
                held = _prefix(conn, self.ledger, data)
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
            if conn is not None and self.tail_held is not None and len(payload) <= UPDATE_LIMIT:
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
            if base and fd is None:
                raise OSError("no descriptor")  # never: a tail is read from the open file
            # Every byte of the ledger (the store holds its exclusive lock: no batch is unfinished).
            whole = store.read_from(fd, 0, os.fstat(fd).st_size) if base else data[:keep] + payload
            if conn is not None and self.prefix_held is not None:
                update(conn, self.ledger, whole, stat, prefix=self.prefix_held)
                return
            self.forget()
            if self._lock():
                _update_persistent(self.ledger, self.target, whole, stat).close()


def _build_first(ledger: Path, target: Path, fd: int) -> bool:
    """Under the index's lock, with no index file: build it from the open ledger; False when it was not built.

    Not built when the ledger's last line lacks its newline (the store reports a torn line once, as it
    cuts it off) or does not validate: then the store validates the ledger itself and refuses as it does
    without an index.
    """
    st = os.fstat(fd)
    if not st.st_size or os.pread(fd, 1, st.st_size - 1) != b"\n":
        return False
    data = store.read_from(fd, 0, st.st_size)
    try:
        _update_persistent(ledger, target, data, (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)).close()
    except LedgerError:
        return False
    return True


#: Seconds an append waits for the index's lock before it writes without the index (``Follower._lock``).
LOCK_WAIT = 2.0


@contextlib.contextmanager
def follower(ledger: Path) -> Iterator[Follower]:
    """The ledger's index for one append; enter it under the ledger's exclusive lock (locks go ledger, then index)."""
    with contextlib.ExitStack() as stack:
        yield Follower(ledger, stack)


# -- what an append changes for earlier records (``project.consequences``), read from the index -------


def effects(ledger: Path, records: list[dict], *, dry_run: bool) -> list[str] | None:
    """``project.consequences`` of records just appended (or, ``dry_run``, about to be), read from the index.

    Records that supersede nothing change no earlier record's state: their
    only effect to report is an ``answers`` that resolves nothing, which
    depends on the records they cite alone (``project.idle_answers``). None
    when that does not hold (a record supersedes, or the ledger has grown
    past them since): the caller derives the whole ledger.
    """
    with opened(ledger) as ix:
        count = _count(ix.conn)
        if dry_run:
            first = count
        else:
            row = ix.conn.execute("SELECT seq FROM records WHERE id = ?", (records[0]["id"],)).fetchone()
            if row is None or row[0] + len(records) != count:
                return None
            first = row[0]
        if any(r.get("supersedes") for r in records):
            return _supersession_effects(ix.conn, records, first)
        by_id, derived = _cited_state(ix.conn, records, first)
    for record in records:
        by_id[record["id"]] = record
        project.settle(record, by_id, derived)
    return project.idle_answers(records, derived)


#: The records the supersession targets (a JSON array) are, and the earlier records that depend on them,
#: directly or through other decisions, in file order: all whose state a supersession can change.
_AFFECTED = """
WITH RECURSIVE hit(id) AS (
  SELECT value FROM json_each(?1)
  UNION SELECT r.source FROM relations r INDEXED BY relations_target JOIN hit ON r.target = hit.id
  WHERE r.type = 'depends_on'
)
SELECT s.id, s.kind, s.recorded_state, s.retired_by, s.depends_on, s.answers
FROM hit CROSS JOIN records s ON s.id = hit.id WHERE s.seq < ?2 ORDER BY s.seq
"""


def _facts(conn: sqlite3.Connection, ids: Iterable[str], limit: int) -> dict[str, tuple[str, str, str, list[str]]]:
    """ID -> (kind, recorded state, retired_by, blocked_by) of the records among ids before position limit."""
    wanted = json.dumps(sorted(ids))
    facts: dict[str, tuple[str, str, str, list[str]]] = {}
    rows = conn.execute(
        "SELECT id, kind, recorded_state, retired_by FROM records WHERE id IN (SELECT value FROM json_each(?)) AND seq < ?",
        (wanted, limit),
    )
    for rid, kind, state, retired in rows:
        facts[rid] = (kind, state, retired, [])
    rows = conn.execute(
        "SELECT decision, blocker FROM blocked_by WHERE decision IN (SELECT value FROM json_each(?)) ORDER BY position",
        (wanted,),
    )
    for rid, blocker in rows:
        if rid in facts:
            facts[rid][3].append(blocker)
    return facts


def _supersession_effects(conn: sqlite3.Connection, new: list[dict], first: int) -> list[str]:
    """``project.consequences`` of ``new`` (records from position ``first`` on, some superseding), from the index.

    A supersession changes the state of no earlier record but its targets,
    the decisions that depend on them (through any chain of decisions) and
    the questions those answer. That subgraph is settled twice from the
    index's facts of everything around it, without the new records and with
    them; every other record's state is the same in both. Whether ``new``
    are indexed already (an append) or not (``--dry-run``) does not matter:
    nothing read here is a fact the new records change, but for the
    targets' retirement, which is set here.
    """
    retirements = {t: r["id"] for r in new for t in r.get("supersedes") or ()}
    affected = [
        {
            "id": rid,
            "kind": kind,
            "state": state,
            "retired": retired,
            "depends_on": json.loads(deps),
            "answers": json.loads(ans),
        }
        for rid, kind, state, retired, deps, ans in conn.execute(_AFFECTED, (json.dumps(sorted(retirements)), first))
    ]
    inside = {a["id"] for a in affected}
    questions = {q for a in affected for q in a["answers"]}
    answerers: dict[str, list[str]] = {q: [] for q in questions}
    rows = conn.execute(
        "SELECT r.target, r.source FROM relations r INDEXED BY relations_target CROSS JOIN records s ON s.id = r.source"
        " WHERE r.target IN (SELECT value FROM json_each(?)) AND r.type = 'answers' AND s.seq < ? ORDER BY s.seq",
        (json.dumps(sorted(questions)), first),
    )
    for question, source in rows:
        if source not in answerers[question]:
            answerers[question].append(source)
    cited = {t for r in new for t in (*(r.get("depends_on") or ()), *(r.get("answers") or ()))}
    around = {p for a in affected for p in a["depends_on"]} | {s for a in answerers.values() for s in a} | cited
    facts = _facts(conn, (around | questions) - inside, first)

    def settled(after: bool) -> tuple[project.Derived, dict[str, dict]]:
        derived = project.Derived()
        by_id: dict[str, dict] = {}
        for rid, (kind, state, retired, blocked) in facts.items():
            by_id[rid] = {"id": rid, "kind": kind, "state": state}
            if retired:
                derived.retired_by[rid] = retired
            if kind == "decision":
                derived.blocked[rid] = blocked
        for a in affected:
            if a["retired"] and a["id"] not in retirements:
                derived.retired_by[a["id"]] = a["retired"]
        if after:
            derived.retired_by.update(retirements)
        for a in affected:
            by_id[a["id"]] = a
            project.settle(a, by_id, derived)
        if after:
            for record in new:
                by_id[record["id"]] = record
                project.settle(record, by_id, derived)
        return derived, by_id

    before, _ = settled(False)
    after, by_id = settled(True)

    def resolvers(question: str, derived: project.Derived) -> list[str]:
        return [
            r
            for r in answerers[question]
            if r not in derived.retired_by
            and (
                (by_id[r]["kind"] == "claim" and by_id[r]["state"] == "accepted")
                or (by_id[r]["kind"] == "decision" and not derived.blocked[r])
            )
        ]

    lines: list[str] = []
    for a in affected:
        rid = a["id"]
        if a["kind"] == "decision" and rid not in after.retired_by and not before.blocked[rid] and after.blocked[rid]:
            lines.append(f"{rid} is now blocked: {project.blocked_because(after.blocked[rid], after)}")
    rows = conn.execute(
        "SELECT id FROM records WHERE id IN (SELECT value FROM json_each(?)) AND seq < ? ORDER BY seq",
        (json.dumps(sorted(questions - set(after.retired_by))), first),
    )
    for (question,) in rows:  # in file order
        gone = resolvers(question, before)
        if (
            gone
            and not resolvers(question, after)
            and not any(r["id"] in after.resolved_by.get(question, ()) for r in new)
        ):
            lines.append(f"{question} is open again: {project.no_longer_holds(gone, after)}")
    lines.extend(project.idle_answers(new, after))
    return lines
