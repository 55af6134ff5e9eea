"""`docket rebase OTHER`: append another copy's tail, renumbered, all or nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Repo, rec


@pytest.fixture
def other(tmp_path: Path) -> Path:
    return tmp_path / "other ledger.jsonl"


def write(path: Path, *records: dict) -> bytes:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path.read_bytes()


def test_rebase_appends_the_other_tail_renumbered(repo: Repo, other: Path):
    repo.write_ledger([rec("c1", "Shared"), rec("c2", "Mine")])
    write(other, rec("c1", "Shared"), rec("c2", "Theirs"), rec("d3", "Uses c2", depends_on=["c2"]))
    result = repo.ok("rebase", str(other))
    assert result.out.startswith("c2 -> c3\nd3 -> d4\n")
    assert result.out.endswith(f"docket: appended 2 record(s) to {repo.ledger}\n")
    records = repo.records()
    assert [r["id"] for r in records] == ["c1", "c2", "c3", "d4"]
    assert records[3]["depends_on"] == ["c3"] and records[3]["text"] == "Uses c3"
    assert repo.ok("check").code == 0
    assert sorted(p.name for p in repo.ledger.parent.iterdir()) == [".gitignore", "ledger.jsonl", "ledger.jsonl.lock"]
    # Twice: nothing more.
    assert repo.ok("rebase", str(other)).out == "docket: nothing to rebase; the histories already agree\n"


def test_dry_run_and_emit_map_write_no_ledger_bytes(repo: Repo, other: Path, tmp_path: Path):
    before = repo.write_ledger([rec("c1", "Shared"), rec("c2", "Mine")])
    write(other, rec("c1", "Shared"), rec("c2", "Theirs"))
    emitted = tmp_path / "map.json"
    result = repo.ok("rebase", str(other), "--dry-run", "--emit-map", str(emitted))
    assert "c2 -> c3" in result.out
    assert "1 record(s) would be appended" in result.out
    assert repo.ledger.read_bytes() == before
    assert json.loads(emitted.read_text()) == {"c2": "c3"}


def test_identical_ledgers_agree(repo: Repo, other: Path):
    data = repo.write_ledger([rec("c1", "Shared")])
    other.write_bytes(data)
    assert repo.ok("rebase", str(other)).out == "docket: nothing to rebase; the histories already agree\n"


def test_both_supersede_asks_by_default_and_strict_refuses(repo: Repo, other: Path):
    before = repo.write_ledger([rec("c1", "Shared"), rec("c2", "Mine replaces c1", supersedes=["c1"])])
    write(other, rec("c1", "Shared"), rec("c2", "Theirs replaces c1", supersedes=["c1"]))
    strict = repo.docket("rebase", str(other), "--strict")
    assert strict.code == 1
    assert strict.err.startswith("docket: both histories supersede c1")
    assert strict.err.rstrip().endswith("is unchanged")
    assert repo.ledger.read_bytes() == before
    result = repo.ok("rebase", str(other))
    assert "both histories supersede c1" in result.err
    assert [r["kind"] for r in repo.records()] == ["claim", "claim", "claim", "question"]


def test_missing_and_invalid_other_leave_the_ledger_alone(repo: Repo, other: Path):
    before = repo.write_ledger([rec("c1", "Shared")])
    missing = repo.docket("rebase", str(other))
    assert missing.code == 1 and missing.err == f"docket: no ledger at {other}\n"
    other.write_text(json.dumps(rec("c1", "Shared")) + "\n{oops\n")
    bad = repo.docket("rebase", str(other))
    assert bad.code == 1 and "line 2: invalid JSON" in bad.err
    assert repo.ledger.read_bytes() == before
