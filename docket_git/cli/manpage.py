"""The man pages ``docket(1)`` and ``git-docket(1)``, generated from the commands' own help.

``git docket --help`` makes git run ``man git-docket``; the wheel installs
these pages under ``share/man/man1`` beside its scripts, where ``man`` looks
for a ``bin/`` directory on ``PATH`` (a venv, pipx). Regenerate with
``python -m docket_git.cli.manpage man/``; a test keeps the committed pages equal.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import typer.main

from docket_git import __version__
from docket_git.cli.examples import EXAMPLES
from docket_git.cli.main import app


def _roff(text: str) -> str:
    """Escape text for roff: backslashes, and a leading dot or quote that would read as a request."""
    out = []
    for line in text.replace("\\", "\\e").replace("-", "\\-").splitlines():
        out.append("\\&" + line if line.startswith((".", "'")) else line)
    return "\n".join(out)


def commands() -> Iterator[tuple[str, object]]:
    """(command path, click command) for every visible command, in ``--help`` order."""

    def walk(command: object, path: list[str]) -> Iterator[tuple[str, object]]:
        subs = getattr(command, "commands", None)
        if not subs:
            yield " ".join(path), command
            return
        for name, sub in subs.items():
            if not getattr(sub, "hidden", False):
                yield from walk(sub, [*path, name])

    yield from walk(typer.main.get_command(app), [])


def _summary(command: object) -> str:
    text = (getattr(command, "help", None) or "").strip()
    return " ".join(text.split("\n\n")[0].split())


def render(name: str) -> str:
    """The roff source of ``docket.1`` (name ``docket``) or ``git-docket.1`` (name ``git-docket``)."""
    invoked = "git docket" if name == "git-docket" else "docket"
    title = _roff(name.upper())
    lines = [
        f'.TH {title} 1 "" "docket-git {__version__}" "docket-git manual"',
        ".SH NAME",
        f"{_roff(name)} \\- a git\\-native ledger of claims, decisions and questions for coding agents",
        ".SH SYNOPSIS",
        f".B {_roff(invoked)}",
        "\\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGS\\fR]",
        ".SH DESCRIPTION",
        _roff(
            "Records live in .docket/ledger.jsonl as append-only JSONL, travel with the code and merge on "
            "git merge. Start a session with 'docket context'. 'git docket ...' and 'docket ...' are the "
            "same commands. Every command explains its options with -h."
        ),
        ".SH COMMANDS",
    ]
    for path, command in commands():
        lines += [".TP", f".B {_roff(invoked + ' ' + path)}", _roff(_summary(command))]
        for example in EXAMPLES.get(path, ()):
            lines += [".br", f"Example: \\f(CW{_roff(example)}\\fR"]
    lines += [
        ".SH EXIT STATUS",
        "0 on success, 1 when the ledger or the repository refuses the request, 2 for a usage error.",
        ".SH FILES",
        ".TP",
        ".B .docket/ledger.jsonl",
        "the ledger (schema 2), one record per line, LF line ends.",
        ".TP",
        ".B .docket/config.toml",
        "briefing settings and typed ledger declarations.",
        ".SH SEE ALSO",
        _roff("git(1), gitattributes(5); the docs/ directory of docket-git (docs/README.md)."),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Write ``docket.1`` and ``git-docket.1`` into the directory argv[0] (default ``man``)."""
    out = Path(argv[0] if argv else "man")
    out.mkdir(parents=True, exist_ok=True)
    for name in ("docket", "git-docket"):
        (out / f"{name}.1").write_text(render(name), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
