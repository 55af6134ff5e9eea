"""Recovering a conflicted ledger: resolve-conflict."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from docket_git.cli.app import app
from docket_git.cli.common import fail
from docket_git.ledger import store


@app.command("resolve-conflict", rich_help_panel="Maintain")
def resolve_conflict(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print what would be appended; write nothing.")] = False,
) -> None:
    """Merge the ledger git left conflicted, as the merge driver does, and stage it.

    Reads git's index stages (base, ours, theirs): ours (the branch merged into,
    or during a rebase the upstream rebuilt onto) stays an exact byte prefix and
    the other side's new records are appended, renumbered.
    """
    from docket_git.merging import conflict
    from docket_git.repo import gitio

    root = gitio.workdir(Path.cwd())
    if root is None:
        fail("resolve-conflict needs a git repository; run it inside one")
    found = store.find_ledger(Path.cwd()) or (root / store.LEDGER_DIR / store.LEDGER_NAME)
    try:
        rel = found.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = f"{store.LEDGER_DIR}/{store.LEDGER_NAME}"
    try:
        data, done = conflict.resolve(root, rel)
        for line in done.report:
            typer.echo(f"docket: {line}")
        if dry_run:
            typer.echo(f"docket: {done.appended} record(s) would be appended to {rel}")
            return
        conflict.write_and_stage(root, rel, data)
        conflict.remember(root, done)
    except conflict.NotResolved as exc:
        what = conflict.operation(root)
        hint = f" (or give up with '{conflict.abort_hint(what)}')" if what else ""
        if not what:
            from docket_git.ledger import broken

            found = broken.committed_break(root / rel)
            if found is not None:
                hint = f". But {found[2].what(rel)}: rebuild it with '{broken.COMMAND}'"
        fail(f"{exc}{hint}")
    typer.echo(f"docket: resolved {rel}: appended {done.appended} record(s) to this side's ledger and staged it")
    typer.echo(f"docket: next: {conflict.next_step(done.operation)}")


@app.command("repair", rich_help_panel="Maintain")
def repair(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print what would be rebuilt; write nothing.")] = False,
) -> None:
    """Rebuild a ledger someone committed broken (conflict markers), as the merge driver would have merged it.

    Finds the commit that committed the broken ledger, merges its parents'
    ledgers as the driver does, appends every record added since, writes the
    result atomically and prints the git step that commits it.
    """
    from docket_git.ledger import broken
    from docket_git.merging import conflict
    from docket_git.merging import repair as repairing
    from docket_git.repo import gitio

    root = gitio.workdir(Path.cwd())
    if root is None:
        fail("repair needs a git repository; run it inside one")
    found = store.find_ledger(Path.cwd()) or (root / store.LEDGER_DIR / store.LEDGER_NAME)
    try:
        rel = found.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = f"{store.LEDGER_DIR}/{store.LEDGER_NAME}"
    what = conflict.operation(root)
    if what:
        fail(f"a git {what} is in progress; settle its ledger with 'docket resolve-conflict', then finish the {what}")
    try:
        current = (root / rel).read_bytes()
    except OSError as exc:
        fail(f"cannot read {root / rel}: {exc.strerror}")
    try:
        brk = broken.find_break(root, rel)
        if brk is None:
            fault = broken.fault_of(current, rel)
            if fault is None:
                typer.echo(f"docket: nothing to repair: {rel} reads cleanly, and so does HEAD's")
                return
            fail(
                f"{rel} does not read ({fault}), but HEAD's does: the damage is not committed; "
                f"undo it with 'git checkout HEAD -- {rel}'"
            )
        done = repairing.plan(root, rel, current, brk)
        for line in done.report:
            typer.echo(f"docket: {line}")
        merged = " and ".join(p[:12] for p in brk.parents)
        said = f"{rel}: the driver's merge of {merged} (the parents of {brk.commit[:12]})"
        said += f", then {done.later} later record(s)" if done.later else ""
        if dry_run:
            typer.echo(f"docket: would rebuild {said}; nothing written")
            return
        repairing.write(root, rel, done.data)
    except broken.NotRepaired as exc:
        fail(str(exc))
    typer.echo(f"docket: rebuilt {said}")
    typer.echo(
        f"docket: next: git add {rel} && git commit -m 'docket repair: rebuild the ledger {brk.commit[:12]} "
        "committed broken'"
    )
