"""Real git: a ledger committed broken by a clone without the driver is one command from repaired.

A bare origin; alice ran ``docket init`` (driver and pre-commit hook), dave
did not. dave's ``git pull --no-rebase`` leaves conflict markers, he commits
them (``git add -A && git commit``, no hook) and pushes; alice's next ``git
pull`` fast-forwards onto them.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.test_docs_examples import ROOT, examples, matches

LEDGER = ".docket/ledger.jsonl"


def git(r: Repo, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=r.path, env=r.env, capture_output=True, text=True)


def clone(origin: Path, path: Path, env: dict[str, str], *, init: bool) -> Repo:
    subprocess.run(["git", "clone", "-q", str(origin), str(path)], check=True, env=env, capture_output=True)
    r = Repo(path, env)
    if init:
        r.ok("init")
    return r


def texts(r: Repo) -> list[str]:
    return [rec["text"] for rec in r.records()]


@pytest.fixture
def team(tmp_path: Path, env: dict[str, str]) -> tuple[Repo, Repo, Path]:
    """alice (docket init) and dave (no init) on one bare origin; dave has pushed a commit of conflict markers."""
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True, env=env)
    alice = clone(origin, tmp_path / "alice", env, init=True)
    alice.ok("claim", "shared base", "--scope", "src/app.py")
    alice.git("add", "-A")
    alice.git("commit", "-q", "-m", "base")
    alice.git("push", "-q", "origin", "main")
    dave = clone(origin, tmp_path / "dave", env, init=False)
    alice.ok("claim", "alice's finding", "--scope", "src/app.py")
    alice.git("commit", "-q", "-am", "alice records")
    alice.git("push", "-q", "origin", "main")
    dave.ok("decision", "dave's call", "--choice", "x", "--scope", "src/app.py")
    dave.git("commit", "-q", "-am", "dave records")
    pulled = git(dave, "pull", "--no-rebase", "-q", "origin", "main")
    assert pulled.returncode != 0 and "<<<<<<<" in dave.ledger.read_text()
    dave.git("add", "-A")
    dave.git("commit", "-q", "--no-edit")  # no pre-commit hook in this clone: the markers are committed
    dave.git("push", "-q", "origin", "main")
    assert git(alice, "pull", "-q", "--ff-only").returncode == 0
    assert "<<<<<<<" in alice.ledger.read_text()
    return alice, dave, origin


def test_readers_and_the_session_hook_answer_from_the_last_good_ledger(team):
    alice, _, _ = team
    before = alice.ledger.read_bytes()
    listing = alice.docket("list")
    assert listing.code == 0, listing.err
    assert "dave's call" in listing.out and "shared base" in listing.out
    assert "was committed broken in" in listing.err and "git conflict markers" in listing.err
    assert listing.err.count("docket repair") == 1
    shown = alice.docket("show", "d2")
    assert shown.code == 0 and "dave's call" in shown.out
    context = alice.docket("context")
    assert context.code == 0 and "dave's call" in context.out
    payload = {"session_id": "s-r", "cwd": str(alice.path), "source": "startup"}
    hook = alice.docket("hook", "session-start", input=json.dumps(payload))
    assert hook.code == 0
    text = json.loads(hook.out)["hookSpecificOutput"]["additionalContext"]
    assert "docket repair" in text and "committed broken" in text
    assert "dave's call" in text
    assert alice.ledger.read_bytes() == before  # reading repairs nothing


def test_resolve_conflict_and_writers_point_to_repair(team):
    alice, _, _ = team
    before = alice.ledger.read_bytes()
    resolve = alice.docket("resolve-conflict")
    assert resolve.code == 1 and "docket repair" in resolve.err
    claim = alice.docket("claim", "more")
    assert claim.code == 1 and "docket repair" in claim.err
    check = alice.docket("check")
    assert check.code == 1 and "rebuild it with 'docket repair'" in check.out
    assert "answering from" not in check.err  # check reads the broken ledger itself, not a stand-in
    assert alice.ledger.read_bytes() == before


def test_repair_rebuilds_the_driver_merge_and_the_hook_accepts_exactly_it(team):
    alice, dave, _ = team
    broken_commit = alice.git("rev-parse", "HEAD").strip()
    # A hand rebuild that is not the driver's merge (only dave's side) is still refused.
    ours = alice.git("show", f"{broken_commit}^1:{LEDGER}")
    alice.ledger.write_text(ours)
    alice.git("add", LEDGER)
    refused = git(alice, "commit", "-q", "-m", "take dave's side")
    assert refused.returncode != 0 and "a committed line was changed" in refused.stdout + refused.stderr
    alice.git("checkout", "HEAD", "--", LEDGER)

    dry = alice.docket("repair", "--dry-run")
    assert dry.code == 0 and "nothing written" in dry.out
    assert "<<<<<<<" in alice.ledger.read_text()
    done = alice.docket("repair")
    assert done.code == 0, done.err
    assert f"git add {LEDGER} && git commit -m" in done.out
    assert texts(alice) == ["shared base", "dave's call", "alice's finding"]
    assert alice.docket("check").code == 0
    # The exact driver merge: what `git merge` with the driver makes of the same parents.
    probe = alice.path.parent / "probe"
    subprocess.run(["git", "clone", "-q", str(alice.path), str(probe)], check=True, env=alice.env)
    p = Repo(probe, alice.env)
    p.ok("init")
    p.git("checkout", "-q", f"{broken_commit}^1")
    p.git("merge", "-q", "--no-edit", f"{broken_commit}^2")
    assert alice.ledger.read_bytes() == p.ledger.read_bytes()

    step = re.search(r"next: (git add .*)$", done.out, re.M).group(1)
    committed = subprocess.run(step, shell=True, cwd=alice.path, env=alice.env, capture_output=True, text=True)
    assert committed.returncode == 0, committed.stdout + committed.stderr  # through the pre-commit hook
    listing = alice.docket("list")
    assert listing.code == 0 and listing.err == ""
    alice.git("push", "-q", "origin", "main")
    assert git(dave, "pull", "-q", "--ff-only").returncode == 0
    assert texts(dave) == texts(alice)
    again = alice.docket("repair")
    assert again.code == 0 and "nothing to repair" in again.out


def test_repair_keeps_records_appended_after_the_broken_commit(team):
    alice, dave, _ = team
    # dave, still without docket's help, appends a record line by hand and commits it on top.
    late = dict(json.loads(dave.ledger.read_text().splitlines()[0]))
    late.update(id="c9", text="added later by hand", ts="2026-12-05T00:00:00+00:00")
    with dave.ledger.open("a") as handle:
        handle.write(json.dumps(late) + "\n")
    dave.git("commit", "-q", "-am", "one more")
    dave.git("push", "-q", "origin", "main")
    assert git(alice, "pull", "-q", "--ff-only").returncode == 0
    done = alice.docket("repair")
    assert done.code == 0, done.err
    assert texts(alice) == ["shared base", "dave's call", "alice's finding", "added later by hand"]
    assert [r["id"] for r in alice.records()] == ["c1", "d2", "c3", "c4"]
    alice.git("commit", "-q", "-am", "repair")


def test_the_merging_page_repair_section_runs(team):
    alice, _, _ = team
    page = (ROOT / "docs" / "merging.md").read_text(encoding="utf-8")
    start = page.index("## Repairing a ledger someone committed broken")
    section = page[start : page.index("\n## ", start + 1)]
    found = examples(section, "merging.md")
    assert found, "the section shows its commands"
    env = {**alice.env, "COLUMNS": "100", "NO_COLOR": "1"}
    for ex in found:
        proc = subprocess.run(
            ["bash", "-c", ex.command], cwd=alice.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        actual = proc.stdout.decode().splitlines()
        assert proc.returncode == 0 and matches(ex.expected, actual), (ex.command, ex.expected, actual)


def test_a_fresh_clone_of_the_broken_commit_still_gets_a_briefing(team, tmp_path: Path):
    _, _, origin = team
    carol = clone(origin, tmp_path / "carol", team[0].env, init=True)  # no ledger index yet in this clone
    payload = {"session_id": "s-c", "cwd": str(carol.path), "source": "startup"}
    hook = carol.docket("hook", "session-start", input=json.dumps(payload))
    assert hook.code == 0, hook.err
    text = json.loads(hook.out)["hookSpecificOutput"]["additionalContext"]
    assert text.startswith("# .docket/ledger.jsonl was committed broken") and "docket repair" in text
    assert "dave's call" in text
