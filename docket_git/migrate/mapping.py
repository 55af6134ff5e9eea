"""The classification map: how each schema-1 record becomes a claim, decision or question.

``derive_map`` proposes one from the records' states; ``dump_map`` writes it
for a person to edit (``docket migrate --emit-map``); ``check_map`` refuses a
map that names unknown records or fields.
"""

from __future__ import annotations

import json

from docket_git.ledger import model
from docket_git.migrate.schema1 import DERIVED, ENTRY_FIELDS, RELATION_NAMES, MigrationError, _by_number

# -- the classification map ------------------------------------------------------------


def derive_map(records: list[dict]) -> tuple[dict[str, dict], list[str]]:
    """The classification map derived from the schema-1 state alone, and the problems.

    A record the derivation cannot classify gets a placeholder entry (kind and
    state null) and a problem naming it; the map is complete either way.
    """
    entries: dict[str, dict] = {}
    unknown: dict[str, list[str]] = {}
    problems: list[str] = []
    for record in records:
        rid = record["id"]
        state = record["state"]
        text = record.get("question", "")
        answer = record.get("answer", "")
        entry: dict = {"kind": None, "state": None, "text": text, "overrides": {}}
        entry["source_state"] = state
        entry["source_answer"] = answer
        if state not in DERIVED:
            unknown.setdefault(state, []).append(rid)
        elif not text.strip():
            problems.append(f"{rid} has an empty question, so no text can be derived")
        elif DERIVED[state][0] == "decision" and not answer.strip():
            problems.append(f"{rid} is {state} with an empty answer, so no choice can be derived")
        else:
            entry["kind"], entry["state"] = DERIVED[state]
        entries[rid] = entry
    head = [f"unrecognised schema-1 state(s) {state}: {', '.join(ids)}" for state, ids in unknown.items()]
    return entries, head + problems


def dump_map(entries: dict[str, dict]) -> bytes:
    """The map as written by ``--emit-map``: indent 2, sorted keys, UTF-8."""
    return (json.dumps(entries, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def placeholders(entries: dict[str, dict]) -> list[str]:
    """Old IDs whose entry still has a null kind or state."""
    return _by_number(
        [rid for rid, e in entries.items() if isinstance(e, dict) and (e.get("kind") is None or e.get("state") is None)]
    )


def _check_ids(where: str, value: object, known: dict[str, dict], *, nested: bool) -> tuple[str | None, list[str]]:
    groups = value if nested else [value]
    if not isinstance(value, list) or not all(
        isinstance(g, list) and all(isinstance(r, str) and r for r in g) and (g or not nested) for g in groups
    ):
        shape = "a list of non-empty old-id lists" if nested else "a list of old ids"
        return f"{where} must be {shape}", []
    return None, [r for g in groups for r in g if r not in known]


def check_map(records: list[dict], entries: object) -> None:
    """Refuse a map that is not complete and valid for these records, naming every problem."""
    if not isinstance(entries, dict):
        raise MigrationError(["the map must be a JSON object keyed by old id"])
    known = {r["id"]: r for r in records}
    errors: list[str] = []
    missing = [rid for rid in known if rid not in entries]
    if missing:
        errors.append(f"missing mapping for old id(s): {', '.join(_by_number(missing))}")
    extra = [rid for rid in entries if rid not in known]
    if extra:
        errors.append(f"mapping contains unknown old id(s): {', '.join(_by_number(extra))}")
    unfilled = placeholders({rid: e for rid, e in entries.items() if rid in known})
    if unfilled:
        errors.append(
            f"mapping still has placeholder(s) with kind or state null: {', '.join(unfilled)}; "
            "give each a kind and a state"
        )
    for rid in known:
        entry = entries.get(rid)
        if entry is None or rid in unfilled:
            continue
        errors.extend(_entry_problems(rid, entry, known))
    if errors:
        raise MigrationError(errors)


def _entry_problems(rid: str, entry: object, known: dict[str, dict]) -> list[str]:
    if not isinstance(entry, dict):
        return [f"mapping for {rid} must be an object"]
    out: list[str] = []
    if not ENTRY_FIELDS.issuperset(entry):
        out.append(f"mapping for {rid} has unknown field(s): {', '.join(sorted(set(entry) - ENTRY_FIELDS))}")
    kind, state = entry.get("kind"), entry.get("state")
    if kind not in model.KINDS:
        out.append(f"mapping for {rid} has invalid kind {json.dumps(kind)}; use claim, decision or question")
    elif state not in model.STATES[kind]:
        out.append(f"mapping for {rid} has invalid state {_quote(state)} for {kind}")
    text = entry.get("text")
    if not isinstance(text, str) or not text.strip():
        out.append(f"mapping for {rid} is missing text")
    if kind in ("claim", "question"):
        for name in ("choice", "alternatives", "decided_by"):
            if entry.get(name):
                out.append(f"mapping for {rid} gives {name}, which only a decision has")
    if kind == "decision":
        choice = entry.get("choice", known[rid].get("answer", ""))
        if not isinstance(choice, str) or not choice.strip():
            out.append(f'mapping for {rid} is a decision with no choice; add a "choice"')
    overrides = entry.get("overrides", {})
    if overrides == {}:
        return out
    if not isinstance(overrides, dict) or not RELATION_NAMES.issuperset(overrides):
        out.append(f"mapping for {rid} overrides must be an object with supports, depends_on, answers or supersedes")
        return out
    for name, value in overrides.items():
        problem, missing = _check_ids(f"mapping for {rid} overrides {name}", value, known, nested=name == "supports")
        if problem:
            out.append(problem)
        elif missing:
            out.append(f"mapping for {rid} overrides {name} with unknown old id(s): {', '.join(missing)}")
    return out


def _quote(value: object) -> str:
    return f"'{value}'" if isinstance(value, str) else json.dumps(value)
