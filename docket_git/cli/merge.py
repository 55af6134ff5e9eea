"""Merging: rebase, doctor."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Annotated

import typer

from docket_git.cli.app import app
from docket_git.cli.common import fail, warn
from docket_git.ledger import canonical, index, store
from docket_git.merging import rebase
from docket_git.repo import files


@app.command("rebase", rich_help_panel="Maintain")
def rebase_command(
    other: Annotated[str, typer.Argument(metavar="OTHER", help="Another copy of the ledger, e.g. a branch's.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the ID map; write nothing.")] = False,
    emit_map: Annotated[
        str | None, typer.Option("--emit-map", metavar="PATH", help="Write the old -> new ID map as JSON to PATH.")
    ] = None,
    strict: Annotated[
        bool,
        typer.Option("--strict", help="Refuse when both histories superseded one record (default: ask a question)."),
    ] = False,
) -> None:
    """Append OTHER's records that this ledger lacks, renumbered, all or nothing.

    Records both ledgers share are kept once; references inside the appended
    records follow the renumbering (relations and IDs in prose).
    """
    other_path = Path(other)
    if not other_path.is_file():
        fail(f"no ledger at {other}")
    path = store.find_ledger(Path.cwd())
    if path is None:
        fail(store.NO_LEDGER)
    with store.locked(path, exclusive=not dry_run) as fd, contextlib.ExitStack() as stack:
        data = store.current_bytes(path, fd)
        ix = stack.enter_context(contextlib.closing(index.held(path, data)))
        ours = index.parse(path, data, ix=ix)
        try:
            theirs = store.parse(other_path, files.read_bytes(other_path, None, files.LEDGER_CAP, follow=True))
        except OSError as exc:
            fail(f"cannot read {other}: {exc.strerror}")
        except store.LedgerError as exc:
            fail(f"{other}: {exc}")
        try:
            tail, moved, conflicts = rebase.merge([], ours.records, theirs.records, strict=strict)
        except rebase.MergeRefused as exc:
            fail(f"{exc}; {path} is unchanged")
        if emit_map:
            try:
                Path(emit_map).write_text(json.dumps(moved, indent=2) + "\n")
            except OSError as exc:
                fail(f"cannot write {emit_map}: {exc.strerror}")
        if not tail:
            typer.echo("docket: nothing to rebase; the histories already agree")
            return
        for old, new in moved.items():
            typer.echo(f"{old} -> {new}")
        for conflict in conflicts:
            warn(conflict.describe())
        keep = data[: ours.valid_length]
        merged = keep + (b"\n" if keep and not keep.endswith(b"\n") else b"")
        merged += b"".join(canonical.line(r) for r in tail)
        index.parse(path, merged, records=False, ix=ix)  # the whole result validates, or nothing is written
        if dry_run:
            typer.echo(f"\ndocket: {len(tail)} record(s) would be appended to {path}")
            return
        store.write_atomic(path, merged)
    _remember(path, theirs.data, moved, tail, other)
    typer.echo(f"\ndocket: appended {len(tail)} record(s) to {path}")


def _mcp_lines(root: Path, hooked: dict[str, str | None]) -> None:
    """Which agents start ``docket mcp`` from their project MCP file, and which hooked agents do not."""
    from docket_git.agents import mcp_config

    for agent, found in mcp_config.status(root).items():
        if found is not None and found[1] == "ok":
            typer.echo(f"docket: ok: {agent} starts docket mcp ({found[0]})")
        elif found is not None and found[1] == "stale":
            typer.echo(
                f"docket: note: {agent}'s {found[0]} starts docket mcp with an interpreter that is gone and docket "
                f"is not on PATH; run: docket init --agents {agent}"
            )
        elif found is not None:
            typer.echo(f"docket: note: {agent}'s {found[0]} has a server named 'docket' that is not docket mcp")
        elif hooked.get(agent):
            rel = mcp_config.FILES[agent][0]
            typer.echo(f"docket: note: {agent} has no docket MCP server in {rel}; run: docket init --agents {agent}")


def _remember(path: Path, other_data: bytes, moved: dict[str, str], tail: list[dict], other: str) -> None:
    """Write the renumbering to this clone's journal, so ``docket show OLD`` follows it (``merging.journal``)."""
    from docket_git.merging import journal, published

    gdir = published.git_dir(cwd=path.parent)
    entries = journal.entries(other_data, moved, tail, op="docket rebase", source=other, blob=False)
    journal.remember(gdir, entries)


@app.command(rich_help_panel="Maintain")
def doctor() -> None:
    """Report whether this clone is wired for ledger merges (driver, attributes, hook) and how to fix gaps."""
    from docket_git.merging import wiring as install
    from docket_git.repo import gitio

    root = gitio.workdir(Path.cwd())
    if root is None:
        fail("not in a git repository; docket doctor checks a clone's git wiring")
    findings = install.diagnose(root)
    for finding in findings:
        if finding.ok:
            typer.echo(f"docket: ok: {finding.what}")
        else:
            typer.echo(f"docket: problem: {finding.what}; fix: {finding.fix}")
    from docket_git.agents.table import notes, probe, wired

    agents = wired(root)
    agent_gaps = 0
    for ok, what, fix in probe(root, agents):  # each registered hook command run as the agent runs it
        typer.echo(f"docket: ok: {what}" if ok else f"docket: problem: {what}; fix: {fix}")
        agent_gaps += not ok
    if not any(agents.values()):
        typer.echo(
            "docket: note: no coding agent is wired; to brief one each session: "
            f"docket init --agents {','.join(agents)} (any of them)"
        )
    for line in notes(root):
        typer.echo(f"docket: note: {line}")
    _mcp_lines(root, agents)
    merge_gaps = sum(not f.ok and f.area == "merge" for f in findings)
    commit_gaps = sum(not f.ok and f.area == "commit" for f in findings)
    if agent_gaps:
        typer.echo(
            f"docket: {agent_gaps} agent hook problem(s); until they are fixed, that agent starts unbriefed "
            "and nothing stops it editing the ledger by hand"
        )
        if not merge_gaps and not commit_gaps:
            raise typer.Exit(1)
    if merge_gaps:
        typer.echo(
            f"docket: {merge_gaps + commit_gaps} problem(s); until they are fixed, "
            "git merges ledgers as text and conflicts"
        )
        raise typer.Exit(1)
    if commit_gaps:
        typer.echo(
            f"docket: {commit_gaps} problem(s); merges use the docket driver, but commits are not checked, "
            "so an invalid or rewritten ledger can be committed"
        )
        raise typer.Exit(1)
    typer.echo("docket: this clone merges ledgers with the docket driver")
