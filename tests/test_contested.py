"""Real git: a merge that brings together two contradicting decisions records one open question naming both.

alice and bob (both ran ``docket init``) share a bare origin. alice adopts
"pay returns 2" (choice 2, alternative 3, scope src/app.py) and pushes; bob
adopts "pay returns 3" (choice 3, alternative 2, same scope) and runs ``git
pull`` (a merge through the driver).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Repo, rec
from tests.test_repair import clone, git


@pytest.fixture
def pair(tmp_path: Path, env: dict[str, str]) -> tuple[Repo, Repo]:
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True, env=env)
    alice = clone(origin, tmp_path / "alice", env, init=True)
    alice.ok("claim", "the pay endpoint exists", "--scope", "src/app.py")
    alice.git("add", "-A")
    alice.git("commit", "-q", "-m", "base")
    alice.git("push", "-q", "origin", "main")
    bob = clone(origin, tmp_path / "bob", env, init=True)
    return alice, bob


def decide(r: Repo, text: str, choice: str, alternative: str, *scopes: str) -> None:
    args = ["decision", text, "--choice", choice, "--alternative", alternative]
    for scope in scopes:
        args += ["--scope", scope]
    r.ok(*args)


def share(alice: Repo, bob: Repo) -> subprocess.CompletedProcess:
    """alice pushes what she committed; bob commits his and pulls (a merge through the driver)."""
    alice.git("commit", "-q", "-am", "alice decides")
    alice.git("push", "-q", "origin", "main")
    bob.git("commit", "-q", "-am", "bob decides")
    pulled = git(bob, "pull", "--no-rebase", "--no-edit", "origin", "main")
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    return pulled


def questions(r: Repo) -> list[dict]:
    return [x for x in r.records() if x["kind"] == "question"]


def test_a_pull_that_brings_contradicting_decisions_together_asks_which_stands(pair):
    alice, bob = pair
    decide(alice, "pay returns 2", "2", "3", "src/app.py")
    decide(bob, "pay returns 3", "3", "2", "src/app.py")
    pulled = share(alice, bob)
    (question,) = questions(bob)
    assert question["author"] == "docket-merge" and question["state"] == "open"
    assert question["text"].startswith("Contradicting decisions d2 and d3:")
    assert question["scope"] == ["src/app.py"]
    assert "contradict on src/app.py" in pulled.stderr and question["id"] in pulled.stderr
    contested_ids = bob.ok("list", "--where", "is:contested", "--json").json()
    assert sorted(r["id"] for r in contested_ids) == ["d2", "d3"]
    conflicts = bob.ok("list", "--where", "is:conflict", "--json").json()
    assert [r["id"] for r in conflicts] == [question["id"]]
    briefing = bob.ok("context", "--file", "src/app.py").out
    assert "Contradicting decisions d2 and d3" in briefing
    # Deterministic: alice pulls bob's merge (a fast-forward) and nothing is asked again.
    bob.git("push", "-q", "origin", "main")
    assert git(alice, "pull", "-q", "--no-edit").returncode == 0
    assert alice.ledger.read_bytes() == bob.ledger.read_bytes()


def test_the_merge_asks_once_in_either_direction_and_with_the_same_bytes(pair):
    alice, bob = pair
    decide(alice, "pay returns 2", "2", "3", "src/")
    decide(bob, "pay returns 3", "3", "2", "src/app.py")
    share(alice, bob)
    first = bob.ledger.read_bytes()
    (question,) = questions(bob)
    assert question["scope"] == ["src/app.py"]  # the narrower of the two overlapping scopes
    # alice merges bob's merge into a branch of her own that moved on: still one question.
    bob.git("push", "-q", "origin", "main")
    alice.ok("claim", "alice moved on")
    alice.git("commit", "-q", "-am", "moved on")
    assert git(alice, "pull", "--no-rebase", "--no-edit", "-q", "origin", "main").returncode == 0
    assert len(questions(alice)) == 1
    # The same merge made again elsewhere gives the same bytes.
    again = clone(bob.path, bob.path.parent / "again", bob.env, init=True)
    merged = bob.git("rev-parse", "HEAD").strip()
    again.git("checkout", "-q", f"{merged}^1")
    again.git("merge", "-q", "--no-edit", f"{merged}^2")
    assert again.ledger.read_bytes() == first


@pytest.mark.parametrize(
    ("alice_scope", "bob_scope", "bob_alternative"),
    [
        ("src/app.py", "src/other.py", "2"),  # disjoint scopes
        ("src/app.py", "src/app.py", "4"),  # bob's alternatives do not include alice's choice
        ("billing", "src/app.py", "2"),  # a component name and a path never overlap
    ],
)
def test_no_question_without_overlap_or_a_mutual_rejection(pair, alice_scope, bob_scope, bob_alternative):
    alice, bob = pair
    decide(alice, "pay returns 2", "2", "3", alice_scope)
    decide(bob, "pay returns 3", "3", bob_alternative, bob_scope)
    pulled = share(alice, bob)
    assert questions(bob) == []
    assert "contradict" not in pulled.stderr
    assert bob.ok("list", "--where", "is:contested", "--json").json() == []


def test_a_contradiction_already_on_one_side_is_not_the_merges_business(pair):
    alice, bob = pair
    alice.ok("claim", "an unrelated finding")
    decide(bob, "pay returns 2", "2", "3", "src/app.py")
    decide(bob, "pay returns 3", "3", "2", "src/app.py")
    share(alice, bob)
    assert questions(bob) == []
    assert bob.ok("list", "--where", "is:contested", "--json").json() == []


def test_a_superseded_decision_contradicts_nothing(pair):
    alice, bob = pair
    decide(alice, "pay returns 2", "2", "3", "src/app.py")
    alice.ok("decision", "pay returns 4", "--choice", "4", "--alternative", "5", "--supersedes", "d2")
    decide(bob, "pay returns 3", "3", "2", "src/app.py")
    share(alice, bob)
    assert questions(bob) == []  # alice's d2 would contradict bob's, but alice retired it
    assert bob.ok("list", "--where", "is:contested", "--json").json() == []


def test_docket_rebase_asks_too_and_strict_refuses(repo: Repo, tmp_path: Path):
    base = rec("c1", "the pay endpoint exists", scope=["src/app.py"])
    ours = [base, rec("d2", "pay returns 2", choice="2", alternatives=["3"], scope=["src/app.py"])]
    theirs = [base, rec("d2", "pay returns 3", choice="3", alternatives=["2"], scope=["src/app.py"])]
    repo.write_ledger(ours)
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps(r) + "\n" for r in theirs))
    before = repo.ledger.read_bytes()
    strict = repo.docket("rebase", str(other), "--strict")
    assert strict.code == 1 and "contradict on src/app.py" in strict.err
    assert repo.ledger.read_bytes() == before
    done = repo.ok("rebase", str(other))
    assert "contradict on src/app.py" in done.err
    assert [r["id"] for r in repo.records()] == ["c1", "d2", "d3", "q4"]
    assert repo.records()[-1]["text"].startswith("Contradicting decisions d2 and d3")
