"""Terminal polish: colour on a TTY only, and ``docket completion bash|zsh|fish``."""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import DOCKET, Repo
from .graph_fixture import seed_fixture


def _on_a_tty(repo: Repo, *args: str, **extra: str) -> str:
    """docket's stdout when it is a terminal (a pseudo-terminal this test owns)."""
    leader, follower = pty.openpty()
    env = {**repo.env, "TERM": "xterm", **extra}
    proc = subprocess.Popen([DOCKET, *args], cwd=repo.path, env=env, stdout=follower, stderr=subprocess.DEVNULL)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.wait(timeout=60) == 0
    return b"".join(chunks).decode()


def test_list_is_coloured_on_a_tty_only(repo: Repo) -> None:
    seed_fixture(repo)
    tty = _on_a_tty(repo, "list")
    assert "\x1b[32maccepted\x1b[0m" in tty and "\x1b[36mresolved\x1b[0m" in tty
    plain = repo.ok("list").out
    assert "\x1b" not in plain
    # Without the escape codes the terminal shows exactly what a pipe gets.
    assert (
        tty.replace("\r\n", "\n")
        .replace("\x1b[0m", "")
        .replace("\x1b[32m", "")
        .replace("\x1b[36m", "")
        .replace("\x1b[33m", "")
        .replace("\x1b[34m", "")
        .replace("\x1b[31m", "")
        == plain
    )
    assert "\x1b" not in _on_a_tty(repo, "list", NO_COLOR="1")
    assert "\x1b" not in _on_a_tty(repo, "list", TERM="dumb")
    assert "\x1b" not in _on_a_tty(repo, "list", AI_AGENT="claude_code")


def _bash_complete(script: Path, repo: Repo, line: str) -> list[str]:
    words = line.split(" ")
    program = (
        f"source {script}\n"
        f"COMP_WORDS=({' '.join(repr(w) for w in words)})\n"
        f"COMP_CWORD={len(words) - 1}\n"
        "_docket\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    proc = subprocess.run(["bash", "-c", program], cwd=repo.path, env=repo.env, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return [w for w in proc.stdout.splitlines() if w]


def test_bash_completion_completes_commands_options_vocabularies_and_ids(repo: Repo, tmp_path: Path) -> None:
    seed_fixture(repo)
    script = tmp_path / "docket.bash"
    script.write_text(repo.ok("completion", "bash").out)
    assert _bash_complete(script, repo, "docket gra") == ["graph"]
    assert set(_bash_complete(script, repo, "docket ex")) == {"export"}
    assert _bash_complete(script, repo, "docket list --ki") == ["--kind"]
    assert _bash_complete(script, repo, "docket list --kind d") == ["decision"]
    assert sorted(_bash_complete(script, repo, "docket list --state re")) == ["rejected", "resolved", "revoked"]
    assert _bash_complete(script, repo, "docket export --format m") == ["mermaid"]
    assert _bash_complete(script, repo, "docket show q") == ["q3", "q10"]
    assert _bash_complete(script, repo, "docket decision x --depends-on c") == ["c1", "c2", "c4", "c8", "c9"]
    # Hidden commands stay hidden.
    assert _bash_complete(script, repo, "docket merge") == []


def test_zsh_and_fish_scripts(repo: Repo, tmp_path: Path) -> None:
    zsh = repo.ok("completion", "zsh").out
    fish = repo.ok("completion", "fish").out
    assert zsh.startswith("#compdef docket\n") and "compdef _docket docket" in zsh
    assert "'graph:Draw the ledger" in zsh
    assert (
        "complete -c docket -n '__fish_seen_subcommand_from export' -l format -xa 'json jsonl csv mermaid dot'" in fish
    )
    for shell, text in (("zsh", zsh), ("fish", fish)):
        found = shutil.which(shell)
        if found is None:
            continue  # syntax is checked where the shell is installed
        path = tmp_path / f"docket.{shell}"
        path.write_text(text)
        proc = subprocess.run([found, "-n", str(path)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


def test_completion_refuses_an_unknown_shell(repo: Repo) -> None:
    result = repo.docket("completion", "tcsh")
    assert result.code == 2
    assert result.err == "docket: completion: SHELL must be one of bash, zsh, fish; got 'tcsh'\n"
    assert repo.docket("completion").code == 2


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_lists_every_visible_command(repo: Repo, shell: str) -> None:
    text = repo.ok("completion", shell).out
    helptext = repo.ok("--help").out
    for name in ("list", "show", "graph", "export", "context", "completion"):
        assert name in helptext and name in text
    assert "merge-driver" not in text
