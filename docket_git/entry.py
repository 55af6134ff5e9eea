"""Process entry point.

Git and agents start ``docket merge-driver``, ``docket hook``, ``docket
context``, the recording commands, ``docket list``, ``docket show``, ``docket ledger
append|query``, ``docket session write`` and the commit guard ``docket check --staged``
many times a day, so those are routed
here to light modules before Typer (and with it click, rich and pydantic) is
imported. Everything else, and any of
those with arguments the light parser does not take (``--help``), goes to the
Typer app.
"""

from __future__ import annotations

import gc
import os
import sys

#: Commands with a Typer-free parser (``cli/spec``): leading words -> (module whose ``fast_main`` runs
#: them, whether it takes the last of those words, e.g. the record kind). ``fast_main`` returns None
#: for anything it does not take for certain, and Typer gets the arguments.
LIGHT: dict[tuple[str, ...], tuple[str, bool]] = {
    ("context",): ("docket_git.cli.context", False),
    **{(kind,): ("docket_git.cli.record", True) for kind in ("claim", "decision", "question", "record")},
    ("list",): ("docket_git.cli.listing", False),
    ("show",): ("docket_git.cli.show", False),
    ("resolve",): ("docket_git.cli.history", True),
    ("log",): ("docket_git.cli.history", True),
    ("ledger", "append"): ("docket_git.cli.ledger_fast", True),
    ("ledger", "query"): ("docket_git.cli.ledger_fast", True),
    ("session", "write"): ("docket_git.cli.session_fast", False),
    ("sql",): ("docket_git.cli.sql", False),
    ("check",): ("docket_git.cli.check", False),
    ("mcp",): ("docket_git.cli.mcp", False),
}


def _exit_now(code: int) -> None:
    """Flush and end the process without tearing down its objects.

    A briefing of a large ledger leaves millions of objects behind; freeing
    them one by one at exit costs a tenth of a second for nothing.
    """
    from docket_git.errors import flush_notices

    flush_notices()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # a closed pipe: nothing left to say
        pass
    index = sys.modules.get("docket_git.ledger.index")
    if index is not None:
        index.finish_later()  # an index a hook left for later: built by a detached child
    warm = sys.modules.get("docket_git.history.warm")
    if warm is not None:
        warm.finish()  # merges' renumberings a hook left for later: kept by a detached process
    os._exit(code)


def _utf8(arg: str) -> bool:
    """Whether an argument is text: an argv byte that is not UTF-8 arrives as a lone surrogate (PEP 383)."""
    try:
        arg.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _refuse_not_utf8(args: list[str], position: int) -> None:
    """Exit 2 with ``docket: NAME: b'...' is not UTF-8 ...`` before any command starts.

    One check for every command (the merge driver and the hooks aside: git and
    agents start those, with paths and payloads docket does not choose), so no
    command writes a file, a lock or a session before a value it cannot store
    as text is refused. The argument is named by the parser that would take
    it (``cli.main.argument_name``).
    """
    from docket_git.errors import USAGE, warn

    try:
        from docket_git.cli.main import argument_name

        name = argument_name(args, position)
    except Exception:  # naming is a courtesy: the refusal stands without it
        name = f"argument {position + 1}"
    flag, equals, value = args[position].partition("=")
    shown = repr(os.fsencode(value if equals and flag.startswith("--") else args[position]))
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    warn(f"{name}: {shown} is not UTF-8; docket takes text arguments in UTF-8 (nothing was written)")
    _exit_now(USAGE)


def main(argv: list[str] | None = None) -> None:
    """Run docket with argv (default: the process arguments) and exit."""
    args = sys.argv[1:] if argv is None else argv
    # A docket process is short-lived and its data (parsed JSON) has no cycles:
    # the cyclic collector only rescans the growing heap, which doubles the
    # cost of reading a large ledger. Reference counting still frees memory.
    gc.disable()
    # A terminal or pipe that cannot show a character (cp1252, ascii) gets its \\u escape,
    # never a UnicodeEncodeError traceback halfway through the output.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and (getattr(stream, "encoding", "") or "").lower().replace("-", "") != "utf8":
            reconfigure(errors="backslashreplace")
    if args[:1] == ["merge-driver"]:
        from docket_git.merging.driver import main as merge_driver

        code = merge_driver(args[1:])
        from docket_git.errors import flush_notices

        flush_notices()
        sys.exit(code)
    if args[:1] == ["hook"]:
        from docket_git.agents.hooks import main as hook_main

        _exit_now(hook_main(args[1:]))
    for position, arg in enumerate(args):
        if not arg.isascii() and not _utf8(arg):
            _refuse_not_utf8(args, position)
    for words in (tuple(args[:2]), tuple(args[:1])):
        route = LIGHT.get(words)
        if route is not None:
            module, named = route
            fast_main = __import__(module, fromlist=["fast_main"]).fast_main  # the import statement's path
            rest = args[len(words) :]
            code = fast_main(words[-1], rest) if named else fast_main(rest)
            if code is not None:
                _exit_now(code)
            break
    if args == ["--version"]:
        from docket_git import VERSION_LINE

        print(VERSION_LINE)
        sys.exit(0)
    if not args:
        args = ["--help"]  # bare `docket`: the help on stdout, exit 0, as Docket and git do
    from docket_git.cli.main import run

    run(args)
