"""Setting up: init."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from docket_git.agents.table import parse_agents
from docket_git.cli.agents import install_agents
from docket_git.cli.app import app
from docket_git.cli.common import fail
from docket_git.ledger import store


@app.command(rich_help_panel="Maintain")
def init(
    no_git_hooks: Annotated[
        bool, typer.Option("--no-git-hooks", help="Do not install the pre-commit hook that checks the staged ledger.")
    ] = False,
    agents: Annotated[
        str | None,
        typer.Option("--agents", help="Also wire agent hooks: comma list of claude, codex, gemini, copilot, cursor."),
    ] = None,
    user: Annotated[bool, typer.Option("--user", help="With --agents: write the user-level agent settings.")] = False,
) -> None:
    """Create .docket/ledger.jsonl and wire git: merge driver, attributes, pre-commit hook (idempotent)."""
    if agents is not None:
        parse_agents(agents)  # refuse a typo before changing anything
    found = store.find_ledger(Path.cwd())
    if found is not None:
        typer.echo(f"docket: already project-local at {found}")
        _gitignore(found.parent)
        _wire(store.find_repo_root(found.parent), hooks=not no_git_hooks)
        if agents is not None:
            install_agents(agents, user=user)
            _register_mcp(agents, user=user)
        return
    root = store.find_repo_root(Path.cwd())
    if root is None:
        fail("not in a git repository; run 'git init' first, then 'docket init'")
    ledger = root / store.LEDGER_DIR / store.LEDGER_NAME
    store.create(ledger)
    typer.echo(f"docket: created {ledger}")
    _gitignore(ledger.parent)
    _wire(root, hooks=not no_git_hooks)
    if agents is not None:
        install_agents(agents, user=user)
        _register_mcp(agents, user=user)


def _register_mcp(agents: str, *, user: bool) -> None:
    """Register ``docket mcp`` in each named agent's project MCP file (docs/mcp.md); say what changed."""
    from docket_git.agents import mcp_config

    root = store.find_repo_root(Path.cwd())
    if user or root is None:
        return  # the server serves one repository: its entry lives in the project's files
    for name in parse_agents(agents):
        path, said = mcp_config.install(name, root)
        typer.echo(f"docket: {name}: {path.relative_to(root)} {said}")


def _gitignore(directory: Path) -> None:
    """Create .docket/.gitignore, or add the patterns an older one lacks; say what changed."""
    said = store.ensure_ignored(directory)
    if said:
        typer.echo(f"docket: {said}")


def _wire(root: Path | None, *, hooks: bool) -> None:
    if root is None:
        return  # a ledger outside any git repository: nothing to wire
    from docket_git.merging import wiring as install

    lines = install.wire(root, hooks=hooks)
    for line in lines:
        typer.echo(line)
    if any(line.startswith(install.NOT_REGISTERED) for line in lines):
        raise typer.Exit(1)  # a clone without a working driver silently merges ledgers as text
