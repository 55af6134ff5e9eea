"""Typed-ledger batches are all or nothing under SIGKILL, a torn tail from an older crash is removed by the
next writer, a refused write leaves no file behind, and a committed non-directory ``.docket/ledgers`` gets a
clear refusal from the commit guard (issue 28, items 1, 2 and 10).

The kill lands at a fixed step, not after a guessed delay: ``DOCKET_FAULT=kill-mid-batch`` makes the writer
SIGKILL itself once half the batch's bytes are on disk (``ledger/store.py``).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess

from tests.conftest import DOCKET, Repo
from tests.typed_helpers import declare, ledger_file, ok_op

LOG = '[ledgers.events]\ntype = "log"\n'


def _ops(n: int, tag: str) -> bytes:
    return b"".join(
        json.dumps({"operation": "append", "value": f"{tag} {i} {'z' * 300}"}).encode() + b"\n" for i in range(n)
    )


def _count(repo: Repo, name: str = "events") -> int:
    out = repo.ok("ledger", "query", name, "SELECT count(*) AS n FROM records").out
    return int("".join(ch for ch in out if ch.isdigit()))


def _killed_batch(repo: Repo, n: int) -> subprocess.CompletedProcess:
    return subprocess.run(
        [DOCKET, "ledger", "append", "events", "-"],
        cwd=repo.path,
        env={**repo.env, "DOCKET_FAULT": "kill-mid-batch"},
        input=_ops(n, "killed"),
        capture_output=True,
    )


def test_a_batch_killed_mid_write_is_never_seen_and_the_next_run_removes_it(repo: Repo) -> None:
    declare(repo, LOG)
    ok_op(repo, "events", {"operation": "append", "value": "before"})
    path = ledger_file(repo, "events")
    before = path.read_bytes()
    killed = _killed_batch(repo, 400)
    assert killed.returncode == -signal.SIGKILL  # the hook fired: the writer died in the middle of its write
    left = path.read_bytes()
    assert left.startswith(before) and len(left) > len(before)  # half the batch is on disk
    assert left.count(b"\n") - before.count(b"\n") < 400
    # A reader sees none of it, and cuts it off (a killed writer holds no lock), saying so.
    query = repo.ok("ledger", "query", "events", "SELECT count(*) AS n FROM records")
    assert "".join(ch for ch in query.out if ch.isdigit()) == "1"
    assert "removed an unfinished batch a killed writer left" in query.err
    assert path.read_bytes() == before
    assert repo.docket("ledger", "check", "events").code == 0
    ok_op(repo, "events", {"operation": "append", "value": "after"})
    assert _count(repo) == 2


def test_the_next_writer_removes_a_killed_batch_nobody_read(repo: Repo) -> None:
    declare(repo, LOG)
    ok_op(repo, "events", {"operation": "append", "value": "before"})
    path = ledger_file(repo, "events")
    before = path.read_bytes()
    assert _killed_batch(repo, 50).returncode == -signal.SIGKILL
    result = repo.docket("ledger", "append", "events", "-", input=_ops(3, "next"))
    assert result.code == 0, result.err
    assert "removed an unfinished batch a killed writer left" in result.err
    data = path.read_bytes()
    assert data.startswith(before) and b"killed" not in data
    assert _count(repo) == 4
    assert repo.docket("ledger", "check", "events").code == 0


def test_a_torn_tail_from_an_older_crash_is_removed_and_commits_go_through(repo: Repo) -> None:
    """What the old writer left: 315 whole lines of a 400-operation batch and a torn one, with no journal."""
    declare(repo, LOG)
    ok_op(repo, "events", {"operation": "append", "value": "committed"})
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "base")
    path = ledger_file(repo, "events")
    base = path.read_bytes()
    assert repo.docket("ledger", "append", "events", "-", input=_ops(400, "batch")).code == 0
    lines = path.read_bytes()[len(base) :].split(b"\n")
    torn = b"\n".join(lines[:315]) + b"\n" + lines[315][: len(lines[315]) // 2]
    path.write_bytes(base + torn)
    repo.ok("ledger", "query", "events", "SELECT count(*) FROM records")  # a reader leaves a torn tail alone
    result = repo.docket("ledger", "append", "events", json.dumps({"operation": "append", "value": "next"}))
    assert result.code == 0, result.err
    assert result.err.count("\n") == 1 and "removed a torn last line" in result.err
    data = path.read_bytes()
    assert data.endswith(b"\n") and data.count(b"\n") == 1 + 315 + 1
    assert repo.docket("ledger", "check", "events").code == 0
    repo.git("add", "-A")
    commit = subprocess.run(["git", "commit", "-q", "-m", "after"], cwd=repo.path, env=repo.env, capture_output=True)
    assert commit.returncode == 0, commit.stderr  # the pre-commit guard passes


def test_a_whole_record_without_its_newline_is_kept(repo: Repo) -> None:
    declare(repo, LOG)
    ok_op(repo, "events", {"operation": "append", "value": "one"})
    path = ledger_file(repo, "events")
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    ok_op(repo, "events", {"operation": "append", "value": "two"})
    assert _count(repo) == 2
    assert repo.docket("ledger", "check", "events").code == 0


def test_a_refused_write_leaves_no_file_behind(repo: Repo) -> None:
    declare(repo, '[ledgers.rows]\ntype = "table"\nkey = "k"\n')
    docket_dir = repo.path / ".docket"
    before = sorted(p.relative_to(docket_dir) for p in docket_dir.rglob("*"))
    refused = repo.docket("ledger", "append", "rows", json.dumps({"operation": "update", "key": "x", "patch": {}}))
    assert refused.code == 1 and "does not exist" in refused.err
    assert sorted(p.relative_to(docket_dir) for p in docket_dir.rglob("*")) == before  # no lock, file or directory
    ok_op(repo, "rows", {"operation": "insert", "value": {"k": "x"}})
    lock = docket_dir / "ledgers" / "rows.jsonl.lock"
    assert lock.exists()  # a lock that is already there stays (others may hold it)
    refused = repo.docket("ledger", "append", "rows", json.dumps({"operation": "insert", "value": {"k": "x"}}))
    assert refused.code == 1 and lock.exists()


def _link_ledgers_dir(repo: Repo) -> None:
    declare(repo, LOG)
    (repo.path / "elsewhere").mkdir()
    (repo.path / ".docket" / "ledgers").symlink_to("../elsewhere")
    repo.git("add", "-A")
    subprocess.run(["git", "commit", "-q", "--no-verify", "-m", "hostile"], cwd=repo.path, env=repo.env, check=True)
    assert repo.git("ls-tree", "HEAD", ".docket/ledgers").startswith("120000")


def test_a_committed_ledgers_link_gets_a_clear_refusal_not_a_crash(repo: Repo) -> None:
    _link_ledgers_dir(repo)
    (repo.path / "notes.txt").write_text("unrelated\n")
    repo.git("add", "notes.txt")
    result = repo.docket("check", "--staged")
    assert result.code == 1
    assert "internal error" not in result.err and "Traceback" not in result.err
    assert ".docket/ledgers is staged as a symbolic link" in result.err
    assert "git rm --cached .docket/ledgers" in result.err
    # The fix it names works: with the link unstaged, the commit goes through the real hook.
    repo.git("rm", "-q", "--cached", ".docket/ledgers")
    (repo.path / ".docket" / "ledgers").unlink()
    commit = subprocess.run(["git", "commit", "-q", "-m", "unlink"], cwd=repo.path, env=repo.env, capture_output=True)
    assert commit.returncode == 0, commit.stderr
    # And from then on, with the link still at HEAD~1, nothing crashes.
    assert repo.docket("check", "--staged", "--against", "HEAD~1").code == 0


def test_refused_writes_removing_their_lock_never_let_two_writers_in(repo: Repo) -> None:
    """Refused writers remove the lock file (and the directory) they created while others wait: no write is lost.

    Every round starts without .docket/ledgers, so each first write races the refused ones that remove the
    directory they made (a writer that finds it gone makes it again, it does not fail).
    """
    declare(repo, '[ledgers.rows]\ntype = "table"\nkey = "k"\n')
    for _ in range(3):
        shutil.rmtree(repo.path / ".docket" / "ledgers", ignore_errors=True)
        procs = []
        for i in range(8):
            operation = {"operation": "insert", "value": {"k": f"k{i}"}} if i % 2 else {
                "operation": "update", "key": "missing", "patch": {}}  # fmt: skip
            procs.append(
                subprocess.Popen(
                    [DOCKET, "ledger", "append", "rows", json.dumps(operation)],
                    cwd=repo.path,
                    env=repo.env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                )
            )
        errors = [p.communicate()[1].decode() for p in procs]  # (waits for each)
        results = [(p.returncode, err) for p, err in zip(procs, errors, strict=True)]
        assert [code for code, _ in results] == [1, 0] * 4, results
        assert _count(repo, "rows") == 4
    assert repo.docket("ledger", "check", "rows").code == 0
