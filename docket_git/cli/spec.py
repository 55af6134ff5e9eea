"""One declaration per command, two parsers built from it: Typer's and a light one.

Git and agents start the hot commands (recording, ``context``, ``show``) many
times a day, and importing Typer costs them a tenth of a second before they
start. So a hot command is declared once, as a ``Command`` of ``Arg`` and
``Opt`` values, and:

- ``Command.parse`` is a strict Typer-free parser for the plain forms; anything
  it does not take for certain (``--help``, an unknown or abbreviated option, a
  missing value, a value that looks like an option) returns None, and the
  caller hands the arguments to Typer;
- ``Command.register`` builds the Typer command (help, usage errors,
  completion) from the same declaration, calling the same executor.

Nothing here imports Typer at module level.
"""

from __future__ import annotations

from collections.abc import Callable

TYPE_CHECKING = False  # typing and inspect cost every light command ~10 ms; only Typer's path needs inspect
if TYPE_CHECKING:
    from typing import Any


class _Required:
    """The default of a positional argument that has none (a sentinel)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED = _Required()


class Opt:
    """An option: ``--flag VALUE`` (repeatable or not), a bare ``--flag``, or ``--flag/--no-flag``.

    Plain classes, not dataclasses: every light command imports this module, and
    building three dataclasses cost several milliseconds of its start-up.
    """

    __slots__ = ("bare", "default", "dest", "flag", "help", "integer", "metavar", "negative", "repeat", "required")

    def __init__(
        self,
        flag: str,
        dest: str,
        help: str,
        metavar: str = "TEXT",
        repeat: bool = False,
        bare: bool = False,
        negative: str = "",  # ``--no-x`` for a tri-state flag whose default is None
        required: bool = False,
        default: Any = "",
        integer: bool = False,
    ) -> None:
        self.flag, self.dest, self.help, self.metavar = flag, dest, help, metavar
        self.repeat, self.bare, self.negative, self.required = repeat, bare, negative, required
        self.default, self.integer = default, integer

    def __repr__(self) -> str:
        return f"Opt({self.flag!r}, {self.dest!r})"

    def initial(self) -> Any:
        """The value the executor sees when the option is not given."""
        if self.repeat:
            return []
        if self.bare:
            return False
        return self.default


#: The most digits an integer option takes: every count docket takes fits in 18 (and Python refuses
#: to convert past 4,300, with a ValueError no user should see).
MAX_DIGITS = 18


def integer(flag: str, text: str) -> int:
    """The value of an integer option; raises ``UsageError`` naming it when it is not one or out of range."""
    text = text.strip()
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isdigit() or not digits.isascii():
        from docket_git.errors import UsageError

        raise UsageError(f"{flag}: {text[:40]!r} is not a whole number")
    if len(digits.lstrip("0")) > MAX_DIGITS:
        from docket_git.errors import UsageError

        raise UsageError(f"{flag}: a number of {len(digits)} digits is out of range (at most {MAX_DIGITS} digits)")
    return int(text)


class Arg:
    """A positional argument; required unless it has a default. ``many``: the last one, taking every value left (a list)."""

    __slots__ = ("default", "dest", "help", "many", "metavar")

    def __init__(self, dest: str, help: str, metavar: str = "", default: Any = REQUIRED, many: bool = False) -> None:
        self.dest, self.help, self.default, self.many = dest, help, default, many
        self.metavar = metavar  # "" shows the argument's name

    def __repr__(self) -> str:
        return f"Arg({self.dest!r})"


class Command:
    """A command's name, help, panel, arguments and options, in the order ``--help`` lists them."""

    __slots__ = ("args", "help", "name", "options", "panel", "table")

    def __init__(
        self, name: str, help: str, panel: str, args: tuple[Arg, ...] = (), options: tuple[Opt, ...] = ()
    ) -> None:
        self.name, self.help, self.panel, self.args, self.options = name, help, panel, args, options
        self.table: dict[str, tuple[Opt, bool]] = {}
        for opt in self.options:
            self.table[opt.flag] = (opt, True)
            if opt.negative:
                self.table[opt.negative] = (opt, False)

    def __repr__(self) -> str:
        return f"Command({self.name!r})"

    def parse(self, argv: list[str]) -> dict[str, Any] | None:
        """The values of a plain invocation, keyed by dest; None for anything Typer should see."""
        values: dict[str, Any] = {opt.dest: opt.initial() for opt in self.options}
        positional: list[str] = []
        seen: set[str] = set()
        i = 0
        while i < len(argv):
            arg = argv[i]
            i += 1
            if not arg.startswith("-") or arg == "-":
                positional.append(arg)
                continue
            flag, eq, inline = arg.partition("=")
            entry = self.table.get(flag)
            if entry is None:
                return None  # --help, -h, --, an unknown or abbreviated option
            opt, positive = entry
            if opt.bare or opt.negative:
                if eq:
                    return None
                values[opt.dest] = positive
                continue
            if eq:
                value = inline
            elif i < len(argv) and not (argv[i].startswith("-") and argv[i] != "-"):
                value, i = argv[i], i + 1
            else:
                return None  # the value is missing, or looks like an option: Typer says which
            if opt.integer:
                text = value.strip()
                digits = text[1:] if text[:1] in "+-" else text
                if not digits.isdigit() or not digits.isascii() or len(digits.lstrip("0")) > MAX_DIGITS:
                    return None  # Typer's path refuses it with the option's name (``integer``)
                value = int(text)
            if opt.repeat:
                values[opt.dest].append(value)
            else:
                values[opt.dest] = value
            seen.add(opt.flag)
        many = bool(self.args) and self.args[-1].many
        if len(positional) > len(self.args) and not many:
            return None
        for position, arg_spec in enumerate(self.args):
            if arg_spec.many:
                if position >= len(positional) and arg_spec.default is REQUIRED:
                    return None
                values[arg_spec.dest] = positional[position:]
            elif position < len(positional):
                values[arg_spec.dest] = positional[position]
            elif arg_spec.default is REQUIRED:
                return None
            else:
                values[arg_spec.dest] = arg_spec.default
        if any(opt.required and opt.flag not in seen for opt in self.options):
            return None
        return values

    def run_light(self, argv: list[str], run: Callable[[dict[str, Any]], int | None]) -> int | None:
        """Run a plain invocation through ``run`` behind ``errors.guarded`` (its exit code); None for Typer."""
        from docket_git.errors import guarded

        values = self.parse(argv)
        if values is None:
            return None
        return guarded(lambda: run(values))

    def register(self, app: Any, run: Callable[[dict[str, Any]], int | None]) -> None:
        """Add this command to a Typer app; it calls ``run`` with the same values ``parse`` gives."""
        import inspect

        import typer

        params = []
        annotations: dict[str, Any] = {}
        for arg_spec in self.args:
            default = ... if arg_spec.default is REQUIRED else arg_spec.default
            shown = arg_spec.default is not REQUIRED
            info = typer.Argument(default, metavar=arg_spec.metavar or None, help=arg_spec.help, show_default=shown)
            params.append(inspect.Parameter(arg_spec.dest, inspect.Parameter.KEYWORD_ONLY, default=info))
            annotations[arg_spec.dest] = list[str] if arg_spec.many else str
        for opt in self.options:
            if opt.repeat:
                kind: Any = list[str] | None
                info = typer.Option(None, opt.flag, metavar=opt.metavar, help=opt.help, show_default=False)
            elif opt.negative:
                kind = bool | None
                info = typer.Option(None, f"{opt.flag}/{opt.negative}", help=opt.help, show_default=False)
            elif opt.bare:
                kind = bool
                info = typer.Option(False, opt.flag, help=opt.help, show_default=False)
            else:
                kind = str | None if opt.default is None else str  # an integer: converted below, as parse does
                default = ... if opt.required else opt.default
                info = typer.Option(
                    default, opt.flag, metavar=opt.metavar, help=opt.help, show_default=bool(opt.default)
                )
            params.append(inspect.Parameter(opt.dest, inspect.Parameter.KEYWORD_ONLY, default=info))
            annotations[opt.dest] = kind

        def command(**values: Any) -> None:
            for opt in self.options:
                if opt.repeat and values.get(opt.dest) is None:
                    values[opt.dest] = []
                elif opt.integer and isinstance(values.get(opt.dest), str):
                    values[opt.dest] = integer(opt.flag, values[opt.dest])
            code = run(values)
            if isinstance(code, int) and code:
                raise typer.Exit(code)

        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = annotations
        command.__name__ = self.name.replace("-", "_")
        command.__doc__ = self.help
        app.command(self.name, rich_help_panel=self.panel or None)(command)  # "": a sub-app's command
