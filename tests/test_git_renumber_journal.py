"""Every renumbering is followable (issue 27 item 2): rebase, pull --rebase, cherry-pick, resolve-conflict, docket rebase.

No merge commit records these renumberings, so each clone keeps a journal
under its git directory; ``docket show/resolve/log OLD`` and ``--since
OLD@DIGEST`` follow it and name the real source.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from docket_git.ledger import canonical
from docket_git.merging import journal
from tests.conftest import Repo
from tests.test_git_merge_published import ALICE, Team, alice_publishes, bob_records, commit, ids, team  # noqa: F401


def run(repo: Repo, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=repo.path, env=repo.env, capture_output=True, text=True)


def digest_of(data: bytes, record_id: str) -> str:
    end = 0
    for line in data.splitlines(keepends=True):
        end += len(line)
        if json.loads(line)["id"] == record_id:
            return canonical.short(canonical.sha256(data[:end]))
    raise AssertionError(record_id)


NOTE = re.compile(
    r"q2 from bob's local main is now q4 \(renumbered by 'git pull --rebase', \d{4}-\d\d-\d\d \d\d:\d\d\)"
)


def test_pull_rebase_renumbering_is_followed_by_show_resolve_log_and_since(team: Team) -> None:  # noqa: F811
    alice_publishes(team)
    bob_records(team)
    bob = team.bob
    before = bob.ledger.read_bytes()
    baseline = f"q2@{digest_of(before, 'q2')}"
    pulled = run(bob, "pull", "--rebase")
    assert pulled.returncode == 0, pulled.stderr
    assert "docket: q2 -> q4" in pulled.stderr
    assert ids(bob) == [*ALICE, ("q4", "Bob asks, see c1?")]
    shown = bob.ok("show", "q2")
    assert NOTE.search(shown.err), shown.err
    assert "Bob asks" in shown.out
    assert bob.ok("resolve", "q2", baseline).out.split("\n")[:2] == ["q2 -> q4", f"{baseline} -> q4"]
    log = bob.ok("log", "q2").out
    assert "renumbered  q2 -> q4 from bob's local main  by 'git pull --rebase'" in log
    since = bob.ok("context", "--since", baseline)
    assert "unknown or stale" not in since.err
    assert "# changed: 2 added, 0 no longer available." in since.out
    assert "Alice's premise" in since.out and "Bob asks" not in since.out.split("# changed")[1]
    assert f"# renumbered since {baseline}: q2 -> q4" in since.out.splitlines()


def test_git_rebase_and_cherry_pick_are_remembered(team: Team) -> None:  # noqa: F811
    alice_publishes(team)
    bob = team.bob
    bob.git("checkout", "-q", "-b", "feature")
    bob.ok("claim", "Feature premise")
    commit(bob, "feature")
    bob.git("fetch", "-q")
    rebased = run(bob, "rebase", "origin/main")
    assert rebased.returncode == 0, rebased.stderr
    assert "docket: c2 -> c4" in rebased.stderr
    note = bob.ok("show", "c2@" + digest_of(bob.git("show", "ORIG_HEAD:.docket/ledger.jsonl").encode(), "c2")).err
    assert "c2 from bob's local feature is now c4 (renumbered by 'git rebase', " in note
    # a cherry-pick onto a fresh branch from origin/main
    bob.git("checkout", "-q", "-b", "side", "origin/main")
    bob.ok("question", "Side question?")
    commit(bob, "side")
    bob.git("checkout", "-q", "-b", "pick", "HEAD~1")
    bob.ok("claim", "Pick premise")
    commit(bob, "pick base")
    picked = run(bob, "cherry-pick", "side")
    assert picked.returncode == 0, picked.stderr
    assert "docket: q4 -> q5" in picked.stderr
    old = "q4@" + digest_of(bob.git("show", "side:.docket/ledger.jsonl").encode(), "q4")
    assert bob.ok("resolve", old).out.strip() == f"{old} -> q5"
    shown = bob.ok("show", old)
    assert "Side question?" in shown.out
    assert "q4 from a picked commit is now q5 (renumbered by 'git cherry-pick', " in shown.err


def test_resolve_conflict_during_a_pull_rebase_is_remembered(team: Team) -> None:  # noqa: F811
    alice_publishes(team)
    bob_records(team)
    bob = team.bob
    bob.git("config", "--remove-section", "merge.docket")
    assert run(bob, "pull", "--rebase").returncode != 0
    fixed = bob.ok("resolve-conflict")
    assert "q2 -> q4" in fixed.out
    assert run(bob, "-c", "core.editor=true", "rebase", "--continue").returncode == 0
    note = bob.ok("show", "q2").err
    assert "q2 from bob's local main is now q4 (renumbered by 'docket resolve-conflict', " in note


def test_docket_rebase_is_remembered(repo: Repo, tmp_path: Path) -> None:
    repo.ok("claim", "Mine")
    first = repo.ledger.read_text().splitlines()[0]
    repo.ok("claim", "Also mine")
    other = tmp_path / "other.jsonl"
    other.write_text(first + "\n" + json.dumps({**json.loads(first), "id": "c2", "text": "Theirs"}) + "\n")
    repo.ok("rebase", str(other))
    commit(repo, "rebased")
    note = repo.ok("show", "c2@" + digest_of(other.read_bytes(), "c2")).err
    assert f"c2 from {other} is now c3 (renumbered by 'docket rebase', " in note


def test_the_journal_is_bounded(tmp_path: Path) -> None:
    entry = journal.Entry("c1", "c2", "git rebase", "2026-12-04T10:31:00+00:00", "x", "", "", "")
    journal.remember(tmp_path, [entry] * (journal.MAX_ENTRIES - 1))
    journal.remember(tmp_path, [journal.Entry("c3", "c4", "git rebase", entry.ts, "x", "", "", "")] * 5)
    kept = journal.read(tmp_path)
    assert len(kept) == journal.MAX_ENTRIES
    assert [e.old for e in kept[-5:]] == ["c3"] * 5
