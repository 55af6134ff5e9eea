"""``docket session ...``: per-session step logs (the context-ledger workflow)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from docket_git.cli import session_fast
from docket_git.cli.app import app
from docket_git.cli.common import fail, warn
from docket_git.ledger.recording import UsageError

session_app = typer.Typer(
    name="session",
    help=(
        "Step logs for multi-agent workflows: one append-only markdown file per session in context-ledger/; "
        "each agent's output is written as a step, and the next agent reads only what its context map asks for."
    ),
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(session_app, name="session", rich_help_panel="Record")

File = Annotated[
    str | None, typer.Option("--file", help="The session file (default: the one the last 'session init' made here).")
]
LedgerDir = Annotated[
    str | None, typer.Option("--ledger-dir", help="The session directory (default: context-ledger/ at the repo root).")
]
TargetDir = Annotated[
    str,
    typer.Option("--target-dir", help="The workflow's working directory; without --ledger-dir: legacy single file."),
]
ContextMap = Annotated[
    str,
    typer.Option(
        "--context-map",
        metavar="MAP",
        help='JSON rules [{"from_step": 1, "fields": [...], "mode": "complete|partial"}], or @FILE.',
    ),
]


_text = session_fast.text_option


def _cwd() -> Path:
    return Path.cwd()


@session_app.command("init")
def init(
    system: Annotated[str, typer.Option("--system", help="The running system's name.")],
    workflow: Annotated[str, typer.Option("--workflow", help="The workflow's name.")],
    project: Annotated[str, typer.Option("--project", help="The project name (part of the file name).")],
    ledger_dir: LedgerDir = None,
    target_dir: TargetDir = "",
    mode: Annotated[str, typer.Option("--mode", help="architect or express (stored in the frontmatter).")] = "",
    steps: Annotated[
        str, typer.Option("--steps", help="The workflow's declared steps, e.g. 0,1,2,3 (pre-flight, 'of M').")
    ] = "",
    create_dir: Annotated[bool, typer.Option("--create-dir", help="Create the session directory if missing.")] = False,
) -> None:
    """Start a session: create {ledger_dir}/{YYYY-MM-DD-HH-MM}-{project}.md and print its path."""
    from docket_git.sessions import files

    path, new = files.init(
        _cwd(),
        system=system,
        workflow=workflow,
        project=project,
        ledger_dir=ledger_dir,
        target_dir=target_dir,
        mode=mode,
        steps=steps,
        create_dir=create_dir,
    )
    if not new:
        warn(f"{path} exists (legacy single-file mode keeps one ledger); writes append to it")
    typer.echo(str(path))


session_fast.register(session_app)  # write: declared once, also run without Typer (entry.py)


@session_app.command("show")
def show(
    file: Annotated[str, typer.Argument(help="The session file.")],
    step: Annotated[
        str | None, typer.Option("--step", help="Print this step's current state (deltas replayed).")
    ] = None,
) -> None:
    """Print a step's current state, its re-audits replayed; without --step, every step's status."""
    from docket_git.sessions import files, fmt

    path = files.resolve_file(_cwd(), file)
    meta, blocks = files.parse(path, files.read_text(path))
    if step is None:
        for sid in fmt.step_ids(blocks):
            state, count, line = fmt.replay(blocks, sid) or (None, 0, 0)
            if state is not None:
                extra = f"  re-audits: {count}" if count else ""
                typer.echo(f"Step {sid}  {state.status}  {state.agent}  line {line}{extra}")
        return
    found = fmt.replay(blocks, step)
    if found is None:
        fail(f"Step {step} not found in ledger {path}")
    state, count, line = found
    declared = [s.strip() for s in meta.get("steps", "").split(",") if s.strip()]
    first = next(b for b in blocks if b.step == step and not b.reaudit)
    stated = first.metadata.get("Step", "").partition(" of ")[2]
    state.total = stated or (str(len(declared)) if declared else "")
    typer.echo(fmt.render_state(state, reaudits=count, last_line=line), nl=False)


def _map_text(value: str) -> str:
    return _text("--context-map", value, [])


@session_app.command("read")
def read(
    step_destination: Annotated[str, typer.Option("--step-destination", help="The step that receives the context.")],
    context_map: ContextMap,
    file: File = None,
) -> None:
    """Print the context block for a step: its context map's rules applied to the session's steps."""
    from docket_git.sessions import contextmap, files

    try:
        maps = contextmap.parse_maps(_map_text(context_map), step_destination)
    except ValueError as exc:
        raise UsageError(f"--context-map: {exc}") from None
    if step_destination not in maps:
        raise UsageError(f"--context-map has no rules for Step {step_destination}")
    path = files.resolve_file(_cwd(), file)
    _, blocks = files.parse(path, files.read_text(path))
    text, warnings = contextmap.compose(blocks, step_destination, maps[step_destination])
    for message in warnings:
        warn(message)
    if text:
        typer.echo(text, nl=False)


@session_app.command("check-map")
def check_map(
    context_map: ContextMap,
    steps: Annotated[str, typer.Option("--steps", help="The workflow's declared steps, e.g. 1,2,3.")] = "",
    step_destination: Annotated[
        str | None, typer.Option("--step-destination", help="The step an array map is for (an object names its own).")
    ] = None,
    file: File = None,
) -> None:
    """Pre-flight: every step a context map reads is in the ledger, the current step, or declared."""
    from docket_git.sessions import contextmap, files

    try:
        maps = contextmap.parse_maps(_map_text(context_map), step_destination)
    except ValueError as exc:
        raise UsageError(f"--context-map: {exc}") from None
    path = files.resolve_file(_cwd(), file)
    meta, blocks = files.parse(path, files.read_text(path))
    declared = files.parse_steps(steps) if steps else files.parse_steps(meta.get("steps", ""))
    from docket_git.sessions import fmt

    errors = contextmap.preflight(maps, fmt.step_ids(blocks), declared)
    for message in errors:
        warn(message)
    if errors:
        raise typer.Exit(1)
    rules = sum(len(r) for r in maps.values())
    typer.echo(f"docket: context map OK: {rules} rule(s) for {len(maps)} step(s)")


@session_app.command("load-last")
def load_last(
    project: Annotated[str, typer.Option("--project", help="The project name.")],
    ledger_dir: LedgerDir = None,
    target_dir: TargetDir = "",
    path_only: Annotated[bool, typer.Option("--path", help="Print the file's path, not its content.")] = False,
) -> None:
    """Print the project's most recent session file (exit 0 with a note when there is none)."""
    from docket_git.sessions import files

    directory = files.open_dir(_cwd(), ledger_dir, target_dir, "load-last")
    found = files.load_last(directory, project)
    if found is None:
        warn(f"No previous context ledger found for project '{project}'")
        return
    if path_only:
        typer.echo(str(found))
        return
    sys.stdout.write(files.read_text(found))
    sys.stdout.flush()


@session_app.command("list")
def list_(
    ledger_dir: LedgerDir = None,
    project: Annotated[str | None, typer.Option("--project", help="Only this project's sessions.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per session.")] = False,
) -> None:
    """List session files, oldest first, with their step counts and status."""
    from docket_git.sessions import files

    directory = files.open_dir(_cwd(), ledger_dir, None, "list")
    for item in files.listing(directory, project):
        if as_json:
            row = {
                "file": item.path.name,
                "project": item.project,
                "created": item.created,
                "steps": item.steps,
                "status": item.status,
            }
            if item.error:
                row["error"] = item.error
            if item.missing:
                row["never_written"] = list(item.missing)
            typer.echo(json.dumps(row, ensure_ascii=False))
        else:
            steps = f"{item.steps} step{'s' if item.steps != 1 else ''}"
            typer.echo(f"{item.path.name}  {item.project}  {steps}  {item.status_text()}")
