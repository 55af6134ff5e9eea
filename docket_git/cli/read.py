"""Reading: list, show, check (declared in their own modules), where."""

from __future__ import annotations

from pathlib import Path

import typer

from docket_git.cli import check as check_command
from docket_git.cli import listing
from docket_git.cli import show as show_command
from docket_git.cli.app import app
from docket_git.ledger import store

# ``list``, ``show`` and ``check`` are declared in their own modules (their light parsers run without
# Typer); registered here so that ``docket --help`` lists them in this order, check before where.
listing.register(app)
show_command.register(app)
check_command.register(app)


@app.command(rich_help_panel="Maintain")
def where() -> None:
    """Print the ledger's path and whether it exists yet."""
    path = store.locate(Path.cwd())
    typer.echo(f"{path}  (project, {'exists' if path.is_file() else 'not created yet'})")
