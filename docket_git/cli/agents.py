"""Wiring agents: install-hooks."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from docket_git.agents import table as agents
from docket_git.cli.app import app
from docket_git.ledger import store


def install_agents(value: str, *, user: bool) -> None:
    """Merge docket's hooks into each named agent's settings and say what changed."""
    names = agents.parse_agents(value)
    root = store.find_repo_root(Path.cwd())
    if root is None and not user:
        ledger = store.find_ledger(Path.cwd())
        if ledger is None:
            raise store.LedgerError("not in a git repository; use --user for the user-level settings")
        root = ledger.parent.parent
    docket = _docket_path() if user else None
    for name in names:
        path, added = agents.install(name, root or Path.cwd(), user=user, docket=docket)
        if added:
            typer.echo(f"docket: {name}: added {', '.join(added)} hooks to {path}")
        else:
            typer.echo(f"docket: {name}: {path} already runs docket's hooks")
        if name in agents.NOTES:
            typer.echo(f"docket: note: {agents.NOTES[name].format(path=path)}")


def _docket_path() -> str | None:
    """This docket's absolute path, for hook files that stay on this machine (None: look it up on PATH)."""
    script = Path(sys.argv[0])
    if script.name.startswith("docket") and script.is_file():
        return str(script.absolute())
    found = shutil.which("docket")
    return str(Path(found).absolute()) if found else None


@app.command("install-hooks", rich_help_panel="Maintain")
def install_hooks(
    agents_: Annotated[
        str,
        typer.Option("--agents", help="Comma list: claude, codex, gemini, copilot, cursor."),
    ] = "claude",
    user: Annotated[bool, typer.Option("--user", help="Write the user-level settings file instead.")] = False,
) -> None:
    """Add docket's session-start briefing and ledger guard to agents' hook settings.

    Existing hooks and settings are kept; running it again adds nothing.
    """
    install_agents(agents_, user=user)
