"""Recording: claim, decision, question, record (batch)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from .. import canonical, recording, store
from .app import app
from .common import split_ids, warn

Scope = Annotated[
    list[str] | None,
    typer.Option("--scope", help="A file, directory (dir/), glob or component this governs. Repeatable."),
]
Rationale = Annotated[str, typer.Option("--rationale", help="Why; the reasoning behind the record.")]
Supports = Annotated[
    list[str] | None,
    typer.Option(
        "--supports",
        help="Grounds as a comma list (one AND set); repeat for OR: --supports c1,c2 --supports c3.",
    ),
]
Answers = Annotated[
    list[str] | None, typer.Option("--answers", help="Questions this answers (IDs, repeatable or comma list).")
]
Supersedes = Annotated[
    list[str] | None,
    typer.Option("--supersedes", help="Same-kind records this retires (IDs, repeatable or comma list)."),
]
Evidence = Annotated[
    list[str] | None,
    typer.Option("--evidence", help='A reference, or JSON {"ref":..,"checked_at":..,"commit":..}. Repeatable.'),
]
Revisit = Annotated[str, typer.Option("--revisit", help="When or why to look at this again.")]
Cost = Annotated[str, typer.Option("--cost", help="What breaks if this turns out wrong.")]
Pin = Annotated[bool, typer.Option("--pin", help="Give the record a fixed bonus in every briefing.")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Validate and print the record; write nothing.")]
AsJson = Annotated[bool, typer.Option("--json", help="Print the written record as JSON.")]


def _write(kind: str, text: str, fields: dict, *, dry_run: bool, as_json: bool) -> None:
    path = store.locate(Path.cwd())
    root = path.parent.parent
    scopes = [recording.normalize_scope(s, root) for s in fields.pop("scope", None) or []]
    fields["scope"] = list(dict.fromkeys(scopes))
    fields["evidence"] = [recording.parse_evidence(e) for e in fields.pop("evidence", None) or []]
    _author, unknown = recording.detect_author()
    if unknown:
        warn('could not detect an author; recording "unknown". Set DOCKET_AUTHOR to identify this harness.')
    draft = recording.draft(kind, text, fields, recording.provenance(path))
    (record,) = store.append(path, [draft], dry_run=dry_run)
    _report([record], as_json=as_json, dry_run=dry_run)


def _report(records: list[dict], *, as_json: bool, dry_run: bool, jsonl: bool = False) -> None:
    for record in records:
        if as_json:
            typer.echo(canonical.dumps(record) if jsonl else json.dumps(record, indent=2, ensure_ascii=False))
        else:
            typer.echo(f"{record['id']}  {record['state']}  {record['text']}")
    for record in records:
        for hint in recording.hints(record):
            warn(hint)
    if dry_run:
        warn(f"dry run: {len(records)} record(s) valid; nothing written")


def _supports(values: list[str] | None) -> list[list[str]]:
    return [group for group in (split_ids([v]) for v in values or []) if group]


@app.command(rich_help_panel="Record")
def claim(
    text: Annotated[str, typer.Argument(help="The proposition, stated (not asked).")],
    state: Annotated[str, typer.Option("--state", help="unassessed, accepted, disputed or rejected.")] = "unassessed",
    scope: Scope = None,
    rationale: Rationale = "",
    supports: Supports = None,
    answers: Answers = None,
    supersedes: Supersedes = None,
    evidence: Evidence = None,
    revisit: Revisit = "",
    cost: Cost = "",
    pin: Pin = False,
    dry_run: DryRun = False,
    as_json: AsJson = False,
) -> None:
    """Record a claim: a scoped proposition the work relies on."""
    _check_choice("--state", state, ("unassessed", "accepted", "disputed", "rejected"))
    fields = dict(
        state=state,
        scope=scope,
        rationale=rationale,
        supports=_supports(supports),
        answers=split_ids(answers),
        supersedes=split_ids(supersedes),
        evidence=evidence,
        revisit=revisit,
        cost_if_wrong=cost,
        pinned=pin,
    )
    _write("claim", text, fields, dry_run=dry_run, as_json=as_json)


@app.command(rich_help_panel="Record")
def decision(
    text: Annotated[str, typer.Argument(help="What the decision commits to, as a statement.")],
    choice: Annotated[str, typer.Option("--choice", help="The option chosen.")],
    alternative: Annotated[
        list[str] | None, typer.Option("--alternative", help="An option the choice beat. Repeatable.")
    ] = None,
    state: Annotated[str, typer.Option("--state", help="adopted or revoked.")] = "adopted",
    decided_by: Annotated[str, typer.Option("--decided-by", help="Who made the call, if not the recorder.")] = "",
    scope: Scope = None,
    rationale: Rationale = "",
    supports: Supports = None,
    depends_on: Annotated[
        list[str] | None,
        typer.Option("--depends-on", help="Prerequisite claims/decisions (IDs, repeatable or comma list)."),
    ] = None,
    answers: Answers = None,
    supersedes: Supersedes = None,
    evidence: Evidence = None,
    revisit: Revisit = "",
    cost: Cost = "",
    pin: Pin = False,
    dry_run: DryRun = False,
    as_json: AsJson = False,
) -> None:
    """Record a decision: a commitment to a choice, with what it beat and why."""
    _check_choice("--state", state, ("adopted", "revoked"))
    fields = dict(
        state=state,
        choice=choice,
        alternatives=list(alternative or []),
        decided_by=decided_by,
        scope=scope,
        rationale=rationale,
        supports=_supports(supports),
        depends_on=split_ids(depends_on),
        answers=split_ids(answers),
        supersedes=split_ids(supersedes),
        evidence=evidence,
        revisit=revisit,
        cost_if_wrong=cost,
        pinned=pin,
    )
    _write("decision", text, fields, dry_run=dry_run, as_json=as_json)


@app.command(rich_help_panel="Record")
def question(
    text: Annotated[str, typer.Argument(help="The open inquiry.")],
    scope: Scope = None,
    rationale: Rationale = "",
    supports: Supports = None,
    supersedes: Supersedes = None,
    evidence: Evidence = None,
    revisit: Revisit = "",
    cost: Cost = "",
    pin: Pin = False,
    dry_run: DryRun = False,
    as_json: AsJson = False,
) -> None:
    """Record an open question. Answer it later with a claim or decision --answers ID."""
    fields = dict(
        scope=scope,
        rationale=rationale,
        supports=_supports(supports),
        supersedes=split_ids(supersedes),
        evidence=evidence,
        revisit=revisit,
        cost_if_wrong=cost,
        pinned=pin,
    )
    _write("question", text, fields, dry_run=dry_run, as_json=as_json)


@app.command(rich_help_panel="Record")
def record(
    file: Annotated[str, typer.Argument(help="A JSONL file of records, or - for stdin.")] = "-",
    dry_run: DryRun = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the written records as JSONL.")] = False,
) -> None:
    """Record a batch from JSONL, all or nothing.

    Each line holds one record's own fields (kind, text, choice, scope,
    supports, answers, ...); IDs are allocated. Cite an earlier line of the
    batch as @N (counting from 1), e.g. {"kind":"decision",...,"depends_on":["@1"]}.
    """
    if file == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            data = Path(file).read_bytes()
        except OSError as exc:
            raise recording.UsageError(f"cannot read {file}: {exc.strerror}") from None
    path = store.locate(Path.cwd())
    drafts = recording.parse_batch(data, recording.provenance(path))
    records = store.append(path, drafts, dry_run=dry_run)
    _report(records, as_json=as_json, dry_run=dry_run, jsonl=True)


def _check_choice(flag: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise recording.UsageError(f"{flag} must be one of {', '.join(allowed)}; got {value!r}")
