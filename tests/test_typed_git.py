"""Typed ledgers in real git: merges through the driver `docket init` wires, the pre-commit check,
compaction, declarations in config.toml, and the projection kept current across branch switches."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import Repo
from tests.typed_helpers import declare, ledger_file, ok_op, op, rows, snapshot, state


def commit(repo: Repo, message: str) -> None:
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", message)


@pytest.fixture
def shared(repo: Repo) -> Repo:
    declare(repo)
    ok_op(repo, "metrics", {"operation": "increment", "name": "runs", "amount": 1})
    ok_op(repo, "history", {"operation": "append", "value": "stem"})
    commit(repo, "shared")
    return repo


def diverge(repo: Repo) -> None:
    repo.git("checkout", "-q", "-b", "topic")
    for i in range(3):
        ok_op(repo, "metrics", {"operation": "increment", "name": "runs", "amount": 10 + i})
        ok_op(repo, "history", {"operation": "append", "value": f"topic {i}"})
    ok_op(repo, "metrics", {"operation": "decrement", "name": "topic-only", "amount": 2})
    commit(repo, "topic")
    repo.git("checkout", "-q", "main")
    for i in range(2):
        ok_op(repo, "metrics", {"operation": "increment", "name": "runs", "amount": 100 + i})
        ok_op(repo, "history", {"operation": "append", "value": f"main {i}"})
    commit(repo, "main")


def test_concurrent_appends_merge_clean_and_both_orders_agree(shared: Repo):
    assert "merge: docket" in shared.git("check-attr", "merge", ".docket/ledgers/metrics.jsonl")
    diverge(shared)
    main_tip = shared.git("rev-parse", "main").strip()
    main_bytes = ledger_file(shared, "history").read_bytes()
    shared.git("merge", "-q", "--no-edit", "topic")
    assert shared.git("status", "--porcelain") == ""
    assert ledger_file(shared, "history").read_bytes().startswith(main_bytes)  # ours stays a byte prefix
    merged_counter, merged_log = state(shared, "metrics"), state(shared, "history")
    assert {r["name"]: r["value"] for r in merged_counter} == {"runs": 1 + 10 + 11 + 12 + 100 + 101, "topic-only": -2}
    assert len(merged_log) == 6
    for name in ("metrics", "history"):
        assert shared.docket("ledger", "check", name).code == 0

    shared.git("checkout", "-q", "topic")
    shared.git("merge", "-q", "--no-edit", main_tip)
    assert state(shared, "metrics") == merged_counter
    assert state(shared, "history") == merged_log  # replay order from parents and hashes, not file order

    # The next append follows both heads (a merge node) and sees the merged state.
    ok_op(shared, "metrics", {"operation": "increment", "name": "runs", "amount": 1})
    parents = json.loads(ledger_file(shared, "metrics").read_text().splitlines()[-1])["parents"]
    assert len(parents) == 2
    assert {r["name"]: r["value"] for r in state(shared, "metrics")}["runs"] == 236


def test_same_record_id_with_other_content_leaves_conflict_markers(shared: Repo):
    shared.git("checkout", "-q", "-b", "topic")
    ok_op(shared, "metrics", {"operation": "increment", "name": "runs", "amount": 5}, "--txn", "same")
    commit(shared, "topic")
    shared.git("checkout", "-q", "main")
    ok_op(shared, "metrics", {"operation": "increment", "name": "runs", "amount": 6}, "--txn", "same")
    commit(shared, "main")
    proc = subprocess.run(
        ["git", "merge", "--no-edit", "topic"], cwd=shared.path, env=shared.env, capture_output=True, text=True
    )
    assert proc.returncode != 0
    assert "differs from this branch's record with the same ID" in proc.stderr
    assert "<<<<<<<" in ledger_file(shared, "metrics").read_text()


def test_precommit_blocks_a_changed_record_and_allows_appends_and_compaction(shared: Repo):
    path = ledger_file(shared, "metrics")
    ok_op(shared, "metrics", {"operation": "increment", "name": "runs", "amount": 2})
    shared.git("add", "-A")
    assert shared.docket("check", "--staged").code == 0
    shared.git("commit", "-q", "-m", "append")

    original = path.read_bytes()
    path.write_bytes(original.replace(b'"amount":2', b'"amount":3'))
    shared.git("add", "-A")
    result = shared.docket("check", "--staged")
    assert result.code == 1
    assert "invalid-sha" in result.err and "line 2 of HEAD's version is changed or missing" in result.err
    commit_try = subprocess.run(["git", "commit", "-q", "-m", "tamper"], cwd=shared.path, env=shared.env,
                                capture_output=True, text=True)  # fmt: skip
    assert commit_try.returncode != 0

    path.write_bytes(original)
    lines = original.splitlines(keepends=True)
    path.write_bytes(lines[1] + lines[0])
    shared.git("add", "-A")
    assert shared.docket("check", "--staged").code == 0  # reordered, nothing lost

    path.write_bytes(lines[1])
    shared.git("add", "-A")
    result = shared.docket("check", "--staged")
    assert result.code == 1 and "append-only" in result.err


def test_compaction_is_lossless_and_state_preserving(shared: Repo):
    diverge(shared)
    shared.git("merge", "-q", "--no-edit", "topic")
    path = ledger_file(shared, "history")
    before_state = state(shared, "history")
    before_records = rows(shared, "history", "SELECT id, sha FROM records ORDER BY ordinal")
    before_parents = rows(shared, "history", "SELECT * FROM parents ORDER BY 1, 2")
    path.write_bytes(path.read_bytes() + path.read_bytes().splitlines(keepends=True)[0])  # a duplicate line
    result = shared.ok("ledger", "compact", "history")
    assert "1 duplicate line(s) dropped" in result.out
    assert [json.loads(line)["sha"] for line in path.read_text().splitlines()] == [r["sha"] for r in before_records]
    assert state(shared, "history") == before_state
    assert rows(shared, "history", "SELECT * FROM parents ORDER BY 1, 2") == before_parents
    assert shared.docket("ledger", "check", "history").code == 0
    shared.git("add", "-A")
    assert shared.docket("check", "--staged").code == 0

    path.write_bytes(path.read_bytes() + b"torn")
    before = snapshot(shared)
    refused = shared.docket("ledger", "compact", "history")
    assert refused.code == 1 and "cannot compact" in refused.err and "line 7" in refused.err
    assert snapshot(shared) == before


def test_check_lists_a_poisoned_record_and_the_rest_replays(shared: Repo):
    path = ledger_file(shared, "metrics")
    good = path.read_text().splitlines()[0]
    record = json.loads(good)
    record["payload"]["amount"] = -4  # re-hashed below, so only the operation is wrong
    from docket_git.typed import canonical

    body = {k: v for k, v in record.items() if k != "sha"}
    body["id"] = "ldg-00000000-0000-4000-8000-000000000000"
    body["sha"] = canonical.digest(canonical.dumps(body))
    path.write_text(path.read_text() + canonical.dumps(body) + "\n")
    ok_op(shared, "metrics", {"operation": "increment", "name": "runs", "amount": 2})
    result = shared.docket("ledger", "check", "metrics")
    assert result.code == 1
    assert "line 2 (ldg-00000000-0000-4000-8000-000000000000): invalid-operation: amount must be" in result.out
    assert state(shared, "metrics") == [{"name": "runs", "value": 3}]


def test_projection_follows_branch_switches(shared: Repo):
    diverge(shared)
    assert len(state(shared, "history")) == 3
    shared.git("checkout", "-q", "topic")
    assert len(state(shared, "history")) == 4
    shared.git("checkout", "-q", "main")
    assert [r["value"] for r in state(shared, "history")] == ['"stem"', '"main 0"', '"main 1"']


@pytest.mark.parametrize(
    ("toml", "needle"),
    [
        ('[ledgers.x]\ntype = "queue"\n', "ledgers.x.type: unknown type 'queue'"),
        ('[ledgers.x]\ntype = "map"\nkey = "id"\n', "ledgers.x.key: only a table ledger has a key"),
        ('[ledgers.x]\ntype = "table"\n', "ledgers.x.key: a table ledger needs key"),
        (
            '[ledgers.x]\ntype = "counter"\nschema = { type = "object" }\n',
            "ledgers.x.schema: a counter ledger takes no",
        ),
        ('[ledgers.x]\ntype = "notes"\nschema = { type = "object" }\n', "ledgers.x.schema: a notes ledger takes no"),
        ('[ledgers.x]\ntype = "log"\nschema = { type = "string", pattern = "a" }\n', "keyword 'pattern' is not supp"),
        ('[ledgers.x]\ntype = "log"\nschema_file = "missing.json"\n', "ledgers.x.schema_file: cannot read"),
        ('[ledgers.x]\ntype = "log"\ncolour = 1\n', "ledgers.x.colour: unknown key"),
    ],
)
def test_bad_declarations_name_the_ledger_and_key(repo: Repo, toml: str, needle: str):
    declare(repo, toml)
    before = snapshot(repo)
    result = op(repo, "x", {"operation": "append", "value": 1})
    assert result.code == 1 and needle in result.err, result.err
    assert "Traceback" not in result.err
    assert snapshot(repo) == before


def test_schema_file_and_briefing_accept_the_ledger_tables(repo: Repo):
    (repo.path / "schemas").mkdir()
    (repo.path / "schemas" / "row.json").write_text('{"type": "object", "required": ["n"]}')
    declare(repo, '[ledgers.rows]\ntype = "log"\nschema_file = "schemas/row.json"\n')
    ok_op(repo, "rows", {"operation": "append", "value": {"n": 1}})
    assert op(repo, "rows", {"operation": "append", "value": {}}).code == 1
    repo.ok("claim", "The briefing still reads config.toml")
    assert "The briefing still reads config.toml" in repo.ok("context").out


def test_a_branch_whose_insert_lost_does_not_update_the_winner_s_row(shared: Repo):
    """Both branches insert f1 and then update it; after the merge one insert wins, and the other
    branch's update (meant for its own row) is skipped and listed, not applied to the winner's row.
    An update written after the merge sees both inserts and applies."""
    shared.git("checkout", "-q", "-b", "b")
    ok_op(shared, "findings", {"operation": "insert", "value": {"id": "f1", "severity": "low", "by": "B"}})
    ok_op(shared, "findings", {"operation": "update", "key": "f1", "patch": {"seen": "B"}})
    commit(shared, "b")
    shared.git("checkout", "-q", "main")
    ok_op(shared, "findings", {"operation": "insert", "value": {"id": "f1", "severity": "low", "by": "A"}})
    ok_op(shared, "findings", {"operation": "update", "key": "f1", "patch": {"seen": "A"}})
    commit(shared, "a")
    shared.git("merge", "-q", "--no-edit", "b")
    (row,) = state(shared, "findings")
    winner = json.loads(row["value"])["by"]
    assert json.loads(row["value"]) == {"id": "f1", "severity": "low", "by": winner, "seen": winner}
    checked = shared.docket("ledger", "check", "findings")
    assert checked.code == 1
    assert "table key 'f1' already exists" in checked.out
    assert "this branch's insert of it was skipped" in checked.out and "its update is skipped too" in checked.out
    strict = shared.docket("ledger", "check", "findings", "--strict")  # gh-aw fails at the losing insert
    assert strict.code == 1 and "gh-aw's projection fails: Table key already exists (line " in strict.out
    ok_op(shared, "findings", {"operation": "update", "key": "f1", "patch": {"seen": "both"}})
    assert json.loads(state(shared, "findings")[0]["value"])["seen"] == "both"
