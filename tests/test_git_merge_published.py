"""Published IDs are stable (issue 27): real clones of a bare origin, git pull / pull --rebase / merge.

alice runs ``docket init`` in a clone of an empty bare origin and pushes;
bob clones it and runs ``docket init``. Records on origin's default branch or
on the branch's upstream keep their IDs in every merge; only the records no
such ref holds are renumbered.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import Repo, commit, diverged


def ids(repo: Repo) -> list[tuple[str, str]]:
    return [(r["id"], r["text"]) for r in repo.records()]


def clone(origin: Path, dest: Path, env: dict[str, str], name: str) -> Repo:
    person = {**env, "GIT_AUTHOR_NAME": name, "GIT_COMMITTER_NAME": name, "DOCKET_AUTHOR": name}
    subprocess.run(["git", "clone", "-q", str(origin), str(dest)], check=True, env=person, capture_output=True)
    return Repo(dest, person)


@dataclass
class Team:
    origin: Path
    alice: Repo
    bob: Repo


@pytest.fixture
def team(tmp_path: Path, env: dict[str, str]) -> Team:
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True, env=env)
    alice = clone(origin, tmp_path / "alice", env, "alice")
    alice.ok("init")
    alice.ok("claim", "Shared premise")
    commit(alice, "docket init")
    alice.git("push", "-q", "-u", "origin", "main")
    bob = clone(origin, tmp_path / "bob", env, "bob")
    bob.ok("init")
    assert bob.git("status", "--porcelain") == ""
    return Team(origin, alice, bob)


def alice_publishes(team: Team) -> None:
    """alice records c2 and d3 (citing c2) and pushes them to origin/main."""
    team.alice.ok("claim", "Alice's premise")
    team.alice.ok("decision", "Alice decides on c2", "--choice", "X", "--depends-on", "c2")
    commit(team.alice, "alice records c2 d3")
    team.alice.git("push", "-q")


def bob_records(team: Team) -> None:
    team.bob.ok("question", "Bob asks, see c1?")
    commit(team.bob, "bob records q2")


ALICE = [("c1", "Shared premise"), ("c2", "Alice's premise"), ("d3", "Alice decides on c2")]


def test_git_pull_merge_keeps_the_pushed_ids_and_renumbers_the_unpushed(team: Team) -> None:
    alice_publishes(team)
    bob_records(team)
    pulled = subprocess.run(
        ["git", "pull", "--no-rebase", "--no-edit"], cwd=team.bob.path, env=team.bob.env, capture_output=True, text=True
    )
    assert pulled.returncode == 0, pulled.stderr
    assert "docket: kept origin/main's IDs; renumbered this branch's q2 -> q4" in pulled.stderr
    assert ids(team.bob) == [*ALICE, ("q4", "Bob asks, see c1?")]
    assert team.bob.records()[2]["depends_on"] == ["c2"]
    assert team.bob.ok("check").code == 0
    # origin/main's ledger is an exact byte prefix of the merge's
    published = team.bob.git("show", "origin/main:.docket/ledger.jsonl")
    assert team.bob.ledger.read_text().startswith(published)
    team.bob.git("push", "-q")
    team.alice.git("pull", "-q", "--no-rebase", "--no-edit")
    assert ids(team.alice)[:3] == ALICE
    shown = team.alice.ok("show", "c2")
    assert "Alice's premise" in shown.out and "is now" not in shown.err


def test_bobs_renumbered_question_is_followed_and_names_its_source(team: Team) -> None:
    alice_publishes(team)
    bob_records(team)
    team.bob.git("pull", "-q", "--no-rebase", "--no-edit")
    shown = team.bob.ok("show", "q2")
    assert "Bob asks" in shown.out
    assert "q2 from bob's local main is now q4 (renumbered by merge" in shown.err
    assert team.bob.ok("resolve", "q2").out.strip() == "q2 -> q4"
    log = team.bob.ok("log", "q2").out
    assert "renumbered  q2 -> q4 from bob's local main" in log


def test_the_pull_merge_equals_a_pull_rebase(team: Team, tmp_path: Path) -> None:
    alice_publishes(team)
    bob_records(team)
    carol = clone(team.origin, tmp_path / "carol", team.bob.env, "bob")
    carol.ok("init")
    carol.git("fetch", "-q", str(team.bob.path), "main:bob")
    carol.git("reset", "-q", "--hard", "bob")
    carol.git("branch", "-q", "--set-upstream-to=origin/main")
    team.bob.git("pull", "-q", "--no-rebase", "--no-edit")
    carol.git("pull", "-q", "--rebase")
    assert ids(carol) == ids(team.bob)


def test_merging_a_feature_into_main_renumbers_the_feature_as_before(team: Team) -> None:
    bob = team.bob
    bob.git("checkout", "-q", "-b", "feature")
    bob.ok("claim", "Feature premise")
    commit(bob, "feature")
    bob.git("checkout", "-q", "main")
    alice_publishes(team)
    bob.git("pull", "-q", "--ff-only")
    merged = subprocess.run(
        ["git", "merge", "--no-edit", "feature"], cwd=bob.path, env=bob.env, capture_output=True, text=True
    )
    assert merged.returncode == 0, merged.stderr
    assert "docket: c2 -> c4" in merged.stderr and "kept" not in merged.stderr
    assert ids(bob) == [*ALICE, ("c4", "Feature premise")]


def test_merging_main_into_a_feature_keeps_mains_ids(team: Team) -> None:
    bob = team.bob
    bob.git("checkout", "-q", "-b", "feature")
    bob.ok("claim", "Feature premise")
    commit(bob, "feature")
    alice_publishes(team)
    bob.git("fetch", "-q")
    merged = subprocess.run(
        ["git", "merge", "--no-edit", "origin/main"], cwd=bob.path, env=bob.env, capture_output=True, text=True
    )
    assert merged.returncode == 0, merged.stderr
    assert "docket: kept origin/main's IDs; renumbered this branch's c2 -> c4" in merged.stderr
    assert ids(bob) == [*ALICE, ("c4", "Feature premise")]
    # the merge commit passes the pre-commit check's recomputation, and history follows c2 on feature
    assert bob.ok("check").code == 0
    assert bob.ok("resolve", "c2").out.strip() == "c2 -> c2"


def test_a_repository_without_a_remote_keeps_local_mains_ids(repo: Repo) -> None:
    repo.ok("claim", "Shared")
    commit(repo, "shared")
    diverged(repo)
    repo.git("checkout", "-q", "topic")
    merged = subprocess.run(
        ["git", "merge", "--no-edit", "main"], cwd=repo.path, env=repo.env, capture_output=True, text=True
    )
    assert "docket: kept main's IDs; renumbered this branch's c2 -> c3" in merged.stderr
    assert ids(repo) == [("c1", "Shared"), ("c2", "Main claim"), ("c3", "Topic claim")]


def test_the_precommit_check_refuses_a_merge_that_dropped_this_sides_records(team: Team) -> None:
    alice_publishes(team)
    bob_records(team)
    bob = team.bob
    bob.git("fetch", "-q")
    bob.git("merge", "-q", "--no-commit", "-X", "theirs", "-s", "ort", "origin/main", check=False)
    bob.git("checkout", "origin/main", "--", ".docket/ledger.jsonl")
    bob.git("add", ".docket/ledger.jsonl")
    result = bob.docket("check", "--staged")
    assert result.code == 1
    assert "lacks 1 record(s) of this branch (HEAD): q2" in result.err


def test_resolve_conflict_in_a_pull_keeps_the_pushed_ids(team: Team) -> None:
    alice_publishes(team)
    bob_records(team)
    bob = team.bob
    bob.git("config", "--unset", "merge.docket.driver")
    bob.git("config", "--remove-section", "merge.docket", check=False)
    pulled = subprocess.run(
        ["git", "pull", "--no-rebase", "--no-edit"], cwd=bob.path, env=bob.env, capture_output=True, text=True
    )
    assert pulled.returncode != 0
    fixed = bob.ok("resolve-conflict")
    assert "kept origin/main's IDs; renumbered this branch's q2 -> q4" in fixed.out
    assert ids(bob) == [*ALICE, ("q4", "Bob asks, see c1?")]
    bob.git("commit", "-q", "--no-edit")
    assert json.loads(bob.ok("list", "--json").out)


def test_docket_log_finds_the_commit_that_recorded_a_record_the_pull_renumbered(team: Team) -> None:
    alice_publishes(team)
    bob_records(team)
    bob = team.bob
    bob.ok("claim", "Bob's first premise")
    bob.ok("claim", "Bob's second premise")
    commit(bob, "bob records c3 c4")
    bob.git("pull", "-q", "--no-rebase", "--no-edit")
    assert ids(bob)[3] == ("q4", "Bob asks, see c1?")
    added = json.loads(bob.ok("log", "q4", "--json").out)["added"]
    assert added["subject"] == "bob records q2"
    assert json.loads(bob.ok("log", "c6", "--json").out)["added"]["subject"] == "bob records c3 c4"
