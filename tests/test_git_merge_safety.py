"""Real git: the three ways a merge used to lose or rewrite committed records (issue 12), each reproduced."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo, commit

BARE_PATH = "/usr/bin:/bin"


def diverge(repo: Repo, topic: str, topic_text: str, main_text: str) -> None:
    """topic (new from main) records topic_text, main records main_text; each committed; main checked out."""
    repo.git("switch", "-q", "-c", topic)
    repo.ok("claim", topic_text)
    commit(repo, topic_text)
    repo.git("switch", "-q", "main")
    repo.ok("claim", main_text)
    commit(repo, main_text)


def texts(repo: Repo) -> list[str]:
    return [r["text"] for r in repo.records()]


def run_git(repo: Repo, *args: str, path: str | None = None) -> subprocess.CompletedProcess:
    env = {**repo.env, "PATH": path} if path else repo.env
    return subprocess.run(["git", *args], cwd=repo.path, env=env, capture_output=True, text=True)


def blob(repo: Repo, rev: str) -> bytes:
    return subprocess.run(
        ["git", "show", f"{rev}:.docket/ledger.jsonl"], cwd=repo.path, env=repo.env, capture_output=True, check=True
    ).stdout


@pytest.fixture
def based(repo: Repo) -> Repo:
    repo.ok("claim", "base")
    commit(repo, "base")
    return repo


def test_criss_cross_merge_keeps_ours_as_a_byte_prefix(based: Repo):
    r = based
    r.git("switch", "-q", "-c", "s1")
    r.ok("claim", "from s1")
    commit(r, "s1")
    r.git("switch", "-q", "-c", "s2", "main")
    r.ok("claim", "from s2")
    commit(r, "s2")
    r.git("merge", "-q", "s1", "-m", "m1")  # on s2
    r.git("switch", "-q", "s1")
    r.git("merge", "-q", "s2~1", "-m", "m2")
    before = blob(r, "s1")
    assert len(r.git("merge-base", "--all", "s1", "s2").split()) == 2
    r.git("merge", "-q", "s2", "-m", "m3")  # criss-cross: two merge bases
    after = blob(r, "s1")
    assert after.startswith(before), (before, after)
    assert sorted(texts(r)) == ["base", "from s1", "from s2"]
    assert r.docket("check").code == 0


def test_a_driver_run_without_path_still_merges(based: Repo):
    r = based
    diverge(r, "topic", "topic", "main")
    proc = run_git(r, "merge", "--no-edit", "topic", path=BARE_PATH)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert texts(r) == ["base", "main", "topic"]
    assert r.git("status", "--porcelain") == ""


def test_a_driver_that_cannot_start_leaves_markers_and_the_commit_is_refused(based: Repo):
    r = based
    r.git("config", "merge.docket.driver", "/nowhere/docket merge-driver %O %A %B %P")
    diverge(r, "topic", "topic record", "main record")
    proc = run_git(r, "merge", "--no-edit", "topic", path=BARE_PATH)
    assert proc.returncode != 0
    # Whatever the driver left, staging ours and committing must not drop topic's record.
    r.git("checkout", "--ours", ".docket/ledger.jsonl")
    r.git("add", ".docket/ledger.jsonl")
    commit_proc = run_git(r, "commit", "--no-edit", path=BARE_PATH)
    assert commit_proc.returncode != 0
    out = commit_proc.stdout + commit_proc.stderr
    assert "topic record" in out and "docket resolve-conflict" in out
    assert (Path(r.path) / ".git" / "MERGE_HEAD").exists()


def test_resolve_conflict_during_pull_rebase_keeps_upstream_ids(based: Repo, tmp_path: Path):
    up = based
    clone = Repo(tmp_path / "clone", up.env)
    subprocess.run(["git", "clone", "-q", str(up.path), str(clone.path)], check=True, env=up.env)
    # The clone never ran docket init: git merges the ledger as text.
    clone.ok("claim", "mine")
    clone.git("commit", "-q", "--no-verify", "-am", "mine")
    up.ok("claim", "upstream")
    commit(up, "upstream")
    pushed = blob(up, "main")
    proc = run_git(clone, "pull", "--rebase", "-q")
    assert proc.returncode != 0
    assert "<<<<<<<" in clone.ledger.read_text()
    result = clone.docket("resolve-conflict")
    assert result.code == 0, result.out + result.err
    assert clone.ledger.read_bytes().startswith(pushed)
    assert texts(clone) == ["base", "upstream", "mine"]
    assert "UU" not in clone.git("status", "--porcelain")
    cont = subprocess.run(
        ["git", "-c", "core.editor=true", "rebase", "--continue"],
        cwd=clone.path,
        env=clone.env,
        capture_output=True,
        text=True,
    )
    assert cont.returncode == 0, cont.stderr
    assert blob(clone, "HEAD").startswith(pushed)


def test_resolve_conflict_during_a_merge_keeps_ours_and_merge_head(based: Repo, tmp_path: Path):
    r = based
    r.git("config", "--remove-section", "merge.docket")
    r.git("switch", "-q", "-c", "topic")
    r.ok("claim", "topic")
    r.ok("decision", "builds on c2", "--choice", "x", "--depends-on", "c2")
    commit(r, "topic")
    r.git("switch", "-q", "main")
    r.ok("claim", "main")
    commit(r, "main")
    ours = blob(r, "main")
    assert run_git(r, "merge", "--no-edit", "topic").returncode != 0
    result = r.docket("resolve-conflict")
    assert result.code == 0, result.out + result.err
    assert "c2 -> c3" in result.out + result.err
    assert r.ledger.read_bytes().startswith(ours)
    assert texts(r) == ["base", "main", "topic", "builds on c3"]
    assert r.records()[-1]["depends_on"] == ["c3"]
    assert (r.path / ".git" / "MERGE_HEAD").exists()
    r.git("commit", "-q", "--no-edit")
    again = r.docket("resolve-conflict")
    assert again.code == 1 and "no conflicted ledger" in again.err


def test_resolve_conflict_refuses_outside_a_conflict(based: Repo):
    before = based.ledger.read_bytes()
    result = based.docket("resolve-conflict")
    assert result.code == 1
    assert result.err.startswith("docket: ")
    assert based.ledger.read_bytes() == before


def test_init_writes_commands_that_need_no_path(bare_repo: Repo):
    bare_repo.ok("init")
    driver = bare_repo.git("config", "--get", "merge.docket.driver").strip()
    assert driver.split()[0].startswith(("/", "'/"))
    assert "merge-driver %O %A %B %P" in driver
    hook = (bare_repo.path / ".git" / "hooks" / "pre-commit").read_text()
    assert "did you forget to activate your virtualenv" in hook


def test_the_criss_cross_merge_leaves_docket_log_naming_the_right_commits(based: Repo):
    r = based
    r.git("switch", "-q", "-c", "s1")
    r.ok("claim", "from s1")
    commit(r, "s1")
    r.git("switch", "-q", "-c", "s2", "main")
    r.ok("claim", "from s2")
    commit(r, "s2")
    r.git("merge", "-q", "s1", "-m", "m1")
    r.git("switch", "-q", "s1")
    r.git("merge", "-q", "s2~1", "-m", "m2")
    r.git("merge", "-q", "s2", "-m", "m3")
    ids = {rec["text"]: rec["id"] for rec in r.records()}
    assert ids == {"base": "c1", "from s1": "c2", "from s2": "c3"}
    for text, subject in (("from s1", "s1"), ("from s2", "s2")):
        added = r.ok("log", ids[text], "--json").json()["added"]  # type: ignore[index]
        assert added["subject"] == subject


def test_a_moved_virtualenv_is_reported_and_init_rewires(based: Repo):
    from docket_git.merging import wiring

    r = based
    gone = wiring.driver_command("'/moved away/venv/bin/python' -I -m docket_git")
    r.git("config", "merge.docket.driver", gone)
    doctor = r.docket("doctor")
    assert doctor.code == 1
    assert "does not start docket from a bare environment" in doctor.out
    assert "run 'docket init' again with the docket you use now" in doctor.out
    r.ok("init")
    configured = r.git("config", "--get", "merge.docket.driver").strip()
    # The console script's interpreter (its shebang may name bin/python3 where pytest runs bin/python).
    interpreter = shlex.split(configured)[0]
    assert Path(interpreter).resolve() == Path(sys.executable).resolve()
    assert configured == wiring.driver_command(f"{shlex.quote(interpreter)} -I -m docket_git")
    assert r.ok("doctor").code == 0


def test_a_driver_whose_interpreter_is_gone_still_leaves_markers(based: Repo):
    from docket_git.merging import wiring

    r = based
    r.git("config", "merge.docket.driver", wiring.driver_command("'/moved away/python' -I -m docket_git"))
    diverge(r, "topic", "topic", "main")
    assert run_git(r, "merge", "--no-edit", "topic", path=BARE_PATH).returncode != 0
    text = r.ledger.read_text()
    assert "<<<<<<< ours" in text and '"topic"' in text and '"main"' in text
    assert r.docket("resolve-conflict").code == 0
    assert texts(r) == ["base", "main", "topic"]


def test_the_hook_refuses_when_its_interpreter_is_gone_and_init_upgrades_an_old_hook(based: Repo):
    from docket_git.merging import wiring

    r = based
    hook = r.path / ".git" / "hooks" / "pre-commit"
    hook.write_text(wiring.hook_script("'/moved away/python' -I -m docket_git"))
    r.ok("claim", "more")
    r.git("add", "-A")
    proc = run_git(r, "commit", "-m", "more", path=BARE_PATH)
    assert proc.returncode != 0
    assert "did you forget to activate your virtualenv?" in proc.stderr
    doctor = r.docket("doctor")
    assert doctor.code == 1 and "/moved away/python, which is gone" in doctor.out
    # An older hook that looked for docket on PATH is replaced too.
    hook.write_text(f"#!/bin/sh\n{wiring.HOOK_MARKER}\nexec docket check --staged\n")
    assert "updated the pre-commit hook" in r.ok("init").out
    assert hook.read_text() == wiring.hook_script()
    assert run_git(r, "commit", "-q", "-m", "more", path=BARE_PATH).returncode == 0


# -- a branch that added nothing since the merge base takes the other side's ledger (issue 12's long run) --


def old_refs(data: bytes) -> dict[str, str]:
    """Each record's text -> its ID@DIGEST in that ledger version (the digest of the bytes up to its line)."""
    from docket_git.ledger import canonical

    out, end = {}, 0
    for line in data.splitlines(keepends=True):
        end += len(line)
        record = json.loads(line)
        out[record["text"]] = f"{record['id']}@{canonical.short(canonical.sha256(data[:end]))}"
    return out


