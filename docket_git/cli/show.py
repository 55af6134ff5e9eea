"""Reading: ``docket show ID [--at ID|COMMIT] [--json]``, declared once for Typer and the light parser.

Every briefing ends with "Retrieve full record: docket show RECORD_ID
--json", so agents run this often. A plain call for an ID (or ``ID@DIGEST``)
the ledger holds is answered from the ledger index: one parsed line and
the indexed projection, no Typer; one it does not hold as given (an old ID a
merge renumbered, a stale digest) is asked of history (``cli.history.Asker``,
which keeps the answer), then shown the same way. Anything else (``--at``,
``-h``) goes to the Typer command built from the same declaration, which
prints through the same ``print_view``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path

from docket_git.cli.spec import Arg, Command, Opt
from docket_git.errors import LedgerError, guarded
from docket_git.ledger import canonical, index, model, project, store

TYPE_CHECKING = False  # typing costs every light command ~3 ms at start
if TYPE_CHECKING:
    from typing import Any

COMMAND = Command(
    "show",
    "Show one record in full, with its derived state.",
    "Read",
    (Arg("record_id", "The record to show, e.g. d12 or d12@DIGEST; an old ID is followed.", "ID"),),
    (
        Opt("--at", "at", "Show it as history stood at record ID, or at a commit.", "ID|COMMIT", default=None),
        Opt("--json", "as_json", "The projected record as JSON.", bare=True),
    ),
)

#: IDs the outline could not show in this process, so the Typer command need not ask it again.
declined: set[str] = set()


def _label(by_id: Mapping[str, dict], rid: str) -> str:
    target = by_id.get(rid)
    return f"{rid} ({target['text']})" if target else rid


def from_index(record_id: str, *, as_json: bool) -> bool:
    """Show a record this ledger holds (as given) from the ledger index; False to take the long way."""
    from docket_git.ledger import index

    path = store.find_ledger(Path.cwd())
    if path is None:
        return False
    plain, digest = model.split_ref(record_id)
    if not model.is_id(plain):
        return False
    with index.opened(path) as ix:
        row = index.line_facts(ix.conn, plain)
        if row is None:
            return False
        offset, length, _, kind, retired_by = row
        if digest:
            data = index.ledger_bytes(ix)
            end = min(offset + length + 1, len(data))
            if not canonical.sha256(memoryview(data)[:end]).startswith(digest.lower()):
                return False
            record = json.loads(data[offset : offset + length])
        else:
            # One line, read at its offset and checked against its digest (index.records_of): show
            # stays flat in the ledger's size; other bytes there take the whole-file way.
            (record,) = index.records_of(ix, [plain])
        derived = _derived(ix.conn, plain, kind, retired_by)
        cited = [*(r for g in record.get("supports") or () for r in g), *(record.get("depends_on") or ())]
        cited.extend(record.get("answers") or ())
        labels = index.texts(ix.conn, cited)
    print_view(project.view(record, derived), labels, as_json=as_json)
    return True


def from_history(record_id: str, *, as_json: bool) -> bool:
    """Show what an ID this ledger does not hold (as given) names now, as history answers it (``cli.history.Asker``).

    The answer is kept in the history database under HEAD, the ledger's
    revision, the journal and the search limit, so asking again reads one
    row; asking first walks history but never parses the whole ledger unless
    a renumbered record must be matched into it. False without a ledger.
    """
    from docket_git.cli.history import Asker

    path = store.find_ledger(Path.cwd())
    if path is None or not model.is_id(model.split_ref(record_id)[0]):
        return False
    asker = Asker()
    try:
        current = asker.current(record_id)
    finally:
        asker.close()
    if not from_index(current, as_json=as_json):
        raise LedgerError(f"no entry {record_id}")
    return True


def _derived(conn: Any, rid: str, kind: str, retired_by: str) -> project.Derived:
    """``index.derived_for(conn, [rid])`` for one record, through the index's per-record indexes (no table scans)."""
    derived = project.Derived()
    if retired_by:
        derived.retired_by[rid] = retired_by
    if kind == "decision":
        derived.blocked[rid] = index.related(conn, "blocked_by", rid) or []
    elif kind == "question":
        resolvers = index.related(conn, "resolved_by", rid)
        if resolvers:
            derived.resolved_by[rid] = resolvers
    return derived


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


def run(values: dict[str, Any]) -> None:
    """Show a record: from the outline when it can, else from the validated ledger and history."""
    record_id, at, as_json = values["record_id"], values["at"], values["as_json"]
    if at is None and record_id not in declined and from_index(record_id, as_json=as_json):
        return
    snap = index.read(store.find_ledger(Path.cwd()))
    records = snap.records
    if at is not None:
        prefix = project.at(records, at)
        if prefix is None:
            if model.is_id(at):
                raise LedgerError(f"unknown record {at}")
            from docket_git.cli import history as history_cli

            prefix, _ = history_cli.records_at(at)
        records = prefix
    views = project.project(records)
    by_id = {v["id"]: v for v in views}
    plain, digest = model.split_ref(record_id)
    view = by_id.get(plain)
    if at is not None and view is None:
        raise LedgerError(f"no entry {plain} at {at}")
    if view is None and not model.is_id(plain):
        raise LedgerError(f"no entry {record_id}")
    stale = (
        bool(digest) and view is not None and not snap.prefix_digest(snap.position(plain)).startswith(digest.lower())
    )
    if at is None and (view is None or stale):
        # An ID this ledger does not hold (as given): history knows where a merge moved it.
        from docket_git.cli import history as history_cli

        view = by_id.get(history_cli.current_id(record_id, snap))
        if view is None:
            raise LedgerError(f"no entry {record_id}")
    print_view(view, by_id, as_json=as_json)


def fast_main(args: list[str]) -> int | None:
    """Run a plain ``docket show ID [--json]`` for a record this ledger holds; None to hand it to Typer."""
    values = COMMAND.parse(args)
    if values is None or values["at"] is not None:
        return None
    shown: list[bool] = []

    def light() -> None:
        rid, as_json = values["record_id"], values["as_json"]
        shown.append(from_index(rid, as_json=as_json) or from_history(rid, as_json=as_json))

    code = guarded(light)
    if code or shown == [True]:
        return code
    declined.add(values["record_id"])
    return None


def register(app: Any) -> None:
    """Add ``docket show`` to the Typer app."""
    COMMAND.register(app, run)
