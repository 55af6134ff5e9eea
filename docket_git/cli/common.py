"""Helpers shared by the command modules: ledger lookup, errors, ID lists."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import typer

from docket_git.ledger import store
from docket_git.ledger.recording import split_ids as split_ids  # shared with the Typer-free commands


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``docket: message`` on stderr and exit with code."""
    print(f"docket: {message}", file=sys.stderr)
    raise typer.Exit(code)


def usage(message: str) -> NoReturn:
    """A usage error: ``docket: message``, exit 2."""
    fail(message, 2)


def warn(message: str) -> None:
    """A ``docket:`` line on stderr that does not fail the command."""
    print(f"docket: {message}", file=sys.stderr)


def ledger_path() -> Path | None:
    """The existing ledger for the current directory, or None."""
    return store.find_ledger(Path.cwd())


def read_snapshot() -> store.Snapshot:
    """The current directory's ledger, validated (empty in a repository without one; NoLedger outside any)."""
    from docket_git.ledger import index

    path = ledger_path()
    if path is None:
        store.locate(Path.cwd())  # outside a repository: the one line every command gives, exit 1
    return index.read(path)
