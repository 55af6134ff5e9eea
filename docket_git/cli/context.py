"""Reading: context, the session briefing.

``entry.py`` runs plain invocations through ``context.command.fast_main``
without importing Typer; this command handles the rest (help, usage errors)
with the same executor.
"""

from __future__ import annotations

from typing import Annotated

import typer

from docket_git.cli.app import app
from docket_git.cli.context_fast import Options, execute
from docket_git.context.envelope import HARNESSES


@app.command(rich_help_panel="Read")
def context(
    query: Annotated[str, typer.Option("--query", help="The task in words; rare terms weigh most.")] = "",
    file: Annotated[
        list[str] | None, typer.Option("--file", metavar="PATH", help="A file the task touches. Repeatable.")
    ] = None,
    max_chars: Annotated[
        int | None, typer.Option("--max-chars", metavar="N", help="Hard ceiling in characters (at least 512).")
    ] = None,
    all_records: Annotated[
        bool, typer.Option("--all", help="Every current record in full text, budget allowing.")
    ] = False,
    auto_scope: Annotated[
        bool | None,
        typer.Option(
            "--auto-scope/--no-auto-scope",
            help="Scope by changed and untracked files (else the last commit). Default: when no query, file or --all.",
        ),
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", metavar="ID[@DIGEST]", help="Only what changed after that record.")
    ] = None,
    harness: Annotated[
        str | None, typer.Option("--for", metavar="HARNESS", help=f"Wrap in hook JSON: {', '.join(HARNESSES)}.")
    ] = None,
) -> None:
    """Print the briefing an agent reads at session start: bounded, deterministic, scoped by the task."""
    execute(Options(query, file or [], max_chars, all_records, auto_scope, since, harness))
