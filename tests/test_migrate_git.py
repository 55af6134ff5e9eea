"""Migration in real git repositories: migration commits and deterministic output across clones."""

from __future__ import annotations

import json
import subprocess

from docket_git.migrate import convert
from docket_git.migrate import schema1 as v1
from tests.conftest import Repo
from tests.migrate_fixtures import every_shape, jsonl, s1


def blob(repo: Repo, spec: str) -> bytes:
    """Raw bytes of a blob, e.g. ``HEAD:.docket/ledger.jsonl`` or ``:.docket/ledger.jsonl`` (the index)."""
    return subprocess.run(["git", "show", spec], cwd=repo.path, env=repo.env, capture_output=True, check=True).stdout


def commit_schema1(repo: Repo, data: bytes) -> None:
    repo.ledger.write_bytes(data)
    repo.git("add", ".docket/ledger.jsonl", ".docket/.gitignore")
    # --no-verify: a clone from before docket-git guarded the ledger committed this.
    repo.git("commit", "-q", "--no-verify", "-m", "schema-1 ledger")


def test_a_staged_migration_is_recognised_against_head(repo: Repo):
    commit_schema1(repo, jsonl(every_shape()))
    repo.ok("migrate")
    repo.git("add", ".docket/ledger.jsonl")
    head, staged = blob(repo, "HEAD:.docket/ledger.jsonl"), blob(repo, ":.docket/ledger.jsonl")
    assert v1.schema_of(head) == 1 and v1.schema_of(staged) == 2
    assert convert.is_migration_of(head, staged)
    repo.git("commit", "-q", "-m", "docket migrate")
    assert repo.ok("check").out.strip().endswith("reads cleanly, 8 records")


def test_a_migration_with_a_record_added_is_not_a_migration(repo: Repo):
    commit_schema1(repo, jsonl(every_shape()))
    repo.ok("migrate")
    repo.ok("claim", "Retry keys are per tenant", "--state", "accepted")
    repo.git("add", ".docket/ledger.jsonl")
    assert not convert.is_migration_of(blob(repo, "HEAD:.docket/ledger.jsonl"), blob(repo, ":.docket/ledger.jsonl"))


def test_a_map_migration_commit_is_recognised(repo: Repo):
    commit_schema1(repo, jsonl([s1("d1", "settled", "Pick a queue", ""), s1("d2", "open", "Which region?")]))
    repo.ok("migrate", "--emit-map", "../map.json")
    entries = json.loads((repo.path.parent / "map.json").read_text())
    entries["d1"].update(kind="decision", state="adopted", choice="SQS")
    (repo.path.parent / "map.json").write_text(json.dumps(entries))
    repo.ok("migrate", "--map", "../map.json")
    repo.git("add", ".docket/ledger.jsonl")
    assert convert.is_migration_of(blob(repo, "HEAD:.docket/ledger.jsonl"), blob(repo, ":.docket/ledger.jsonl"))


def test_two_branches_that_migrate_separately_merge_cleanly(repo: Repo):
    """Migration output depends on the old bytes only, never on who, where, when or which branch."""
    commit_schema1(repo, jsonl(every_shape()))
    repo.git("checkout", "-q", "-b", "topic")
    topic_env = {**repo.env, "DOCKET_AUTHOR": "bob", "USER": "bob", "TZ": "Asia/Tokyo"}
    topic = Repo(repo.path, topic_env)
    topic.ok("migrate")
    topic.git("commit", "-q", "-am", "migrate on topic")
    on_topic = repo.ledger.read_bytes()
    repo.git("checkout", "-q", "main")
    (repo.ledger.parent / "ledger.jsonl.schema1").unlink()  # the untracked backup from the topic run
    repo.ok("migrate")
    repo.git("commit", "-q", "-am", "migrate on main")
    assert repo.ledger.read_bytes() == on_topic
    repo.git("merge", "-q", "--no-edit", "topic")
    assert repo.ledger.read_bytes() == on_topic
    assert "<<<<<<<" not in repo.ledger.read_text()
