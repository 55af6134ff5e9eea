"""Settling new records' derived state (retired, blocked, resolved, degree) against the rows already indexed."""

from __future__ import annotations

import heapq
import json
import sqlite3

from docket_git.ledger import canonical, model, project
from docket_git.ledger.index.schema import (
    _INSERT_HAYSTACK,
    _INSERT_NEW_PREREQUISITES,
    _INSERT_RECORD,
    _derived_columns,
    _haystack,
    _owned_rows,
    _record_row,
)


def _insert_new(
    conn: sqlite3.Connection,
    first: int,
    new: list[dict],
    derived: project.Derived,
    lines: list[bytes],
    ends: list[int],
    data: bytes,
    base: int = 0,
) -> None:
    """Insert the rows of new records (``ends``: offsets in ``data``, which starts at file offset ``base``)."""
    rows, rels, scopes, hays = [], [], [], []
    for i, (record, line, end) in enumerate(zip(new, lines, ends, strict=True)):
        offset = base + end - len(line) - (1 if data[end - 1 : end] == b"\n" else 0)
        digest = canonical.sha256(line)
        settled = _derived_columns(project.view(record, derived))
        rows.append(_record_row(first + i, record, *settled, offset, len(line), digest))
        hays.append((first + i, _haystack(record)))
        r, s = _owned_rows(record)
        rels.extend(r)
        scopes.extend(s)
    conn.executemany(_INSERT_RECORD, rows)
    conn.executemany(_INSERT_HAYSTACK, hays)
    conn.executemany("INSERT INTO relations VALUES (?, ?, ?, ?)", rels)
    conn.executemany("INSERT INTO scopes VALUES (?, ?, ?)", scopes)
    conn.execute(_INSERT_NEW_PREREQUISITES, (first,))


