"""The cold build: every line validated and indexed a slice at a time, in a temporary file renamed into place."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from docket_git.digest import constructor as sha256_for
from docket_git.ledger import db, jsonl, project, store
from docket_git.ledger.index.proof import _checkpoints, _write_meta
from docket_git.ledger.index.schema import (
    _INSERT_HAYSTACK,
    _INSERT_PREREQUISITES,
    _INSERT_RECORD,
    INDEXES,
    TABLES,
    _haystack,
    _record_row,
    scope_kind,
)
from docket_git.ledger.model import FLAT_RELATIONS


def _build_file(ledger: Path, target: Path, data: bytes, stat: tuple) -> None:
    """Build the index of ``data`` in a temporary file beside target, then rename it into place.

    A disposable database needs no journal while it is built (``journal_mode=OFF``,
    ``synchronous=OFF``); it is switched to WAL before the rename, so readers
    never see it half built. On an invalid ledger the old file stays as it was.
    """
    for stale in target.parent.glob(f".{target.name}.*.tmp"):
        db.discard(stale)  # a build killed midway (builds run under the index lock: none is running now)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with db.replacing(tmp, target) as conn:  # built without a journal or syncs: fsynced before the rename
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        conn.executescript(TABLES)
        conn.execute("BEGIN")
        with jsonl.gc_paused():
            _fill(conn, ledger, data, stat)
        conn.execute("COMMIT")
        conn.execute("PRAGMA journal_mode=WAL")


def _fill(conn: sqlite3.Connection, ledger: Path, data: bytes, stat: tuple) -> None:
    """Index every line of ``data`` into empty tables without secondary indexes, validating as it goes.

    Lines are validated and inserted a slice at a time (``store.validated``), so memory holds one
    slice of records plus a small structural entry per record. A record's derived columns (state,
    retired_by, applicable, degree) depend on later records: a slice's rows wait until the next
    slice is validated (most citations are of recent records) and go in with the degree and
    retirement known by then; once every line is in, ``project.derive`` (the one projection)
    settles them all and only the rows that differ are updated. Then the checkpoints, the
    secondary indexes and the meta rows. Raises ``LedgerError`` at the first invalid line, with
    the exact path's message.
    """
    snap = store.Snapshot(path=ledger, data=data)
    build = _Build(conn, data)
    for records, ends in store.validated(snap):
        build.take(records, ends)
    build.flush()
    degree = build.degree
    derived = project.derive(build.structure)
    for resolvers in derived.resolved_by.values():
        for rid in resolvers:
            degree[rid] = degree.get(rid, 0) + 1
    settled = _settled(build.structure, derived, degree, build.written)
    conn.executemany("UPDATE records SET state = ?, retired_by = ?, applicable = ?, degree = ? WHERE seq = ?", settled)
    conn.executemany(
        "INSERT INTO blocked_by VALUES (?, ?, ?)",
        ((rid, b, n) for rid, why in derived.blocked.items() for n, b in enumerate(why)),
    )
    conn.executemany(
        "INSERT INTO resolved_by VALUES (?, ?, ?)",
        ((q, r, n) for q, who in derived.resolved_by.items() for n, r in enumerate(who)),
    )
    length = snap.valid_length
    conn.executemany(
        "INSERT INTO checkpoints VALUES (?, ?, ?, ?)", _checkpoints(data, 0, 0, 0, length, build.record_ends)
    )
    for statement in INDEXES:
        conn.execute(statement)
    conn.execute(_INSERT_PREREQUISITES)
    _write_meta(conn, ledger, stat, data, length, data.count(b"\n", 0, length))
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('indexed_from', 0)")


class _Build:
    """A cold build's running state: rows waiting a slice, structural entries, degrees and retirements so far."""

    __slots__ = (
        "conn",
        "data",
        "degree",
        "held",
        "record_ends",
        "retired",
        "seq",
        "sha256",
        "structure",
        "view",
        "written",
    )

    def __init__(self, conn: sqlite3.Connection, data: bytes) -> None:
        self.conn = conn
        self.data = data
        self.view = memoryview(data)
        self.sha256 = sha256_for(len(data))
        self.structure: list[dict] = []
        self.degree: dict[str, int] = {}
        self.record_ends: list[int] = []
        self.retired: dict[str, str] = {}  # retired ID -> the record retiring it, so far
        self.held: list[list] = []  # the previous slice's rows: citations from the next slice are counted first
        self.written: list[tuple[int, str]] = []  # (degree, retired_by) each row went in with
        self.seq = 0

    def take(self, records: list, ends: list[int]) -> None:
        """Index one validated slice: records and the offset past each."""
        rows, hays, rels, scopes = _rows(self, records, ends)
        del records
        self.record_ends.extend(ends)
        self.flush()
        self.held = rows
        conn = self.conn
        conn.executemany(_INSERT_RELATION, rels)
        conn.executemany(_INSERT_SCOPE, scopes)
        conn.executemany(_INSERT_HAYSTACK, hays)

    def flush(self) -> None:
        """Insert the held rows with the degree and retired_by known so far (``written`` notes them, in seq order)."""
        degree, retired, written = self.degree, self.retired, self.written
        for row in self.held:
            rid = row[1]
            row[5] = retired.get(rid, "")
            row[21] = degree.get(rid, 0)
            written.append((row[21], row[5]))
        self.conn.executemany(_INSERT_RECORD, self.held)
        self.held = []


