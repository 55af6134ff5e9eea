"""Derived views over validated records: retirement, resolution, applicability.

Validation forbids forward references, so every prerequisite precedes the
record that names it: one pass in file order computes applicability without
recursion, however long the chains.
"""

from __future__ import annotations

from collections.abc import Mapping

from docket_git.plain import Plain


class Derived(Plain):
    """What projection derives for a list of records, as maps keyed by record ID."""

    __slots__ = ("blocked", "resolved_by", "retired_by")

    def __init__(
        self,
        retired_by: dict[str, str] | None = None,
        blocked: dict[str, list[str]] | None = None,
        resolved_by: dict[str, list[str]] | None = None,
    ) -> None:
        #: Retired record -> the record that supersedes it.
        self.retired_by = {} if retired_by is None else retired_by
        #: Decision -> its blocked_by list (empty when applicable).
        self.blocked = {} if blocked is None else blocked
        #: Question -> the current records that resolve it, in file order.
        self.resolved_by = {} if resolved_by is None else resolved_by

    __hash__ = None  # type: ignore[assignment]  # mutable


def derive(records: list[dict]) -> Derived:
    """retired_by, blocked_by and resolved_by for validated records, without copying them."""
    retired_by: dict[str, str] = {}
    for record in records:
        for target in record.get("supersedes") or ():
            retired_by[target] = record["id"]
    derived = Derived(retired_by)
    by_id: dict[str, dict] = {}
    for record in records:
        by_id[record["id"]] = record
        settle(record, by_id, derived)
    return derived


def settle(record: dict, by_id: Mapping[str, dict], derived: Derived) -> None:
    """Add one record's blocked_by (a decision) and the questions it resolves to derived.

    Every record before it must be settled already, and ``retired_by`` must
    be final: a record's state depends only on earlier records and on what
    supersedes them. ``by_id`` looks up earlier records (it may be lazy).
    """
    rid = record["id"]
    kind = record["kind"]
    retired_by, blocked = derived.retired_by, derived.blocked
    if kind == "decision":
        if record["state"] != "adopted" or rid in retired_by:
            blocked[rid] = [rid]
        else:
            reasons: list[str] = []
            for prereq in record.get("depends_on") or ():
                target = by_id.get(prereq)
                if target is None:  # defensive: a validated ledger never gets here
                    reasons.append(prereq)
                elif target["kind"] == "claim":
                    if target["state"] != "accepted" or prereq in retired_by:
                        reasons.append(prereq)
                elif target["kind"] == "decision":
                    if blocked[prereq]:
                        reasons.append(prereq)
                        reasons.extend(blocked[prereq])
                else:
                    reasons.append(prereq)
            blocked[rid] = list(dict.fromkeys(reasons)) if reasons else reasons
    answers = record.get("answers")
    if not answers or rid in retired_by:
        return
    if (kind == "claim" and record["state"] == "accepted") or (kind == "decision" and not blocked[rid]):
        resolved_by = derived.resolved_by
        for question in answers:
            resolvers = resolved_by.get(question)
            if resolvers is None:
                resolved_by[question] = [rid]
            elif rid not in resolvers:
                resolvers.append(rid)


def view(record: dict, derived: Derived) -> dict:
    """A projected copy of one record: recorded_state, state, retired_by, resolved_by,
    and for decisions applicable and blocked_by."""
    rid = record["id"]
    out = dict(record)
    out["recorded_state"] = record["state"]
    answers = derived.resolved_by.get(rid, []) if record["kind"] == "question" else []
    if answers:
        out["state"] = "resolved"
    out["retired_by"] = derived.retired_by.get(rid, "")
    out["resolved_by"] = list(answers)
    if record["kind"] == "decision":
        out["blocked_by"] = derived.blocked[rid]
        out["applicable"] = not derived.blocked[rid]
    return out


