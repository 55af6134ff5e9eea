"""Real git: what docket says while a ledger is conflicted, and the LF-only line-end rule on every path."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Repo, commit
from tests.test_merge_driver import (
    Driver,
    driver,  # noqa: F401  (the fixture)
    ledger,
)
from tests.test_merge_driver import rec as record


@pytest.fixture
def refused_pick(repo: Repo) -> Repo:
    """main and a topic whose decision depends on a claim from an unpicked commit; the pick is refused."""
    repo.ok("claim", "base")
    commit(repo, "base")
    repo.git("switch", "-q", "-c", "topic")
    repo.ok("claim", "premise")
    commit(repo, "premise")
    repo.ok("decision", "builds on c2", "--choice", "x", "--depends-on", "c2")
    commit(repo, "decision")
    repo.git("switch", "-q", "main")
    repo.ok("claim", "main work")
    commit(repo, "main")
    proc = subprocess.run(["git", "cherry-pick", "topic"], cwd=repo.path, env=repo.env, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "cites c2, which this side does not have" in proc.stdout + proc.stderr
    return repo


def test_a_refused_cherry_pick_is_not_called_a_driverless_merge(refused_pick: Repo):
    check = refused_pick.docket("check")
    assert check.code == 1
    said = check.out + check.err
    assert "without the docket driver" not in said and "docket init" not in said
    assert "docket resolve-conflict" in said
    resolve = refused_pick.docket("resolve-conflict")
    assert resolve.code == 1
    assert "cites c2, which this side does not have" in resolve.err
    assert "git cherry-pick --abort" in resolve.err
    assert "<<<<<<<" in refused_pick.ledger.read_text()  # left as it was


def test_a_session_start_during_a_conflict_briefs_from_head(refused_pick: Repo):
    payload = {"session_id": "s-c", "cwd": str(refused_pick.path), "source": "startup"}
    result = refused_pick.docket("hook", "session-start", input=json.dumps(payload))
    assert result.code == 0
    text = json.loads(result.out)["hookSpecificOutput"]["additionalContext"]
    assert "a git cherry-pick is in progress" in text and "docket resolve-conflict" in text
    assert "main work" in text
    assert "builds on" not in text


def test_a_session_start_without_a_conflict_in_progress_says_what_is_wrong(repo: Repo):
    """No conflict and nothing committed: the agent still gets one line naming the bad line and the fix
    (issue 28: an agent is never left unbriefed without knowing why), and the hook exits 0."""
    repo.ledger.write_text("not json\n")
    payload = {"session_id": "s-x", "cwd": str(repo.path), "source": "startup"}
    result = repo.docket("hook", "session-start", input=json.dumps(payload))
    assert result.code == 0
    text = json.loads(result.out)["hookSpecificOutput"]["additionalContext"]
    assert text.startswith("# docket: .docket/ledger.jsonl cannot be read (line 1: invalid JSON")
    assert "Fix: run 'docket check'" in text


# -- line ends: LF only, everywhere ------------------------------------------------------------------


@pytest.fixture
def crlf(repo: Repo) -> Repo:
    repo.ok("claim", "first")
    repo.ok("claim", "second")
    commit(repo, "two")
    repo.ledger.write_bytes(repo.ledger.read_bytes().replace(b"\n", b"\r\n"))
    return repo


def test_check_and_reads_reject_crlf_naming_the_line(crlf: Repo):
    check = crlf.docket("check")
    assert check.code == 1
    assert "line 1: the line ends with CR LF; ledger lines end with LF only" in check.out
    listing = crlf.docket("list")
    assert listing.code == 1 and "line 1: the line ends with CR LF" in listing.err


def test_the_pre_commit_check_names_the_line_ends(crlf: Repo):
    before = crlf.ledger.read_bytes()
    crlf.git("add", "-A")
    proc = subprocess.run(["git", "commit", "-m", "crlf"], cwd=crlf.path, env=crlf.env, capture_output=True, text=True)
    assert proc.returncode != 0
    said = proc.stdout + proc.stderr
    assert "CR LF" in said
    assert "a committed line was changed or deleted" not in said
    assert crlf.ledger.read_bytes() == before


def test_init_marks_ledgers_minus_text_so_autocrlf_never_converts(repo: Repo, tmp_path: Path):
    repo.ok("claim", "first")
    commit(repo, "first")
    clone = tmp_path / "autocrlf"
    subprocess.run(
        ["git", "-c", "core.autocrlf=true", "clone", "-q", str(repo.path), str(clone)], check=True, env=repo.env
    )
    assert b"\r" not in (clone / ".docket" / "ledger.jsonl").read_bytes()


def test_the_driver_refuses_a_crlf_tail_with_markers(driver: Driver):  # noqa: F811  (the fixture)
    base = ledger(record("c1", "Shared"))
    theirs = (base + ledger(record("c2", "Theirs"))).replace(b"\n", b"\r\n")
    code, result, err = driver.run(base, base + ledger(record("c2", "Mine")), theirs)
    assert code == 1
    assert "CR LF" in err
    assert b"<<<<<<<" in result


def test_a_pick_whose_text_names_a_record_this_side_lacks_is_refused(repo: Repo):
    # Imported as it was, "see c2" would name this side's own c2: a different record.
    repo.ok("claim", "base")
    commit(repo, "base")
    repo.git("switch", "-q", "-c", "topic")
    repo.ok("claim", "premise")
    commit(repo, "premise")
    repo.ok("claim", "follows from c2, see there")
    commit(repo, "mention")
    repo.git("switch", "-q", "main")
    repo.ok("claim", "main work")
    commit(repo, "main")
    proc = subprocess.run(["git", "cherry-pick", "topic"], cwd=repo.path, env=repo.env, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "c3 cites c2 (in its text), which this side does not have" in proc.stdout + proc.stderr
    repo.git("cherry-pick", "--abort")
    assert [r["text"] for r in repo.records()] == ["base", "main work"]
