"""Reading: ``docket context``, the session briefing, declared once for Typer and the light parser.

Session hooks start ``docket context`` at every session start, so ``entry.py``
hands a plain invocation to ``fast_main`` before Typer is imported; anything
the light parser does not take for certain (``--help``, an unknown or
malformed option) goes to the Typer command built from the same declaration,
which calls the same ``execute``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from docket_git.cli.spec import Command, Opt
from docket_git.context.envelope import HARNESSES, wrap
from docket_git.errors import UsageError, guarded, notice
from docket_git.plain import Plain

TYPE_CHECKING = False  # typing costs every light command ~3 ms at start
if TYPE_CHECKING:
    from typing import Any


class Options(Plain):
    """The parsed ``docket context`` options."""

    __slots__ = ("all_records", "auto_scope", "files", "harness", "max_chars", "query", "since")

    def __init__(
        self,
        query: str = "",
        files: list[str] | None = None,
        max_chars: int | None = None,
        all_records: bool = False,
        auto_scope: bool | None = None,
        since: str | None = None,
        harness: str | None = None,
    ) -> None:
        self.query = query
        self.files = [] if files is None else files
        self.max_chars = max_chars
        self.all_records = all_records
        self.auto_scope = auto_scope
        self.since = since
        self.harness = harness

    __hash__ = None  # type: ignore[assignment]  # mutable


COMMAND = Command(
    "context",
    "Print the briefing an agent reads at session start: bounded, deterministic, scoped by the task.",
    "Read",
    (),
    (
        Opt("--query", "query", "The task in words; rare terms weigh most."),
        Opt("--file", "files", "A file the task touches. Repeatable.", "PATH", repeat=True),
        Opt("--max-chars", "max_chars", "Hard ceiling in characters (at least 512).", "N", default=None, integer=True),
        Opt("--all", "all_records", "Every current record in full text, budget allowing.", bare=True),
        Opt(
            "--auto-scope",
            "auto_scope",
            "Scope by changed and untracked files (else the last commit). Default: when no query, file or --all.",
            negative="--no-auto-scope",
            default=None,
        ),
        Opt("--since", "since", "Only what changed after that record.", "ID[@DIGEST]", default=None),
        Opt("--for", "harness", f"Wrap in hook JSON: {', '.join(HARNESSES)}.", "HARNESS", default=None),
    ),
)


def execute(options: Options) -> None:
    """Compose the briefing and print it (wrapped for a harness with --for).

    Raises ``UsageError`` (exit 2) for a bad --for or --max-chars, and
    ``LedgerError`` (exit 1) for a bad ledger or config.
    """
    if options.harness is not None and options.harness not in HARNESSES:
        raise UsageError(f"--for must be one of {', '.join(HARNESSES)}; got {options.harness!r}")
    from docket_git.context.briefing import build_briefing
    from docket_git.ledger import store

    if store.find_ledger(Path.cwd()) is None:
        notice(store.no_ledger(Path.cwd()))

    try:
        result = build_briefing(
            query=options.query,
            files=options.files,
            max_chars=options.max_chars,
            all_records=options.all_records,
            auto_scope=options.auto_scope,
            since=options.since,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for note in result.notes:
        print(f"docket: {note}", file=sys.stderr)
    out = wrap(result.text, options.harness) if options.harness else result.text
    if out:
        sys.stdout.write(out)
        sys.stdout.flush()


def run(values: dict[str, Any]) -> None:
    """Run ``docket context`` on its parsed values (from either parser)."""
    execute(Options(**values))


def parse(args: list[str]) -> Options | None:
    """Options from ``docket context`` arguments, or None for anything but the plain forms."""
    values = COMMAND.parse(args)
    return None if values is None else Options(**values)


def fast_main(args: list[str]) -> int | None:
    """Run ``docket context ARGS`` without Typer; None when Typer should handle the arguments."""
    options = parse(args)
    if options is None:
        return None
    return guarded(lambda: execute(options))


def register(app: Any) -> None:
    """Add ``docket context`` to the Typer app."""
    COMMAND.register(app, run)
