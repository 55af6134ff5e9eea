"""What an append changes for earlier records (``project.consequences``), read from the index."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from docket_git.ledger import project
from docket_git.ledger.index.proof import opened
from docket_git.ledger.index.schema import _count
from docket_git.ledger.index.settle import _cited_state


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
        answerers[question].append(source)
    for question, sources in answerers.items():
        answerers[question] = list(dict.fromkeys(sources))
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
    reopened = []
    for question in _in_file_order(conn, questions - set(after.retired_by), first):
        gone = resolvers(question, before)
        if (
            gone
            and not resolvers(question, after)
            and not any(r["id"] in after.resolved_by.get(question, ()) for r in new)
        ):
            reopened.append(f"{question} is open again: {project.no_longer_holds(gone, after)}")
    lines.extend(reopened)
    lines.extend(project.idle_answers(new, after))
    return lines


def _in_file_order(conn: sqlite3.Connection, ids: set[str], limit: int) -> list[str]:
    """The indexed records among ids before position limit, in file order."""
    rows = conn.execute(
        "SELECT id FROM records WHERE id IN (SELECT value FROM json_each(?)) AND seq < ? ORDER BY seq",
        (json.dumps(sorted(ids)), limit),
    )
    return [rid for (rid,) in rows]