_INSERT_RELATION = "INSERT INTO relations VALUES (?2, ?3, ?4, ?5)"
_INSERT_SCOPE = "INSERT INTO scopes VALUES (?2, ?3, ?4)"


def _rows(build: _Build, records: list, ends: list[int]) -> tuple[list[list], list[tuple], list[tuple], list[tuple]]:
    """The rows of validated records whose lines end at ``ends``, from ``build.seq`` on, noting as it goes
    each record's structural entry, its citations' degrees and its supersessions in ``build``.

    (records rows, haystacks rows, relations rows and scopes rows, each led by its record's seq.)
    """
    rows: list[list] = []
    hays: list[tuple] = []
    rels: list[tuple] = []
    scopes: list[tuple] = []
    kinds = _SCOPE_KINDS
    data, view, sha256, seq = build.data, build.view, build.sha256, build.seq
    degree, retired, structure = build.degree, build.retired, build.structure
    for record, end in zip(records, ends, strict=True):
        stop = end - 1 if data[end - 1] == 10 else end
        start = data.rfind(b"\n", 0, stop) + 1
        digest = sha256(view[start:stop]).hexdigest()  # type: ignore[operator]
        rid, kind, state = record["id"], record["kind"], record["state"]
        get = record.get
        applicable = (1 if state == "adopted" else 0) if kind == "decision" else None
        rows.append(_record_row(seq, record, state, "", applicable, start, stop - start, digest))
        hays.append((seq, _haystack(record)))
        entry = {"id": rid, "kind": kind, "state": state}
        supports = get("supports")
        if supports:
            for n, group in enumerate(supports):
                for target in group:
                    rels.append((seq, rid, "supports", target, n))
                    degree[target] = degree.get(target, 0) + 1
        for name in FLAT_RELATIONS:
            targets = get(name)
            if targets:
                entry[name] = targets
                for target in targets:
                    rels.append((seq, rid, name, target, None))
                    if name == "supersedes":
                        retired[target] = rid
                    else:
                        degree[target] = degree.get(target, 0) + 1
        scope = get("scope")
        if scope:
            for value in dict.fromkeys(scope):
                kind_of = kinds.get(value)
                if kind_of is None:
                    kind_of = kinds[value] = scope_kind(value)
                scopes.append((seq, rid, value, kind_of))
        structure.append(entry)
        seq += 1
    build.seq = seq
    return rows, hays, rels, scopes


#: Scope -> its kind, as ``scope_kind`` says (a ledger repeats few distinct scopes many times).
_SCOPE_KINDS: dict[str, str] = {}


def _settled(
    structure: list[dict], derived: project.Derived, degree: dict[str, int], written: list[tuple[int, str]]
) -> Iterator[tuple]:
    """(state, retired_by, applicable, degree, seq) of each row whose settled columns differ from those ``_fill`` wrote."""
    retired_by, blocked, resolved_by = derived.retired_by, derived.blocked, derived.resolved_by
    for seq, entry in enumerate(structure):
        rid, kind, state = entry["id"], entry["kind"], entry["state"]
        settled = state
        applicable = None
        if kind == "decision":
            applicable = 0 if blocked[rid] else 1
        elif kind == "question" and resolved_by.get(rid):
            settled = "resolved"
        retired = retired_by.get(rid, "")
        count = degree.get(rid, 0)
        if (
            settled != state
            or (count, retired) != written[seq]
            or (kind == "decision" and applicable != (1 if state == "adopted" else 0))
        ):
            yield settled, retired, applicable, count, seq
