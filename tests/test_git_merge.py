"""Real git: merges, rebases and cherry-picks of recording branches, with the driver `docket init` wired."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import Repo, commit


def texts(repo: Repo) -> list[str]:
    return [r["text"] for r in repo.records()]


def assert_clean(repo: Repo) -> None:
    result = repo.docket("check")
    assert result.code == 0, result.out + result.err
    assert len(texts(repo)) == len(set(texts(repo))), texts(repo)


@pytest.fixture
def shared(repo: Repo) -> Repo:
    repo.ok("claim", "Shared")
    commit(repo, "shared")
    return repo


def claim(repo: Repo, text: str, *args: str) -> None:
    repo.ok("claim", text, *args)


def test_two_recording_branches_merge_clean(shared: Repo):
    shared.git("checkout", "-q", "-b", "topic")
    claim(shared, "Topic claim")
    shared.ok("decision", "Topic decides on c2", "--choice", "X", "--depends-on", "c2")
    commit(shared, "topic")
    shared.git("checkout", "-q", "main")
    claim(shared, "Main claim")
    commit(shared, "main")
    shared.git("merge", "-q", "--no-edit", "topic")
    assert texts(shared) == ["Shared", "Main claim", "Topic claim", "Topic decides on c3"]
    assert shared.records()[3]["depends_on"] == ["c3"]
    assert_clean(shared)
    assert shared.git("status", "--porcelain") == ""


def test_repeated_merges_both_ways_never_duplicate(shared: Repo):
    shared.git("checkout", "-q", "-b", "topic")
    for round_ in range(3):
        shared.git("checkout", "-q", "topic")
        claim(shared, f"Topic {round_}")
        commit(shared, f"topic {round_}")
        shared.git("checkout", "-q", "main")
        claim(shared, f"Main {round_}")
        commit(shared, f"main {round_}")
        shared.git("merge", "-q", "--no-edit", "topic")
        assert_clean(shared)
        shared.git("checkout", "-q", "topic")
        shared.git("merge", "-q", "--no-edit", "main")
        assert_clean(shared)
    topic = sorted(texts(shared))
    shared.git("checkout", "-q", "main")
    assert sorted(texts(shared)) == topic
    assert len(topic) == 7


def test_git_rebase_of_a_recording_branch(shared: Repo):
    shared.git("checkout", "-q", "-b", "topic")
    claim(shared, "Topic one")
    commit(shared, "t1")
    shared.ok("decision", "Topic two builds on c2", "--choice", "Y", "--depends-on", "c2")
    commit(shared, "t2")
    shared.git("checkout", "-q", "main")
    claim(shared, "Main one")
    commit(shared, "m1")
    shared.git("checkout", "-q", "topic")
    shared.git("rebase", "-q", "main")
    assert texts(shared) == ["Shared", "Main one", "Topic one", "Topic two builds on c3"]
    assert shared.records()[3]["depends_on"] == ["c3"]
    assert_clean(shared)


def test_cherry_pick_of_one_recording_commit(shared: Repo):
    shared.git("checkout", "-q", "-b", "topic")
    claim(shared, "Topic first")
    commit(shared, "t1")
    claim(shared, "Topic picked")
    commit(shared, "t2")
    picked = shared.git("rev-parse", "HEAD").strip()
    shared.git("checkout", "-q", "main")
    claim(shared, "Main one")
    commit(shared, "m1")
    shared.git("cherry-pick", picked)
    assert texts(shared) == ["Shared", "Main one", "Topic picked"]
    assert_clean(shared)


def test_criss_cross_merge(shared: Repo):
    shared.git("checkout", "-q", "-b", "a")
    claim(shared, "A one")
    commit(shared, "a1")
    shared.git("checkout", "-q", "-b", "b", "main")
    claim(shared, "B one")
    commit(shared, "b1")
    a1 = shared.git("rev-parse", "a").strip()
    b1 = shared.git("rev-parse", "b").strip()
    shared.git("merge", "-q", "--no-edit", a1)  # b: B one + A one
    shared.git("checkout", "-q", "a")
    shared.git("merge", "-q", "--no-edit", b1)  # a: A one + B one (criss-cross)
    claim(shared, "A two")
    commit(shared, "a2")
    shared.git("checkout", "-q", "b")
    claim(shared, "B two")
    commit(shared, "b2")
    bases = shared.git("merge-base", "--all", "a", "b").split()
    assert len(bases) == 2
    shared.git("merge", "-q", "--no-edit", "a")
    assert sorted(texts(shared)) == sorted(["Shared", "A one", "B one", "A two", "B two"])
    assert_clean(shared)


def test_both_branches_superseding_one_record_merge_with_a_question(shared: Repo):
    shared.git("checkout", "-q", "-b", "topic")
    claim(shared, "Topic replaces c1", "--supersedes", "c1")
    commit(shared, "topic")
    shared.git("checkout", "-q", "main")
    claim(shared, "Main replaces c1", "--supersedes", "c1")
    commit(shared, "main")
    shared.git("merge", "-q", "--no-edit", "topic")
    last = shared.records()[-1]
    assert last["kind"] == "question" and last["author"] == "docket-merge"
    assert last["text"].startswith("Both branches superseded c1: c2 here and c3 from the merged branch")
    assert_clean(shared)
    # Strict clones refuse instead.
    shared.git("reset", "-q", "--hard", "HEAD~1")
    shared.git("config", "merge.docket.strict", "true")
    proc = subprocess.run(
        ["git", "merge", "--no-edit", "topic"], cwd=shared.path, env=shared.env, capture_output=True, text=True
    )
    assert proc.returncode != 0
    assert "both histories supersede c1" in proc.stdout + proc.stderr
    assert "<<<<<<<" in shared.ledger.read_text()


def test_a_driverless_clone_conflicts_and_doctor_says_why(shared: Repo, tmp_path: Path):
    clone = Repo(tmp_path / "clone", shared.env)
    subprocess.run(["git", "clone", "-q", str(shared.path), str(clone.path)], check=True, env=shared.env)
    clone.git("checkout", "-q", "-b", "topic")
    claim(clone, "Topic")
    clone.git("commit", "-q", "--no-verify", "-am", "topic")
    clone.git("checkout", "-q", "main")
    claim(clone, "Main")
    clone.git("commit", "-q", "--no-verify", "-am", "main")
    proc = subprocess.run(["git", "merge", "topic"], cwd=clone.path, env=clone.env, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "<<<<<<<" in clone.ledger.read_text()
    doctor = clone.docket("doctor")
    assert doctor.code == 1
    assert "merge.docket.driver is not set in this clone; fix: run docket init" in doctor.out
    assert "no pre-commit hook checks the staged ledger" in doctor.out
    check = clone.docket("check")
    assert check.code == 1 and "conflict marker" in check.out
    # Arming the clone fixes it: abort, init, merge again.
    clone.git("merge", "--abort")
    clone.ok("init")
    assert clone.docket("doctor").code == 0
    clone.git("merge", "-q", "--no-edit", "topic")
    assert texts(clone) == ["Shared", "Main", "Topic"]


def test_merging_in_a_path_with_spaces_and_shell_metacharacters(tmp_path: Path, env: dict[str, str]):
    path = tmp_path / "we ird $(touch pwned) 'q' ;&"
    path.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True, env=env)
    repo = Repo(path, env)
    repo.ok("init")
    claim(repo, "Shared")
    commit(repo, "shared")
    repo.git("checkout", "-q", "-b", "topic")
    claim(repo, "Topic")
    commit(repo, "topic")
    repo.git("checkout", "-q", "main")
    claim(repo, "Main")
    commit(repo, "main")
    repo.git("merge", "-q", "--no-edit", "topic")
    assert texts(repo) == ["Shared", "Main", "Topic"]
    assert not list(tmp_path.rglob("pwned"))
