"""The Typer application every command module registers on."""

from __future__ import annotations

import os

# Plain click-style help and errors: rich adds start-up time and box drawing.
os.environ.setdefault("TYPER_USE_RICH", "0")

import typer
import typer.core

# An argument's help line is its name and what it means: Typer would add the Python type
# (``text <str>``, ``ID <list[str]>``), which says nothing to a user.
typer.core.TyperArgument.display_type_rich = lambda self, ctx: None  # type: ignore[method-assign]

app = typer.Typer(
    name="docket",
    help=(
        "A git-native ledger of claims, decisions and questions for coding agents.\n\n"
        "Records live in .docket/ledger.jsonl, travel with the code and merge on git merge. "
        "Start a session with 'docket context'."
    ),
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    add_completion=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from docket_git import VERSION_LINE

        typer.echo(VERSION_LINE)
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """A git-native ledger of claims, decisions and questions for coding agents."""
