"""``docket sql``: read-only SQL over the ledger index, through the real console script."""

from __future__ import annotations

import subprocess

from .conftest import Repo


def seed(repo: Repo) -> None:
    repo.ok("claim", "Latency budget is 50 ms", "--state", "accepted", "--scope", "svc/")
    repo.ok("question", "Which cache?")
    repo.ok("decision", "Cache reads in-process", "--choice", "LRU", "--depends-on", "c1", "--answers", "q2")
    repo.ok("decision", "Shard by tenant", "--choice", "hash", "--state", "revoked")


def test_sql_answers_from_the_current_ledger_and_follows_appends(repo: Repo) -> None:
    seed(repo)
    out = repo.ok("sql", "SELECT id, state FROM records ORDER BY seq", "--json").json()
    assert out == [
        {"id": "c1", "state": "accepted"},
        {"id": "q2", "state": "resolved"},
        {"id": "d3", "state": "adopted"},
        {"id": "d4", "state": "revoked"},
    ]
    assert repo.ok("sql", "SELECT blocker FROM blocked_by WHERE decision = 'd4'", "--json").json() == [
        {"blocker": "d4"}
    ]
    repo.ok("claim", "Latency budget is 80 ms", "--state", "accepted", "--supersedes", "c1")
    rows = repo.ok("sql", "SELECT id, applicable FROM records WHERE kind = 'decision' ORDER BY seq", "--json").json()
    assert rows == [{"id": "d3", "applicable": 0}, {"id": "d4", "applicable": 0}]
    assert repo.ok("sql", "SELECT state FROM records WHERE id = 'q2'", "--json").json() == [{"state": "open"}]


def test_sql_prints_a_table_for_people(repo: Repo) -> None:
    seed(repo)
    out = repo.ok("sql", "SELECT kind, count(*) AS n FROM records GROUP BY kind ORDER BY kind").out
    assert out == "kind      n\n--------  -\nclaim     1\ndecision  2\nquestion  1\n"


def test_sql_is_read_only_and_bad_sql_is_a_usage_error(repo: Repo) -> None:
    seed(repo)
    before = repo.ledger.read_bytes()
    for statement in ("DELETE FROM records", "DROP TABLE records", "UPDATE records SET text = 'x'"):
        result = repo.docket("sql", statement)
        assert result.code == 2, statement
        assert result.err.startswith("docket: sql: ") and "read-only" in result.err
        assert "Traceback" not in result.err
    result = repo.docket("sql", "SELEC id FROM records")
    assert result.code == 2 and result.err == 'docket: sql: near "SELEC": syntax error\n'
    result = repo.docket("sql", "SELECT nope FROM records")
    assert result.code == 2 and "no such column: nope" in result.err
    assert repo.docket("sql").code == 2
    assert repo.ledger.read_bytes() == before
    assert repo.ok("sql", "SELECT count(*) AS n FROM records", "--json").json() == [{"n": 4}]


TABLES = (
    "meta",
    "checkpoints",
    "records",
    "haystacks",
    "prerequisites",
    "relations",
    "scopes",
    "blocked_by",
    "resolved_by",
)


def test_sql_schema_names_every_table(repo: Repo) -> None:
    out = repo.ok("sql", "--schema").out
    for table in TABLES:
        assert f"CREATE TABLE {table} (" in out
    tables = repo.ok("sql", "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", "--json").json()
    assert {t["name"] for t in tables} == set(TABLES)


def test_a_branch_switch_is_seen_even_with_the_same_length_and_mtime(repo: Repo) -> None:
    repo.ok("claim", "alpha one", "--state", "accepted")
    repo.git("add", "-A")
    repo.git("commit", "-qm", "one")
    repo.git("checkout", "-qb", "other")
    repo.ok("claim", "bravo two")
    repo.git("commit", "-qam", "bravo")
    repo.git("checkout", "-q", "main")
    repo.ok("claim", "delta two")
    repo.git("commit", "-qam", "delta")
    assert repo.ok("sql", "SELECT text FROM records WHERE id = 'c2'", "--json").json() == [{"text": "delta two"}]
    subprocess.run(["git", "checkout", "-q", "other"], cwd=repo.path, env=repo.env, check=True)
    assert repo.ok("sql", "SELECT text FROM records WHERE id = 'c2'", "--json").json() == [{"text": "bravo two"}]


def test_an_unwritable_cache_dir_gives_an_in_memory_index_with_one_notice(repo: Repo, tmp_path) -> None:
    seed(repo)
    before = repo.ledger.read_bytes()
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    env = {**repo.env, "XDG_CACHE_HOME": str(blocker)}
    proc = subprocess.run(
        ["docket", "sql", "SELECT count(*) AS n FROM records", "--json"],
        cwd=repo.path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().replace(" ", "").replace("\n", "") == '[{"n":4}]'
    notices = [line for line in proc.stderr.splitlines() if "in-memory index" in line]
    assert len(notices) == 1 and notices[0].startswith("docket: cannot write the ledger index")
    assert repo.ledger.read_bytes() == before


def test_sql_without_a_ledger_says_so_and_queries_an_empty_index(bare_repo: Repo) -> None:
    result = bare_repo.docket("sql", "SELECT count(*) AS n FROM records", "--json")
    assert result.code == 0
    assert result.json() == [{"n": 0}]
    assert "no ledger" in result.err
