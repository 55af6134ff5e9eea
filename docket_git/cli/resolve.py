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
        fail(f"{exc}{hint}")
    typer.echo(f"docket: resolved {rel}: appended {done.appended} record(s) to this side's ledger and staged it")
    typer.echo(f"docket: next: {conflict.next_step(done.operation)}")
