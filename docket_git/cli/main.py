"""The Typer application with every command registered, and the one place it is run."""

from __future__ import annotations

import importlib
import os
import sys

import typer

from docket_git.cli.app import app
from docket_git.errors import LedgerError, guarded

# Each module registers its commands on import; `docket --help` lists them in
# this order: record, read, history, share across branches, set up, maintain.
COMMAND_MODULES = (
    "record",
    "context",
    "read",
    "sql",
    "history",
    "merge",
    "setup",
    "agents",
    "mcp",
    "migrate",
    "session",
    "ledger",
    "graph",
    "completion",
    "resolve",
)
for _name in COMMAND_MODULES:
    _module = importlib.import_module(f"docket_git.cli.{_name}")
    if hasattr(_module, "register"):  # declared once in cli.spec: built into a Typer command here
        _module.register(app)


def _add_examples(typer_app: typer.Typer, prefix: str = "") -> None:
    """Give every command the examples ``cli/examples.py`` holds for it, as its help epilog."""
    from docket_git.cli.examples import epilog

    for info in typer_app.registered_commands:
        name = info.name or (info.callback.__name__.replace("_", "-") if info.callback else "")
        if info.epilog is None:
            info.epilog = epilog(prefix + name)
    for group in typer_app.registered_groups:
        sub = group.typer_instance
        if sub is not None:
            _add_examples(sub, prefix + (group.name or sub.info.name or "") + " ")


_add_examples(app)


def argument_name(args: list[str], position: int) -> str:
    """The option (``--where``) or argument (``TEXT``) that takes ``args[position]``, as the parser sees it.

    For messages about one argument before any command runs (``entry``'s
    UTF-8 check); ``argument N`` when no parameter takes it.
    """
    bad = args[position]
    flag, equals, _ = bad.partition("=")
    if equals and flag.startswith("--"):
        return flag
    command = typer.main.get_command(app)  # duck-typed below: click's, or Typer's own copy of it
    ctx = command.make_context("docket", list(args), resilient_parsing=True)
    while hasattr(command, "resolve_command"):  # a group
        rest = [*(getattr(ctx, "protected_args", None) or getattr(ctx, "_protected_args", None) or []), *ctx.args]
        if not rest:
            break
        _, sub, rest = command.resolve_command(ctx, rest)
        if sub is None:
            break
        command, ctx = sub, sub.make_context(sub.name or "", rest, parent=ctx, resilient_parsing=True)
    for param in command.params:
        value = ctx.params.get(param.name or "")
        values = value if isinstance(value, list | tuple) else [value]
        if any(v is not None and str(v) == bad for v in values):
            if param.param_type_name == "option":
                return max(param.opts, key=len)
            return (param.metavar or param.name or "").upper()
    return f"argument {position + 1}"


def run(args: list[str]) -> None:
    """Run the Typer app on args; ledger errors become ``docket: ...`` and exit 1, usage errors exit 2."""
    prog = "git docket" if os.path.basename(sys.argv[0]) == "git-docket" else "docket"
    outcome: list[object] = []

    def invoke() -> None:
        try:
            outcome.append(app(args=args, prog_name=prog, standalone_mode=False))
        except typer.Abort:
            raise LedgerError("aborted") from None
        except Exception as exc:
            # The parser's errors (unknown option, missing argument, bad value) carry an exit code
            # and a message; their class lives in click or, in newer Typer, in Typer's own copy of it.
            if not (hasattr(exc, "format_message") and hasattr(exc, "exit_code") and hasattr(exc, "show")):
                raise
            if not hasattr(exc, "ctx") or type(exc).__name__ == "NoArgsIsHelpError":
                exc.show()  # plain `docket`: the help text
            else:
                print(usage_error(exc), file=sys.stderr)
            outcome.append(getattr(exc, "exit_code", 2))

    failed = guarded(invoke)
    if failed:
        sys.exit(failed)
    code = outcome[0] if outcome else 0
    sys.exit(code if isinstance(code, int) else 0)


def usage_error(exc: Exception) -> str:
    """``docket: claim: missing argument 'text'`` plus the command's usage line and where help is."""
    ctx = getattr(exc, "ctx", None)
    message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    message = message.rstrip(".")
    message = message[:1].lower() + message[1:]
    if message.startswith("got unexpected extra argument"):
        # The usual slip: `--scope a b` (an option takes one value) or unquoted text with spaces.
        message += "; an option takes one value (repeat it: --scope a --scope b), and text with spaces is quoted"
    if ctx is None:
        return f"docket: {message}"
    path = ctx.command_path
    words = path.split()
    where = " ".join(words[2:] if words[:2] == ["git", "docket"] else words[1:])
    usage = ctx.get_usage().removeprefix("Usage: ")
    lead = f"docket: {where}: " if where else "docket: "
    return f"{lead}{message}\nusage: {usage}  ('{path} -h' explains every option)"
