"""``docket show ID [--json]`` without Typer, for a record this ledger holds.

Every briefing ends with "Retrieve full record: docket show RECORD_ID
--json", so agents run this often. A plain call for an ID (or ``ID@DIGEST``)
the ledger holds is answered from the cached outline: one parsed line and
the cached projection, no Typer. Anything else (``--at``, ``-h``, an old ID a
merge renumbered, a stale digest) returns None and the Typer command, which
prints through the same ``print_view``, takes it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path

from docket_git.ledger import project, store

#: IDs the outline could not show in this process, so the Typer command need not ask it again.
declined: set[str] = set()


def _label(by_id: Mapping[str, dict], rid: str) -> str:
    target = by_id.get(rid)
    return f"{rid} ({target['text']})" if target else rid


def from_outline(record_id: str, *, as_json: bool) -> bool:
    """Show a record this ledger holds (as given) from the cached outline; False to take the long way."""
    from docket_git.context.briefing import read_outline
    from docket_git.context.outline import Lines

    path = store.find_ledger(Path.cwd())
    if path is None:
        return False
    found, _ = read_outline(path)
    lines = found.records
    plain, _, digest = record_id.partition("@")
    if plain not in found.pos or not isinstance(lines, Lines):
        return False
    if digest and not lines.prefix_digest(plain).startswith(digest.lower()):
        return False
    print_view(project.view(lines[plain], found.derived), lines, as_json=as_json)
    return True


def print_view(view: dict, by_id: Mapping[str, dict], *, as_json: bool) -> None:
    """A projected record as ``show`` prints it: indented JSON, or a header line and labelled rows."""
    out = sys.stdout
    if as_json:
        out.write(json.dumps(view, indent=2, ensure_ascii=False) + "\n")
        out.flush()
        return
    out.write(f"{view['id']}  {view['kind']}  {view['state']}  {view['text']}\n")
    rows: list[tuple[str, str]] = []
    if view["kind"] == "decision":
        rows.append(("Choice", view["choice"]))
        if view.get("alternatives"):
            rows.append(("Alternatives", "; ".join(view["alternatives"])))
    rows.append(("Rationale", view.get("rationale", "")))
    if view.get("supports"):
        sets = [" AND ".join(_label(by_id, r) for r in group) for group in view["supports"]]
        rows.append(("Because", " | ".join(sets)))
    rows.append(("Supersedes", ", ".join(view.get("supersedes") or [])))
    rows.append(("Superseded by", view["retired_by"]))
    rows.append(("Depends on", ", ".join(_label(by_id, r) for r in view.get("depends_on") or [])))
    if view["kind"] == "decision" and not view["applicable"]:
        rows.append(("Blocked by", ", ".join(view["blocked_by"])))
    rows.append(("Answers", ", ".join(_label(by_id, r) for r in view.get("answers") or [])))
    rows.append(("Resolved by", ", ".join(view["resolved_by"])))
    rows.append(("Decided by", view.get("decided_by", "")))
    rows.append(("Cost if wrong", view.get("cost_if_wrong", "")))
    rows.append(("Revisit", view.get("revisit", "")))
    rows.append(("Scope", ", ".join(view.get("scope") or [])))
    evidence = [e["ref"] + (f" @ {e['commit']}" if e.get("commit") else "") for e in view.get("evidence") or []]
    rows.append(("Evidence", "; ".join(evidence)))
    if view["recorded_state"] != view["state"]:
        rows.append(("Recorded state", view["recorded_state"]))
    if view.get("pinned"):
        rows.append(("Pinned", "yes"))
    for name, value in rows:
        if value:
            out.write(f"{name}: {value}\n")
    out.write(f"Recorded: {view['ts']}\n")
    out.write(f"Author: {view['author'] or '-'}  Session: {view['session'] or '-'}  Branch: {view['branch'] or '-'}\n")
    out.flush()


def fast_main(args: list[str]) -> int | None:
    """Run ``docket show ID [--json]`` for a record this ledger holds; None to hand the call to Typer."""
    as_json = "--json" in args
    rest = [a for a in args if a != "--json"]
    if len(rest) != 1 or rest[0].startswith("-"):
        return None
    try:
        if from_outline(rest[0], as_json=as_json):
            return 0
        declined.add(rest[0])
        return None
    except store.LedgerError as exc:
        print(f"docket: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        return 0
