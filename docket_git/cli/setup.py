"""Setting up: init."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .. import store
from .app import app
from .common import fail


@app.command(rich_help_panel="Maintain")
def init(
    no_git_hooks: Annotated[
        bool, typer.Option("--no-git-hooks", help="Do not install the pre-commit hook that checks the staged ledger.")
    ] = False,
) -> None:
    """Create .docket/ledger.jsonl and wire git: merge driver, attributes, pre-commit hook (idempotent)."""
    found = store.find_ledger(Path.cwd())
    if found is not None:
        typer.echo(f"docket: already project-local at {found}")
        _gitignore(found.parent)
        _wire(store.find_repo_root(found.parent), hooks=not no_git_hooks)
        return
    root = store.find_repo_root(Path.cwd())
    if root is None:
        fail("not in a git repository; run 'git init' first, then 'docket init'")
    ledger = root / store.LEDGER_DIR / store.LEDGER_NAME
    ledger.parent.mkdir(exist_ok=True)
    ledger.touch()
    typer.echo(f"docket: created {ledger}")
    _gitignore(ledger.parent)
    _wire(root, hooks=not no_git_hooks)


def _gitignore(directory: Path) -> None:
    ignore = directory / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*.lock\n")
        typer.echo(f"docket: created {ignore}")


def _wire(root: Path | None, *, hooks: bool) -> None:
    if root is None:
        return  # a ledger outside any git repository: nothing to wire
    from .. import install

    for line in install.wire(root, hooks=hooks):
        typer.echo(line)
