"""The pre-commit framework runs .pre-commit-hooks.yaml's docket-check for real (``pre-commit try-repo``).

pre-commit installs docket from a temporary git clone of this working tree into its own
environment under a temporary PRE_COMMIT_HOME, then runs the hook in a user's repository. While it
runs, PATH holds only /usr/bin:/bin, so the ``docket`` that checks the ledger is the one pre-commit
installed, not this checkout's. Every subprocess has a timeout (a cold install downloads packages).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo, project_copy

#: Run once beside the parallel suite (scripts/test), not on a worker: pre-commit pip-installs docket into its own environment: mostly waiting on downloads.
pytestmark = pytest.mark.once

ROOT = Path(__file__).resolve().parent.parent
HOOK_ID = "docket-check"
INSTALL_TIMEOUT = 600


def hooks_repo(dest: Path, env: dict[str, str]) -> Path:
    """A git repository holding this working tree's files in one commit (what try-repo clones)."""
    project_copy(dest)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "--no-verify", "-m", "snapshot"]):
        subprocess.run(["git", *args], cwd=dest, env=env, check=True, capture_output=True)
    return dest


def try_repo(project: Path, hooks: Path, env: dict[str, str], home: Path) -> subprocess.CompletedProcess[str]:
    """``pre-commit try-repo HOOKS docket-check`` in project, with only the system's tools on PATH."""
    run_env = {**env, "PATH": "/usr/bin:/bin", "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    run_env.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hooks), HOOK_ID, "--verbose"],
        cwd=project,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
    )


def test_precommit_framework_passes_an_append_and_blocks_a_hand_edit(repo: Repo, tmp_path: Path) -> None:
    if shutil.which("pre-commit", path=str(Path(sys.executable).parent)) is None:
        pytest.fail("pre-commit is not installed beside the test interpreter; run: pip install -e '.[test]'")
    (hooks := tmp_path / "hooks").mkdir()
    hooks_repo(hooks, repo.env)
    home = tmp_path / "pre-commit-home"
    # pip's own cache, so the isolated HOME of the repo fixture does not force fresh downloads.
    env = {**repo.env, "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR") or str(Path.home() / ".cache" / "pip")}

    repo.ok("claim", "Ledgers are append-only", "--state", "accepted")
    repo.git("add", "-A")
    repo.git("commit", "-q", "--no-verify", "-m", "first record")

    # A valid append passes.
    repo.ok("claim", "A second, appended record")
    repo.git("add", ".docket/ledger.jsonl")
    ok = try_repo(repo.path, hooks, env, home)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "Passed" in ok.stdout, ok.stdout
    repo.git("commit", "-q", "--no-verify", "-m", "second record")

    # A hand edit of a committed line is blocked, with the check's message.
    ledger = repo.path / ".docket" / "ledger.jsonl"
    edited = ledger.read_text().replace("Ledgers are append-only", "Ledgers are editable", 1)
    ledger.write_text(edited)
    repo.git("add", ".docket/ledger.jsonl")
    blocked = try_repo(repo.path, hooks, env, home)
    out = blocked.stdout + blocked.stderr
    assert blocked.returncode == 1, out
    assert "Failed" in out, out
    assert "line 1: a committed line was changed or deleted, and the ledger is append-only" in out, out
    assert ledger.read_text() == edited  # the hook reports; it never rewrites the user's file
