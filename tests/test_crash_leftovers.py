"""Session writes are all or nothing under SIGKILL, and the temp files of killed writers are ignored by git
and removed by the next run (issue 28, items 1 and 10).

The kill lands at a fixed step: ``DOCKET_FAULT=kill-mid-batch`` makes the writer SIGKILL itself once half
its bytes are on disk (``ledger/store.py: fault_point``).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from pathlib import Path

from tests.conftest import DOCKET, Repo

STEP = ["--agent", "a", "--status", "completed", "--input", "in", "--output", "-"]


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _killed(repo: Repo, *args: str, stdin: bytes = b"") -> int:
    env = {**repo.env, "DOCKET_FAULT": "kill-mid-batch"}
    return subprocess.run([DOCKET, *args], cwd=repo.path, env=env, input=stdin, capture_output=True).returncode


def _session(repo: Repo) -> Path:
    args = ("session", "init", "--system", "s", "--workflow", "w", "--project", "p", "--create-dir")
    return Path(repo.ok(*args).out.strip())


def test_a_killed_session_write_changes_nothing_and_the_next_write_removes_its_temp_file(repo: Repo) -> None:
    path = _session(repo)
    output = json.dumps({"text": "y" * 50_000}).encode()
    repo.ok("session", "write", "--step", "1", *STEP, input=output)
    before = path.read_bytes()
    assert _killed(repo, "session", "write", "--step", "2", *STEP, stdin=output) == -signal.SIGKILL
    assert path.read_bytes() == before  # not a byte of the half-written block
    leftovers = [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    assert len(leftovers) == 1 and leftovers[0].startswith(f".{path.name}.")
    result = repo.ok("session", "write", "--step", "2", *STEP, input=output)
    assert "the temp file of a write a killed process left" in result.err
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    assert repo.ok("session", "show", str(path)).out.count("completed") == 2


def test_a_killed_session_init_leaves_no_partial_session(repo: Repo) -> None:
    folder = _session(repo).parent
    first = sorted(p.name for p in folder.iterdir())
    args = ("session", "init", "--system", "s", "--workflow", "w", "--project", "q", "--create-dir")
    assert _killed(repo, *args) == -signal.SIGKILL
    assert sorted(p.name for p in folder.iterdir() if not p.name.endswith(".tmp")) == first
    made = Path(repo.ok(*args).out.strip())
    assert made.parent == folder and repo.ok("session", "show", str(made)).code == 0
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_a_killed_rewrite_leaves_a_temp_file_git_ignores_and_the_next_rewrite_removes(
    repo: Repo, tmp_path: Path
) -> None:
    for n in range(3):
        repo.ok("claim", f"ours {n}")
    # What a SIGKILL during `docket rebase` leaves: a full copy of the ledger in a temp file beside it.
    stale = repo.ledger.with_name(f".ledger.jsonl.{_dead_pid()}.0badf00d.tmp")
    shutil.copy(repo.ledger, stale)
    repo.git("add", "-A")
    assert ".tmp" not in repo.git("diff", "--cached", "--name-only")  # .docket/.gitignore covers it
    other = tmp_path / "theirs.jsonl"
    records = [json.loads(line) for line in repo.ledger.read_text().splitlines()]
    extra = dict(records[-1], id="c4", text="theirs")
    other.write_text(repo.ledger.read_text() + json.dumps(extra, sort_keys=True) + "\n")
    result = repo.ok("rebase", str(other))
    assert not stale.exists()
    assert f"removed {stale}" in result.err
    live = repo.ledger.with_name(".ledger.jsonl.1.0badf00d.tmp")  # pid 1 is alive: never removed
    live.write_bytes(b"")
    repo.ok("rebase", str(other))
    assert live.exists()
