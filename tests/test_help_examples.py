"""Every command's help ends with an example that still parses; the man pages match the commands."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from docket_git.cli import manpage
from docket_git.cli.examples import EXAMPLES

from .conftest import DOCKET

ROOT = Path(__file__).resolve().parent.parent


def invocation(example: str) -> list[str]:
    """The docket words of an example line: after a pipe, inside source <(...)."""
    text = example.split("| ", 1)[-1]
    if text.startswith("source <("):
        text = text.removeprefix("source <(").removesuffix(")")
    words = shlex.split(text)
    assert words[0] == "docket", example
    return words[1:]


def test_every_command_has_an_example_and_each_one_parses() -> None:
    seen = dict(manpage.commands())
    assert len(seen) > 30
    assert sorted(seen) == sorted(EXAMPLES), "cli/examples.py must hold exactly the visible commands"
    for path, command in seen.items():
        depth = len(path.split())
        for example in EXAMPLES[path]:
            words = invocation(example)
            assert " ".join(words[:depth]) == path, example
            # Parse with the command's real options: an example naming a removed flag fails here.
            command.make_context(path, words[depth:])  # type: ignore[attr-defined]


def test_help_shows_the_example(env: dict[str, str]) -> None:
    for args in (["claim"], ["session", "write"], ["ledger", "append"]):
        out = subprocess.run([DOCKET, *args, "--help"], capture_output=True, text=True, env=env).stdout
        assert "Example:" in out
        assert EXAMPLES[" ".join(args)][0][:60] in " ".join(out.split()), out


def test_the_committed_man_pages_are_generated_from_the_commands() -> None:
    for name in ("docket", "git-docket"):
        committed = (ROOT / "man" / f"{name}.1").read_text(encoding="utf-8")
        assert committed == manpage.render(name), f"man/{name}.1 is stale: python -m docket_git.cli.manpage man"
    assert ".B git docket resolve\\-conflict" in manpage.render("git-docket")
