"""The pre-commit hook lets a migration commit through, and nothing else that rewrites the ledger."""

from __future__ import annotations

import json
import subprocess

from tests.conftest import Repo
from tests.migrate_fixtures import every_shape, jsonl, s1


def commit(repo: Repo, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "commit", "-q", "-m", "change", *args], cwd=repo.path, env=repo.env, capture_output=True, text=True
    )


def schema1_at_head(repo: Repo, records: list[dict]) -> None:
    # An old clone committed this before docket-git guarded the ledger.
    repo.ledger.write_bytes(jsonl(records))
    repo.git("add", "-A")
    assert commit(repo, "--no-verify").returncode == 0


def test_the_pre_commit_hook_accepts_a_migration_commit(repo: Repo):
    assert "check --staged" in (repo.path / ".git" / "hooks" / "pre-commit").read_text()
    schema1_at_head(repo, every_shape())
    repo.ok("migrate")
    repo.git("add", ".docket/ledger.jsonl")
    proc = commit(repo)  # the hook runs docket check --staged against HEAD's schema-1 ledger
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert repo.git("rev-list", "--count", "HEAD").strip() == "2"
    # after the migration commit, the usual append-only rule applies to schema 2
    repo.ok("claim", "Retry keys are per tenant")
    assert commit(repo, "-a").returncode == 0


def test_the_pre_commit_hook_accepts_a_map_migration_commit(repo: Repo):
    schema1_at_head(repo, [s1("d1", "settled", "Pick a queue", ""), s1("d2", "open", "Which region?")])
    repo.ok("migrate", "--emit-map", "../map.json")
    entries = json.loads((repo.path.parent / "map.json").read_text())
    entries["d1"].update(kind="decision", state="adopted", choice="SQS")
    (repo.path.parent / "map.json").write_text(json.dumps(entries))
    repo.ok("migrate", "--map", "../map.json")
    proc = commit(repo, "-a")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_pre_commit_hook_refuses_a_migration_with_a_hand_edit(repo: Repo):
    schema1_at_head(repo, every_shape())
    repo.ok("migrate")
    repo.ledger.write_text(repo.ledger.read_text().replace('"Redis"', '"Memcached"'))
    proc = commit(repo, "-a")
    assert proc.returncode != 0
    assert "a committed line was changed or deleted" in proc.stderr
    assert repo.git("rev-list", "--count", "HEAD").strip() == "1"


def test_the_pre_commit_hook_refuses_a_migration_with_records_added(repo: Repo):
    schema1_at_head(repo, every_shape())
    repo.ok("migrate")
    repo.ok("claim", "Retry keys are per tenant")
    assert commit(repo, "-a").returncode != 0


def test_the_merge_driver_sends_a_schema_1_side_to_migrate_then_merges_it(repo: Repo):
    schema1_at_head(repo, every_shape())
    repo.git("checkout", "-q", "-b", "topic")
    with repo.ledger.open("ab") as handle:
        handle.write(jsonl([s1("d9", "settled", "Locks use Redlock", "Redlock", because=["d5"])]))
    assert commit(repo, "-a", "--no-verify").returncode == 0
    repo.git("checkout", "-q", "main")
    repo.ok("migrate")
    assert commit(repo, "-a").returncode == 0  # the migration commit alone
    repo.ok("claim", "Retry keys are per tenant")  # c9 on main
    assert commit(repo, "-a").returncode == 0

    merge = subprocess.run(["git", "merge", "topic"], cwd=repo.path, env=repo.env, capture_output=True, text=True)
    assert merge.returncode != 0
    assert (
        "docket: cannot merge the ledger: the other branch's ledger is schema 1 and this branch's is schema 2; "
        "run 'docket migrate' on the other branch first" in merge.stderr
    )
    repo.git("merge", "--abort")

    repo.git("checkout", "-q", "topic")
    (repo.ledger.parent / "ledger.jsonl.schema1").unlink()  # main's untracked backup
    repo.ok("migrate")
    assert commit(repo, "-a").returncode == 0  # a migration commit of topic's own ledger
    repo.git("checkout", "-q", "main")
    merged = subprocess.run(
        ["git", "merge", "--no-edit", "topic"], cwd=repo.path, env=repo.env, capture_output=True, text=True
    )
    assert merged.returncode == 0, merged.stderr
    ids = [r["id"] for r in repo.records()]
    assert ids[-2:] == ["c9", "d10"]  # topic's d9 renumbered after main's c9
    assert repo.records()[-1]["legacy"]["source_id"] == "d9"
    assert repo.ok("check").code == 0