def renumbered_by_the_other_side(r: Repo) -> bytes:
    """b1 records "from b1" as c2; main records "from main" as c2 and merges b1 (c2 -> c3 there). b1's ledger."""
    diverge(r, "b1", "from b1", "from main")
    r.git("merge", "-q", "--no-edit", "b1")
    assert [(x["id"], x["text"]) for x in r.records()] == [("c1", "base"), ("c2", "from main"), ("c3", "from b1")]
    r.git("switch", "-q", "b1")
    return blob(r, "b1")


def assert_b1_records_followed(r: Repo, before: bytes) -> None:
    """Every record b1 had is on b1 once, its old ID@DIGEST resolves to it, and log names its commit."""
    refs = old_refs(before)
    now = {x["text"]: x["id"] for x in r.records()}
    assert sorted(now) == ["base", "from b1", "from main"]
    resolved = r.ok("resolve", *refs.values()).out.splitlines()
    assert resolved == [f"{ref} -> {now[text]}" for text, ref in refs.items()]
    assert r.ok("log", now["from b1"], "--json").json()["added"]["subject"] == "from b1"  # type: ignore[index]
    assert r.docket("check").code == 0


def test_a_fast_forward_takes_the_other_ledger_and_old_ids_still_resolve(based: Repo):
    """Seeds 5, 21, 22 and 24: b1's c2 is c3 after the fast-forward, as main's merge numbered it."""
    r = based
    before = renumbered_by_the_other_side(r)
    r.git("merge", "-q", "main")
    assert r.git("rev-parse", "b1") == r.git("rev-parse", "main")  # a fast-forward: no merge, no driver
    assert not blob(r, "b1").startswith(before)
    assert_b1_records_followed(r, before)


