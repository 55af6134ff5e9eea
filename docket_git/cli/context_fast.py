"""``docket context`` without Typer: the one executor both entry paths share.

Session hooks start ``docket context`` at every session start, so
``entry.py`` hands a plain invocation to ``fast_main`` here before Typer is
imported. Anything this strict parser does not recognise (``--help``, an
unknown or malformed option) returns None, and the Typer command, which
calls the same ``execute``, reports it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from docket_git.context.envelope import HARNESSES, wrap
from docket_git.ledger.recording import UsageError


@dataclass
class Options:
    """The parsed ``docket context`` options."""

    query: str = ""
    files: list[str] = field(default_factory=list)
    max_chars: int | None = None
    all_records: bool = False
    auto_scope: bool | None = None
    since: str | None = None
    harness: str | None = None


def execute(options: Options) -> None:
    """Compose the briefing and print it (wrapped for a harness with --for).

    Raises ``UsageError`` (exit 2) for a bad --for or --max-chars, and
    ``LedgerError`` (exit 1) for a bad ledger or config.
    """
    if options.harness is not None and options.harness not in HARNESSES:
        raise UsageError(f"--for must be one of {', '.join(HARNESSES)}; got {options.harness!r}")
    from docket_git.context.briefing import build_briefing

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


_VALUED = {"--query": "query", "--file": "files", "--max-chars": "max_chars", "--since": "since", "--for": "harness"}
_FLAGS = {
    "--all": ("all_records", True),
    "--auto-scope": ("auto_scope", True),
    "--no-auto-scope": ("auto_scope", False),
}


def parse(args: list[str]) -> Options | None:
    """Options from ``docket context`` arguments, or None for anything but the plain forms."""
    options = Options()
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, inline = arg.partition("=")
        if arg in _FLAGS:
            attr, value = _FLAGS[arg]
            setattr(options, attr, value)
            i += 1
            continue
        if name not in _VALUED:
            return None
        if eq:
            value = inline
            i += 1
        elif i + 1 < len(args) and not args[i + 1].startswith("-"):
            value = args[i + 1]
            i += 2
        else:
            return None
        attr = _VALUED[name]
        if attr == "files":
            options.files.append(value)
        elif attr == "max_chars":
            text = value.strip()
            digits = text[1:] if text[:1] in "+-" else text
            if not digits.isdigit() or not digits.isascii():
                return None
            options.max_chars = int(text)
        else:
            setattr(options, attr, value)
    return options


def fast_main(args: list[str]) -> int | None:
    """Run ``docket context ARGS`` without Typer; None when Typer should handle the arguments."""
    options = parse(args)
    if options is None:
        return None
    from docket_git.ledger.store import LedgerError

    try:
        execute(options)
    except LedgerError as exc:
        print(f"docket: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        sys.stderr.close()
        return 0
    return 0