def _settle_changed(
    conn: sqlite3.Connection,
    first: int,
    removed: list[tuple[str, str, str]],
    new: list[dict],
    lines: list[bytes],
    ends: list[int],
    data: bytes,
    base: int = 0,
) -> None:
    """Index new records after a tail rewrite or a supersession, settling only what they change.

    Derived state flows forward (validation forbids forward references): a
    kept record's state can change only through what a removed or new record
    supersedes or answers, and then through the decisions that depend on it.
    So the kept records whose retirement changed are found from the
    supersessions, the decisions they block or unblock by following
    ``depends_on`` backwards in file order (stopping where nothing changed),
    the questions whose resolvers changed from those records' answers, and
    degrees from the citations that came and went. ``project.derive`` over
    every record gives the same rows; tests/test_index.py compares them.
    """
    step = conn.execute
    facts: dict[str, tuple[int, str, str, str, str] | None] = {}  # kept -> (seq, kind, recorded, retired_by, state)

    def fact(rid: str) -> tuple[int, str, str, str, str] | None:
        if rid not in facts:  # (new records are never asked: None stays true)
            facts[rid] = step(
                "SELECT seq, kind, recorded_state, retired_by, state FROM records WHERE id = ?", (rid,)
            ).fetchone()
        return facts[rid]

    new_ids = {r["id"]: first + i for i, r in enumerate(new)}
    new_by_id = {r["id"]: r for r in new}
    # Retirement: the last record in file order that supersedes a record retires it.
    retired: dict[str, str] = {}  # record -> retired_by, for every record whose value may have changed
    for target in {t for _, kind, t in removed if kind == "supersedes"} - new_ids.keys():
        row = step(
            "SELECT r.source FROM relations r JOIN records s ON s.id = r.source"
            " WHERE r.type = 'supersedes' AND r.target = ? ORDER BY s.seq DESC LIMIT 1",
            (target,),
        ).fetchone()
        retired[target] = row[0] if row else ""
    for record in new:
        for target in record.get("supersedes") or ():
            retired[target] = record["id"]

    def retired_by(rid: str) -> str:
        if rid in retired:
            return retired[rid]
        if rid in new_ids:
            return ""
        found = fact(rid)
        return found[3] if found else ""

    blocked: dict[str, list[str]] = {}  # decision -> blocked_by, for the decisions settled again

    def blocked_of(rid: str) -> list[str]:
        return blocked[rid] if rid in blocked else _column(conn, _BLOCKERS, rid)

    def kind_state(rid: str) -> tuple[str, str] | None:
        record = new_by_id.get(rid)
        if record is not None:
            return record["kind"], record["state"]
        found = fact(rid)
        return (found[1], found[2]) if found else None

    def block(rid: str, state: str, depends_on: list[str]) -> list[str]:
        """``project.settle``'s blocked_by for a decision, from the state settled so far."""
        if state != "adopted" or retired_by(rid):
            return [rid]
        reasons: list[str] = []
        for prereq in depends_on:
            target = kind_state(prereq)
            if target is None:
                reasons.append(prereq)
            elif target[0] == "claim":
                if target[1] != "accepted" or retired_by(prereq):
                    reasons.append(prereq)
            elif target[0] == "decision":
                why = blocked_of(prereq)
                if why:
                    reasons.append(prereq)
                    reasons.extend(why)
            else:
                reasons.append(prereq)
        return list(dict.fromkeys(reasons))

    # Availability changed for these records: what they answer is resolved again, what depends on them settled again.
    moved: set[str] = set()
    for rid, value in retired.items():
        found = None if rid in new_ids else fact(rid)
        if found is not None and found[3] != value:
            moved.add(rid)
    queue: list[tuple[int, str]] = []
    queued: set[str] = set()

    def requeue_dependers(rid: str) -> None:
        for source, seq, kind in step(
            "SELECT r.source, s.seq, s.kind FROM relations r JOIN records s ON s.id = r.source"
            " WHERE r.target = ? AND r.type = 'depends_on'",
            (rid,),
        ):
            if kind == "decision" and source not in queued:
                queued.add(source)
                heapq.heappush(queue, (seq, source))

    for rid in moved:
        found = fact(rid)
        if found is not None and found[1] == "decision" and rid not in queued:
            queued.add(rid)
            heapq.heappush(queue, (found[0], rid))
        requeue_dependers(rid)
    while queue:  # kept decisions, in file order: each settles after everything it depends on
        _, rid = heapq.heappop(queue)
        found = fact(rid)
        assert found is not None
        depends = step("SELECT depends_on FROM records WHERE id = ?", (rid,)).fetchone()[0]
        before = blocked_of(rid)
        now = block(rid, found[2], json.loads(depends))
        blocked[rid] = now
        if now != before:
            moved.add(rid)
            requeue_dependers(rid)
    for record in new:
        if record["kind"] == "decision":
            blocked[record["id"]] = block(record["id"], record["state"], record.get("depends_on") or [])

    # Resolution: every question a moved, removed or new record answers gets its resolvers again.
    questions = {target for _, kind, target in removed if kind == "answers"}
    for rid in moved:
        answers = step("SELECT answers FROM records WHERE id = ?", (rid,)).fetchone()[0]
        questions.update(json.loads(answers))
    for record in new:
        questions.update(record.get("answers") or ())

    def available(rid: str, kind: str, state: str) -> bool:
        if retired_by(rid):
            return False
        return state == "accepted" if kind == "claim" else kind == "decision" and not blocked_of(rid)

    resolved: dict[str, list[str]] = {}
    old_resolvers: set[str] = set()
    for question in questions:
        resolvers = [
            source
            for source, kind, state in step(
                "SELECT r.source, s.kind, s.recorded_state FROM relations r JOIN records s ON s.id = r.source"
                " WHERE r.target = ? AND r.type = 'answers' ORDER BY s.seq",
                (question,),
            )
            if available(source, kind, state)
        ]
        resolvers.extend(
            r["id"] for r in new if question in (r.get("answers") or ()) and available(r["id"], r["kind"], r["state"])
        )
        resolved[question] = list(dict.fromkeys(resolvers))
        old_resolvers.update(r for (r,) in step("SELECT resolver FROM resolved_by WHERE question = ?", (question,)))

    # Rows: the new records, then the kept records whose derived columns changed.
    derived = project.Derived(
        {rid: retired_by(rid) for rid in new_ids if retired_by(rid)},
        {rid: blocked[rid] for rid in new_ids if rid in blocked},
        {q: v for q, v in resolved.items() if v and q in new_ids},
    )
    _insert_new(conn, first, new, derived, lines, ends, data, base)
    changed = []
    for rid in (moved | questions) - new_ids.keys():
        found = fact(rid)
        if found is None:
            continue
        _, kind, recorded, _, stored = found
        if kind != "question":
            state = recorded
        elif rid in resolved:
            state = "resolved" if resolved[rid] else recorded
        else:
            state = stored  # its resolvers did not change
        applicable = None if kind != "decision" else int(not blocked_of(rid))
        changed.append((state, retired_by(rid), applicable, rid))
    conn.executemany("UPDATE records SET state = ?, retired_by = ?, applicable = ? WHERE id = ?", changed)
    for rid, why in blocked.items():
        step("DELETE FROM blocked_by WHERE decision = ?", (rid,))
        conn.executemany("INSERT INTO blocked_by VALUES (?, ?, ?)", ((rid, b, n) for n, b in enumerate(why)))
    for question, resolvers in resolved.items():
        step("DELETE FROM resolved_by WHERE question = ?", (question,))
        conn.executemany(
            "INSERT INTO resolved_by VALUES (?, ?, ?)", ((question, r, n) for n, r in enumerate(resolvers))
        )

    # Degrees: counted again for every record a citation or a resolution came to or went from.
    touched = {target for _, kind, target in removed if kind != "supersedes"}
    touched.update(ref for r in new for ref in _cites(r))
    touched.update(old_resolvers)
    touched.update(r for v in resolved.values() for r in v)
    touched.update(new_ids)
    conn.executemany(
        "UPDATE records SET degree = (SELECT count(*) FROM relations WHERE target = ?1 AND type != 'supersedes')"
        " + (SELECT count(*) FROM resolved_by WHERE resolver = ?1) WHERE id = ?1",
        ((rid,) for rid in touched),
    )


