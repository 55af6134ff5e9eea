"""FIFOs, endless files and a linked hooks directory (issue 28, items 8 and 9).

Every file docket reads goes through ``repo.files.read_bytes``: a non-blocking
open, regular files only, a size cap. Each command below hung on a plain open
or read before; here it must answer within a subprocess timeout (a hang fails
the test) with a ``docket: ...`` line naming the path.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import DOCKET, Repo
from tests.typed_helpers import declare

#: Seconds a command may take before it counts as hung (each answers in well under one).
HANG = 20


def run(repo: Repo, *args: str) -> tuple[int, str, str]:
    try:
        proc = subprocess.run(
            [DOCKET, *args], cwd=repo.path, env=repo.env, capture_output=True, timeout=HANG, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"docket {' '.join(args)} hung (no answer in {HANG} s)")
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert "Traceback" not in err and "internal error" not in err, err
    return proc.returncode, out, err


def session_file(repo: Repo) -> Path:
    out = repo.ok("session", "init", "--system", "s", "--workflow", "w", "--project", "p", "--create-dir").out
    return Path(out.strip())


def test_session_write_to_a_fifo_is_refused(repo: Repo) -> None:
    path = session_file(repo)
    fifo = path.with_name("fifo.md")
    os.mkfifo(fifo)
    code, _, err = run(repo, "session", "write", "--step", "1", "--agent", "a", "--status", "completed",
                       "--input", "i", "--output", "o", "--file", str(fifo))  # fmt: skip
    assert code == 1 and err.startswith("docket: ") and str(fifo) in err and "not a regular file (a FIFO)" in err
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".")] == []  # no temp file left


@pytest.mark.parametrize("source", ["/dev/zero", "fifo"])
def test_session_read_context_map_from_a_special_file_is_refused(repo: Repo, source: str) -> None:
    session_file(repo)
    if source == "fifo":
        os.mkfifo(repo.path / "map.fifo")
        source = str(repo.path / "map.fifo")
    code, _, err = run(repo, "session", "read", "--step-destination", "2", "--context-map", f"@{source}")
    assert code == 2 and err.startswith(f"docket: --context-map @{source}: ") and "not a regular file" in err, err


def test_an_at_file_may_be_a_link_to_a_regular_file(repo: Repo, tmp_path: Path) -> None:
    session_file(repo)
    real = tmp_path / "map.json"
    real.write_text('[{"from_step": 1}]')
    (tmp_path / "link.json").symlink_to(real)
    code, _, err = run(repo, "session", "read", "--step-destination", "2", "--context-map", f"@{tmp_path}/link.json")
    assert code == 0, err


def test_note_add_citing_a_fifo_is_refused(repo: Repo) -> None:
    declare(repo)
    os.mkfifo(repo.path / "src.fifo")
    before = (repo.path / ".docket").joinpath("ledgers").exists()
    code, _, err = run(
        repo, "ledger", "note-add", "--subject", "s", "--note", "n", "--reason", "r", "--cite", "src.fifo"
    )
    assert code == 1 and "src.fifo" in err and "not a regular file" in err, err
    assert before == (repo.path / ".docket" / "ledgers").exists()


@pytest.mark.parametrize("command", ["init", "doctor", *[f"init --agents {a}" for a in
                                     ("claude", "codex", "gemini", "copilot", "cursor")]])  # fmt: skip
def test_a_fifo_at_the_pre_commit_hook_never_hangs(repo: Repo, command: str) -> None:
    hook = Path(repo.git("rev-parse", "--path-format=absolute", "--git-path", "hooks").strip()) / "pre-commit"
    hook.unlink()
    os.mkfifo(hook)
    code, out, err = run(repo, *command.split())
    said = out + err
    assert f"{hook} is not a regular file (a FIFO)" in said and f"mv {hook} {hook}.bak" in said, said
    assert code == (1 if command == "doctor" else 0)
    assert os.path.exists(hook) and not os.path.isfile(hook)  # left as it was, nothing moved or written


# -- item 9: .git/hooks as a symbolic link ------------------------------------------------------


def linked_hooks(repo: Repo, target: Path) -> Path:
    hooks = repo.path / ".git" / "hooks"
    for name in os.listdir(hooks):
        os.unlink(hooks / name)
    hooks.rmdir()
    hooks.symlink_to(target)
    return hooks


def test_hooks_linked_outside_the_git_dir_are_refused_with_the_path(repo: Repo, tmp_path: Path) -> None:
    outside = tmp_path / "shared-hooks"
    outside.mkdir()
    hooks = linked_hooks(repo, outside)
    code, out, _ = run(repo, "init")
    assert code == 0
    assert f"pre-commit hook not installed: {hooks} is a symbolic link to {outside}, outside the git directory" in out
    assert f"git config core.hooksPath {outside}" in out
    assert list(outside.iterdir()) == []  # nothing written through the link
    code, out, _ = run(repo, "doctor")
    assert code == 1 and f"{hooks} is a symbolic link to {outside}" in out
    # Naming the directory as core.hooksPath is the user's say-so: it is used.
    repo.git("config", "core.hooksPath", str(outside))
    code, out, _ = run(repo, "init")
    assert code == 0 and (outside / "pre-commit").is_file(), out
    assert run(repo, "doctor")[0] == 0


def test_hooks_linked_inside_the_git_dir_are_followed(repo: Repo) -> None:
    real = repo.path / ".git" / "hooks.real"
    real.mkdir()
    linked_hooks(repo, Path("hooks.real"))
    code, out, _ = run(repo, "init")
    assert code == 0 and (real / "pre-commit").is_file(), out
    assert run(repo, "doctor")[0] == 0


def test_a_batch_file_that_is_a_fifo_is_refused(repo: Repo) -> None:
    os.mkfifo(repo.path / "batch.fifo")
    before = repo.ledger.read_bytes()
    code, _, err = run(repo, "record", str(repo.path / "batch.fifo"))
    assert code == 2 and "batch.fifo is not a regular file (a FIFO)" in err, err
    assert repo.ledger.read_bytes() == before
