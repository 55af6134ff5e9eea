"""Recording: claim, decision, question, record (batch)."""

from __future__ import annotations

from typing import Annotated

import typer

from docket_git.cli import record_fast as record_command
from docket_git.cli.app import app

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


def _run(kind: str, text: str, **opts: object) -> None:
    """The command's options to the executor the Typer-free path shares (repeatables as lists)."""
    record_command.execute(kind, text, {k: [] if v is None else v for k, v in opts.items()})


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
    _run(
        "claim",
        text,
        state=state,
        scope=scope,
        rationale=rationale,
        supports=supports,
        answers=answers,
        supersedes=supersedes,
        evidence=evidence,
        revisit=revisit,
        cost=cost,
        pin=pin,
        dry_run=dry_run,
        as_json=as_json,
    )


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
    _run(
        "decision",
        text,
        choice=choice,
        alternative=alternative,
        state=state,
        decided_by=decided_by,
        scope=scope,
        rationale=rationale,
        supports=supports,
        depends_on=depends_on,
        answers=answers,
        supersedes=supersedes,
        evidence=evidence,
        revisit=revisit,
        cost=cost,
        pin=pin,
        dry_run=dry_run,
        as_json=as_json,
    )


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
    _run(
        "question",
        text,
        scope=scope,
        rationale=rationale,
        supports=supports,
        supersedes=supersedes,
        evidence=evidence,
        revisit=revisit,
        cost=cost,
        pin=pin,
        dry_run=dry_run,
        as_json=as_json,
    )


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
    record_command.execute_batch(file, dry_run=dry_run, as_json=as_json)