def _cited_state(conn: sqlite3.Connection, new: list[dict], limit: int) -> tuple[dict[str, dict], project.Derived]:
    """What settling ``new`` (records that supersede nothing) needs of the first ``limit`` indexed records.

    The records they cite (depends_on, answers) by ID, and those records'
    retired_by, blocked_by and resolved_by as the index holds them; citations
    of records among ``new`` are left to the caller. (When ``new`` are indexed
    already, a question's resolvers may list them: ``project.settle`` adds a
    resolver once.)
    """
    cited = {t for r in new for t in (*(r.get("depends_on") or ()), *(r.get("answers") or ()))}
    derived = project.Derived()
    by_id: dict[str, dict] = {}
    for rid in cited:
        row = conn.execute(
            "SELECT kind, recorded_state, retired_by FROM records WHERE id = ? AND seq < ?", (rid, limit)
        ).fetchone()
        if row is None:
            continue  # cites a record among the new ones
        by_id[rid] = {"id": rid, "kind": row[0], "state": row[1]}
        if row[2]:
            derived.retired_by[rid] = row[2]
        if row[0] == "decision":
            derived.blocked[rid] = _column(conn, _BLOCKERS, rid)
        if row[0] == "question":
            resolvers = _column(conn, "SELECT resolver FROM resolved_by WHERE question = ? ORDER BY position", rid)
            if resolvers:
                derived.resolved_by[rid] = resolvers
    return by_id, derived


def _settle_appended(
    conn: sqlite3.Connection,
    first: int,
    new: list[dict],
    lines: list[bytes],
    ends: list[int],
    data: bytes,
    base: int = 0,
) -> None:
    """Records appended after ``first`` that supersede nothing: settle each against what it cites.

    Such records change no earlier record's state except questions they
    resolve (``project.settle`` records those), so only their own rows and the
    resolved questions are written.
    """
    by_id, derived = _cited_state(conn, new, first)
    before = {q: len(v) for q, v in derived.resolved_by.items()}
    for record in new:
        by_id[record["id"]] = record
        project.settle(record, by_id, derived)
    _insert_new(conn, first, new, derived, lines, ends, data, base)
    conn.executemany(
        "INSERT INTO blocked_by VALUES (?, ?, ?)",
        ((r["id"], b, n) for r in new if r["kind"] == "decision" for n, b in enumerate(derived.blocked[r["id"]])),
    )
    # Degrees: each reference the new records make, and each question one of them now resolves.
    referenced = [ref for r in new for ref in _cites(r)]
    for question, resolvers in derived.resolved_by.items():
        done = before.get(question, 0)
        if len(resolvers) > done:
            conn.executemany(
                "INSERT INTO resolved_by VALUES (?, ?, ?)",
                ((question, r, n) for n, r in enumerate(resolvers) if n >= done),
            )
            conn.execute("UPDATE records SET state = 'resolved' WHERE id = ? AND kind = 'question'", (question,))
            referenced.extend(resolvers[done:])
    conn.executemany("UPDATE records SET degree = degree + 1 WHERE id = ?", ((ref,) for ref in referenced))


_BLOCKERS = "SELECT blocker FROM blocked_by WHERE decision = ? ORDER BY position"


def _column(conn: sqlite3.Connection, sql: str, rid: str) -> list[str]:
    """The one column of the rows sql selects for rid, in order."""
    return [value for (value,) in conn.execute(sql, (rid,))]


def _cites(record: dict) -> list[str]:
    """The IDs a record cites in supports (each occurrence), depends_on and answers: what degree counts."""
    return [ref for name, ref in model.references(record) if name != "supersedes"]
