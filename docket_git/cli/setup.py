"""Setting up: init."""

from __future__ import annotations

from pathlib import Path

import typer

from .. import store
from .app import app
from .common import fail


@app.command(rich_help_panel="Maintain")
def init() -> None:
    """Create .docket/ledger.jsonl at the repository root (idempotent)."""
    found = store.find_ledger(Path.cwd())
    if found is not None:
        typer.echo(f"docket: already project-local at {found}")
        _gitignore(found.parent)
        return
    root = store.find_repo_root(Path.cwd())
    if root is None:
        fail("not in a git repository; run 'git init' first, then 'docket init'")
    ledger = root / store.LEDGER_DIR / store.LEDGER_NAME
    ledger.parent.mkdir(exist_ok=True)
    ledger.touch()
    typer.echo(f"docket: created {ledger}")
    _gitignore(ledger.parent)


def _gitignore(directory: Path) -> None:
    ignore = directory / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*.lock\n")
        typer.echo(f"docket: created {ignore}")
