"""The pre-commit hook and `docket check --staged`: nothing invalid or rewritten is committed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.conftest import Repo, rec


def try_commit(repo: Repo, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "commit", "-q", "-m", "change", *args], cwd=repo.path, env=repo.env, capture_output=True, text=True
    )


def committed(repo: Repo) -> Repo:
    repo.ok("claim", "First")
    repo.ok("claim", "Second")
    repo.git("add", "-A")
    assert try_commit(repo).returncode == 0
    return repo


def test_a_valid_append_is_committed(repo: Repo):
    committed(repo)
    repo.ok("claim", "Third")
    proc = try_commit(repo, "-a")
    assert proc.returncode == 0, proc.stderr
    assert repo.git("status", "--porcelain") == ""


def test_an_edited_line_is_blocked(repo: Repo):
    committed(repo)
    text = repo.ledger.read_text().replace('"First"', '"First, edited"')
    repo.ledger.write_text(text)
    proc = try_commit(repo, "-a")  # -a: the hook reads git's temporary index
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "docket: .docket/ledger.jsonl (staged) line 1: a committed line was changed or deleted" in out
    assert "git checkout HEAD -- .docket/ledger.jsonl" in out
    assert repo.git("rev-list", "--count", "HEAD").strip() == "1"


def test_a_deleted_line_and_a_deleted_ledger_are_blocked(repo: Repo):
    committed(repo)
    first, _second = repo.ledger.read_text().splitlines(keepends=True)
    repo.ledger.write_text(first)
    assert try_commit(repo, "-a").returncode != 0
    repo.git("rm", "-q", "-f", ".docket/ledger.jsonl")
    proc = try_commit(repo)
    assert proc.returncode != 0
    assert "staged for deletion" in proc.stderr


def test_an_invalid_record_is_blocked(repo: Repo):
    committed(repo)
    with repo.ledger.open("a") as handle:
        handle.write(json.dumps(rec("d3", "Cites nothing", depends_on=["c9"])) + "\n")
    proc = try_commit(repo, "-a")
    assert proc.returncode != 0
    assert "line 3: d3: depends_on refers to unknown or later ID 'c9'" in proc.stdout + proc.stderr


def test_conflict_markers_are_blocked(repo: Repo):
    committed(repo)
    with repo.ledger.open("a") as handle:
        handle.write("<<<<<<< ours\n=======\n>>>>>>> theirs\n")
    proc = try_commit(repo, "-a")
    assert proc.returncode != 0
    assert "git conflict marker" in proc.stdout + proc.stderr
    assert "docket resolve-conflict" in proc.stdout + proc.stderr


def test_only_the_staged_version_counts(repo: Repo):
    committed(repo)
    repo.ok("claim", "Third")
    repo.git("add", ".docket/ledger.jsonl")
    with repo.ledger.open("a") as handle:
        handle.write("{broken\n")  # unstaged, so not committed and not checked
    assert try_commit(repo).returncode == 0


def test_a_first_commit_and_a_head_without_ledger_pass(bare_repo: Repo):
    (bare_repo.path / "README").write_text("hi\n")
    bare_repo.git("add", "README")
    bare_repo.git("commit", "-q", "-m", "no ledger yet")
    bare_repo.ok("init")
    bare_repo.ok("claim", "First")
    bare_repo.git("add", "-A")
    proc = try_commit(bare_repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_check_staged_against_a_revision(repo: Repo):
    committed(repo)
    repo.ok("claim", "Third")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "third")
    assert repo.docket("check", "--staged", "--against", "HEAD~1").code == 0
    repo.ledger.write_text(repo.ledger.read_text().replace('"Second"', '"Second!"'))
    repo.git("add", "-A")
    result = repo.docket("check", "--staged", "--against", "HEAD~1")
    assert result.code == 1 and "line 2" in result.err
    assert repo.docket("check", "--staged", "--against", "nonsense").code == 2
    assert repo.docket("check", "--against", "HEAD").code == 2


def test_merge_commit_extending_the_merged_in_parent_passes(repo: Repo, tmp_path: Path):
    committed(repo)
    repo.git("config", "--remove-section", "merge.docket")  # git will leave the conflict to us
    repo.git("checkout", "-q", "-b", "topic")
    repo.ok("claim", "Topic")
    repo.git("commit", "-q", "-am", "topic")
    repo.git("checkout", "-q", "main")
    repo.ok("claim", "Main")
    repo.git("commit", "-q", "-am", "main")
    assert subprocess.run(["git", "merge", "topic"], cwd=repo.path, env=repo.env, capture_output=True).returncode
    # Resolve by hand the documented way: take theirs, rebase ours on top.
    ours = tmp_path / "ours.jsonl"
    ours.write_text(repo.git("show", ":2:.docket/ledger.jsonl"))
    repo.git("checkout", "--theirs", ".docket/ledger.jsonl")
    repo.ok("rebase", str(ours))
    repo.git("add", ".docket/ledger.jsonl")
    proc = try_commit(repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [r["text"] for r in repo.records()] == ["First", "Second", "Topic", "Main"]


def test_an_existing_hook_keeps_running_and_can_still_block(bare_repo: Repo):
    hooks = bare_repo.path / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    user_hook = hooks / "pre-commit"
    user_hook.write_text('#!/bin/sh\necho ran >> "$(git rev-parse --show-toplevel)/user-hook-ran"\n[ ! -f block ]\n')
    user_hook.chmod(0o755)
    result = bare_repo.ok("init")
    assert "moved your pre-commit hook to" in result.out
    bare_repo.ok("claim", "First")
    bare_repo.git("add", ".docket", ".gitattributes")
    assert try_commit(bare_repo).returncode == 0
    assert (bare_repo.path / "user-hook-ran").read_text() == "ran\n"
    (bare_repo.path / "block").write_text("")
    bare_repo.ok("claim", "Second")
    assert try_commit(bare_repo, "-a").returncode != 0  # the user's hook still decides
    os.remove(bare_repo.path / "block")
    with bare_repo.ledger.open("a") as handle:
        handle.write("{broken\n")
    assert try_commit(bare_repo, "-a").returncode != 0  # and so does docket
    assert (bare_repo.path / "user-hook-ran").read_text() == "ran\n" * 3