def project(records: list[dict]) -> list[dict]:
    """Projected copies of records: recorded_state, state, retired_by, resolved_by,
    and for decisions applicable and blocked_by. The input is not modified."""
    derived = derive(records)
    return [view(record, derived) for record in records]


def current(projected: list[dict]) -> list[dict]:
    """The projected records no later record supersedes."""
    return [r for r in projected if not r["retired_by"]]


def at(records: list[dict], record_id: str) -> list[dict] | None:
    """The records up to and including record_id (file order), or None if unknown."""
    for i, record in enumerate(records):
        if record["id"] == record_id:
            return records[: i + 1]
    return None


def is_available(view: dict) -> bool:
    """True when a projected record is current support: accepted claim, applicable decision."""
    if view["retired_by"]:
        return False
    if view["kind"] == "claim":
        return view["state"] == "accepted"
    if view["kind"] == "decision":
        return bool(view["applicable"])
    return False


def consequences(records: list[dict], added: int) -> list[str]:
    """One line for each effect the last ``added`` records had that their writer may not expect.

    A supersession can block decisions that depend on what it retires and
    reopen questions the retired record answered; an ``answers`` from a
    record that is not current support (a rejected claim, a blocked
    decision) resolves nothing. Records are validated and in file order.
    """
    if added <= 0:
        return []
    before, after = derive(records[:-added]), derive(records)
    new = records[-added:]
    lines: list[str] = []
    reopened: list[str] = []
    for record in records[:-added]:
        rid = record["id"]
        if rid in after.retired_by:
            continue
        if record["kind"] == "decision" and not before.blocked[rid] and after.blocked[rid]:
            lines.append(f"{rid} is now blocked: {blocked_because(after.blocked[rid], after)}")
        elif record["kind"] == "question" and before.resolved_by.get(rid) and not after.resolved_by.get(rid):
            gone = before.resolved_by[rid]
            reopened.append(f"{rid} is open again: {no_longer_holds(gone, after)}")
    lines.extend(reopened)
    lines.extend(idle_answers(new, after))
    return lines


def idle_answers(new: list[dict], after: Derived) -> list[str]:
    """A line for each of the new records whose ``answers`` resolve nothing (``consequences``' last part).

    ``after`` must hold the new records' own settlement (blocked_by) and the
    resolvers of the questions they answer, at least.
    """
    lines: list[str] = []
    for record in new:
        rid = record["id"]
        if rid in after.retired_by:
            continue
        unresolved = [q for q in record.get("answers") or () if rid not in after.resolved_by.get(q, ())]
        if unresolved:
            if record["kind"] == "claim":
                why = f"it is {record['state']}; only an accepted claim resolves a question"
            elif record["state"] != "adopted":
                why = f"it is {record['state']}; only an applicable decision resolves a question"
            else:
                why = f"it is blocked by {', '.join(after.blocked[rid])}; it resolves them once applicable"
            lines.append(f"{rid} answers {', '.join(unresolved)} but resolves nothing: {why}")
    return lines


def blocked_because(blocked_by: list[str], derived: Derived) -> str:
    """Why a decision is blocked, by its first reason: "it depends on d4, which d9 supersedes"."""
    first = blocked_by[0]
    if first in derived.retired_by:
        return f"it depends on {first}, which {derived.retired_by[first]} supersedes"
    return f"it depends on {first}, which is no longer current support"


def no_longer_holds(resolvers: list[str], derived: Derived) -> str:
    """Why a question's answers (resolvers it had) resolve it no longer: superseded or blocked, each."""
    parts = []
    for rid in resolvers:
        if rid in derived.retired_by:
            parts.append(f"{rid} is superseded by {derived.retired_by[rid]}")
        else:
            parts.append(f"{rid} is blocked by {', '.join(derived.blocked.get(rid) or [rid])}")
    noun = "its answer" if len(resolvers) == 1 else "its answers"
    return f"{noun} no longer hold: {'; '.join(parts)}" if len(resolvers) > 1 else f"{noun} {parts[0]}"
