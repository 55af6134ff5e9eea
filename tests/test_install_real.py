"""Installing docket for real use: the built wheel, installed with pipx into a temporary home, on its own.

Nothing from this checkout's .venv is on PATH while the installed commands run: only pipx's bin
directory and /usr/bin:/bin. The wheel is built from a copy of the working tree (so parallel tests
never share a build/ directory). Every subprocess has a timeout, so a stuck network install fails
the test instead of hanging it. See docs/install.md.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import project_copy

#: Run once beside the parallel suite (scripts/test), not on a worker: builds a wheel and pipx-installs it: mostly waiting on downloads.
pytestmark = pytest.mark.once

PIPX = Path(sys.executable).parent / "pipx"
#: Generous bounds: a cold pip cache downloads docket's dependencies once.
BUILD_TIMEOUT = 300
INSTALL_TIMEOUT = 600
STEP_TIMEOUT = 60


def real_pip_cache() -> str:
    """pip's cache as the developer has it, so the isolated HOME does not force fresh downloads."""
    return os.environ.get("PIP_CACHE_DIR") or str(Path.home() / ".cache" / "pip")


def run(args: list[str], *, cwd: Path, env: dict[str, str], timeout: int = STEP_TIMEOUT, stderr: bool = True) -> str:
    """Run a command; its output (with stderr unless told not), or a test failure that shows it."""
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(args)} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc.stdout + (proc.stderr if stderr else "")


def test_pipx_installed_wheel_inits_records_and_merges(tmp_path: Path) -> None:
    if not PIPX.exists():
        pytest.fail("pipx is not installed beside the test interpreter; run: pip install -e '.[test]'")
    home = tmp_path / "home"
    home.mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DOCKET_", "GIT_", "VIRTUAL_ENV", "PYTHON"))}
    base.update(HOME=str(home), PIP_CACHE_DIR=real_pip_cache(), XDG_CACHE_HOME=str(tmp_path / "cache"))

    # Build the wheel from a copy of the working tree.
    source = project_copy(tmp_path / "src")
    wheels = tmp_path / "wheels"
    run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(source)],
        cwd=tmp_path,
        env=base,
        timeout=BUILD_TIMEOUT,
    )
    (wheel,) = wheels.glob("docket_git-*.whl")

    # pipx, into a temporary home and bin directory.
    pipx_home, bin_dir = tmp_path / "pipx", tmp_path / "bin"
    pipx_env = {
        **base,
        "PIPX_HOME": str(pipx_home),
        "PIPX_BIN_DIR": str(bin_dir),
        "PIPX_MAN_DIR": str(tmp_path / "man"),
    }
    run([str(PIPX), "install", str(wheel)], cwd=tmp_path, env=pipx_env, timeout=INSTALL_TIMEOUT)
    assert (bin_dir / "docket").exists() and (bin_dir / "git-docket").exists()

    # A fresh repository and a PATH with nothing but pipx's bin directory and the system's.
    env = {
        **base,
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "DOCKET_AUTHOR": "newcomer",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
    }
    (home / ".gitconfig").write_text("[user]\n\tname = Newcomer\n\temail = new@example.com\n")
    repo = tmp_path / "project"
    repo.mkdir()

    def git(*args: str) -> str:
        return run(["git", *args], cwd=repo, env=env)

    def docket(*args: str) -> str:
        return run(["docket", *args], cwd=repo, env=env)

    git("init", "-q", "-b", "main")
    out = docket("init")
    assert "registered the ledger merge driver" in out, out
    driver = git("config", "--get", "merge.docket.driver")
    assert "-I -m docket_git merge-driver %O %A %B %P" in driver and str(pipx_home) in driver
    docket("claim", "The API is versioned in the URL", "--state", "accepted", "--scope", "api/")
    git("add", "-A")
    git("commit", "-q", "-m", "init docket")  # runs the pre-commit hook docket init installed

    git("checkout", "-q", "-b", "topic")
    docket("claim", "Topic: retries back off exponentially", "--scope", "net/")
    git("commit", "-q", "-am", "topic claim")
    git("checkout", "-q", "main")
    docket("question", "Main: do we need a v2 endpoint?", "--scope", "api/")
    git("commit", "-q", "-am", "main question")

    out = git("merge", "--no-edit", "topic")  # the installed merge driver renumbers topic's tail
    ledger = (repo / ".docket" / "ledger.jsonl").read_text()
    assert "<<<<<<<" not in ledger, out
    listed = docket("list")
    for text in ("The API is versioned", "Main: do we need a v2", "Topic: retries back off"):
        assert text in listed, listed
    assert len(ledger.splitlines()) == 3
    docket("check")
    # git finds git-docket on the same PATH; topic's c2 came after main's q2, so it is now c3.
    records = json.loads(run(["git", "docket", "list", "--json"], cwd=repo, env=env, stderr=False))
    assert [r["id"] for r in records] == ["c1", "q2", "c3"]
    assert records[2]["text"] == "Topic: retries back off exponentially"

    # `git docket --help` makes git run `man git-docket`: pipx linked the wheel's page into its man dir.
    assert (tmp_path / "man" / "man1" / "git-docket.1").exists()
    if shutil.which("man") is None:
        if os.environ.get("REQUIRE_TEST_TOOLS"):
            pytest.fail("man is not installed; .ci/run installs man-db")
        return
    man_env = {**env, "MANPATH": str(tmp_path / "man"), "MANPAGER": "cat", "PAGER": "cat", "MANWIDTH": "100"}
    page = run(["git", "docket", "--help"], cwd=repo, env=man_env)
    assert "GIT-DOCKET(1)" in page and "git docket resolve-conflict" in page, page