def test_an_octopus_that_git_reduces_to_a_fast_forward_keeps_every_record(based: Repo):
    """Seeds 2 and 16: 'git merge main b3' with b3 already in main is a fast-forward to main."""
    r = based
    before = renumbered_by_the_other_side(r)
    r.git("branch", "b3", "main~1")
    proc = run_git(r, "merge", "--no-edit", "main", "b3")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert r.git("rev-parse", "b1") == r.git("rev-parse", "main")
    assert_b1_records_followed(r, before)


def test_a_no_ff_merge_of_a_descendant_takes_its_ledger_and_old_ids_still_resolve(based: Repo):
    """A merge commit whose ours added nothing since the base: git takes main's file and never runs the driver."""
    r = based
    before = renumbered_by_the_other_side(r)
    r.git("merge", "-q", "--no-ff", "--no-edit", "main")
    assert len(r.git("rev-list", "--parents", "-n", "1", "HEAD").split()) == 3
    assert blob(r, "HEAD") == blob(r, "main")
    assert_b1_records_followed(r, before)


def test_an_old_id_behind_a_merge_that_took_the_other_ledger_still_resolves(based: Repo):
    """Seed 4 (long profile), minimised: b1's c2 reached main by cherry-pick, so no merge renumbered it.

    Looking for b1's old version, history used to rule out b1's own commits as first-parent
    ancestors of the --no-ff merge, whose ledger is main's: 'history does not know c2@...'.
    """
    r = based
    diverge(r, "b1", "from b1", "from main")
    r.git("cherry-pick", "b1")  # main: c3 "from b1"
    r.git("merge", "-q", "--no-edit", "b1")  # finds it by content: nothing appended, nothing renumbered
    r.git("switch", "-q", "b1")
    before = blob(r, "b1")
    r.git("merge", "-q", "--no-ff", "--no-edit", "main")
    assert blob(r, "HEAD") == blob(r, "main")
    assert_b1_records_followed(r, before)
