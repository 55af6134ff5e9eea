"""gitio.run_git spawns git without the subprocess module and answers as it did through it.

Its contract: git's stdout when git exits 0, else None; None when git is
missing, the directory does not exist, or git outlives GIT_TIMEOUT; git's
stderr never reaches ours. Each case runs the real git and compares with
``subprocess.run`` (the old way, kept as the fallback).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from docket_git.repo import gitio
from tests.conftest import Repo


def old(cwd: Path, *args: str) -> bytes | None:
    return gitio._run_git_subprocess(cwd, *args)


def test_output_matches_subprocess_even_past_a_pipe_buffer(bare_repo: Repo) -> None:
    big = bare_repo.path / "big.bin"
    big.write_bytes(bytes(range(256)) * 8192)  # 2 MiB: many pipe buffers
    (bare_repo.path / "odd name\n.txt").write_text("x\n")
    bare_repo.git("add", "-A")
    bare_repo.git("commit", "-q", "-m", "big")
    for args in (
        ("show", "HEAD:big.bin"),
        ("ls-files", "-z"),
        ("status", "--porcelain=v2", "-z"),
        ("log", "--format=%H %s"),
        ("rev-parse", "--show-toplevel"),
    ):
        got = gitio.run_git(bare_repo.path, *args)
        assert got is not None
        assert got == old(bare_repo.path, *args)
    assert len(gitio.run_git(bare_repo.path, "show", "HEAD:big.bin") or b"") == 2 * 1024 * 1024


def test_runs_in_the_given_directory(bare_repo: Repo, tmp_path: Path) -> None:
    sub = bare_repo.path / "a" / "b"
    sub.mkdir(parents=True)
    assert gitio.run_git(sub, "rev-parse", "--show-prefix") == b"a/b/\n" == old(sub, "rev-parse", "--show-prefix")
    outside = tmp_path / "outside"
    outside.mkdir()
    assert gitio.run_git(outside, "rev-parse", "--git-dir") is None  # not a repository: git exits 128


def test_failures_are_none_and_quiet(bare_repo: Repo, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert gitio.run_git(bare_repo.path, "rev-parse", "--verify", "no-such-ref") is None
    assert gitio.run_git(bare_repo.path, "no-such-command") is None
    assert gitio.run_git(tmp_path / "missing", "status") is None
    assert old(tmp_path / "missing", "status") is None
    out, err = capfd.readouterr()
    assert out == "" and err == ""  # git's complaints went to the null device


def test_no_git_on_path(bare_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert gitio.run_git(bare_repo.path, "status") is None
    assert old(bare_repo.path, "status") is None


def test_a_git_that_hangs_is_killed(bare_repo: Repo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A git that outlives the timeout (here: an alias that sleeps) gives None, promptly, and is reaped."""
    monkeypatch.setattr(gitio, "GIT_TIMEOUT", 0.5)
    pidfile = tmp_path / "pid"
    start = time.monotonic()
    got = gitio.run_git(bare_repo.path, "-c", f"alias.hang=!echo $$ > '{pidfile}'; exec sleep 30", "hang")
    assert got is None
    assert time.monotonic() - start < 5
    # No child of ours is left unreaped (a zombie would make waitpid return it).
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)
    sleeper = int(pidfile.read_text())
    for _ in range(100):  # the alias's shell became sleep; kill it so nothing outlives the test
        try:
            os.kill(sleeper, 9)
        except ProcessLookupError:
            break
        time.sleep(0.01)


def test_does_not_import_subprocess(bare_repo: Repo) -> None:
    """The point of the change: auto-scope's git calls leave subprocess unimported."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from docket_git.repo import gitio\n"
        "assert gitio.status_paths(Path(sys.argv[1])) == ([], [])\n"
        "assert list(gitio.recent_commit_paths(Path(sys.argv[1]), 3)) == []\n"
        "print('subprocess' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(bare_repo.path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_a_prefetched_git_answers_the_same_call_once(bare_repo: Repo) -> None:
    (bare_repo.path / "new.txt").write_text("x\n")
    gitio.prefetch(bare_repo.path, *gitio.STATUS)
    (pid, _, _) = gitio._prefetched[(os.fspath(bare_repo.path), gitio.STATUS)]
    early = gitio.run_git(bare_repo.path, *gitio.STATUS)
    assert early == old(bare_repo.path, *gitio.STATUS) and early is not None and b"new.txt" in early
    assert not gitio._prefetched
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # the prefetched git was read and reaped, not left beside a second one
    (bare_repo.path / "later.txt").write_text("y\n")
    again = gitio.run_git(bare_repo.path, *gitio.STATUS)  # not prefetched any more: a fresh git
    assert again is not None and b"later.txt" in again


def test_other_calls_do_not_take_a_prefetched_git_and_drop_reaps_it(bare_repo: Repo) -> None:
    gitio.prefetch(bare_repo.path, "rev-parse", "--show-toplevel")
    assert gitio.run_git(bare_repo.path, "rev-parse", "--git-dir") == old(bare_repo.path, "rev-parse", "--git-dir")
    assert len(gitio._prefetched) == 1
    pid = next(iter(gitio._prefetched.values()))[0]
    gitio.drop_prefetched()
    assert not gitio._prefetched
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    gitio.drop_prefetched()  # nothing left: a no-op
