"""``docket sql``: read-only SQL over the ledger index, through the real console script."""

from __future__ import annotations

import subprocess

import pytest

from .conftest import DOCKET, Repo
from .typed_helpers import declare


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


# -- a statement can touch no file, and is bounded in time and size (issue 28) ------------------------

#: Every kind of statement that could create, attach or write a file; {out} is a directory of its own.
FILE_STATEMENTS = (
    "ATTACH '{out}/attached.db' AS a",
    "DETACH main",
    "VACUUM INTO '{out}/vacuumed.db'",
    "VACUUM",
    "INSERT INTO records (id) VALUES ('x1')",
    "UPDATE records SET text = 'x'",
    "DELETE FROM records",
    "CREATE TABLE stolen (x)",
    "CREATE TEMP TABLE stolen (x)",
    "CREATE VIEW v AS SELECT 1",
    "DROP TABLE records",
    "ALTER TABLE records ADD COLUMN x",
    "PRAGMA user_version = 7",
    "PRAGMA query_only = OFF",
    "PRAGMA writable_schema = ON",
    "PRAGMA journal_mode = DELETE",
    "REINDEX",
    "ANALYZE",
    "SELECT load_extension('{out}/evil')",
)


def _files(*dirs) -> dict[str, bytes]:
    """Every file under dirs, with its bytes (the index's WAL side files aside: a reader maps -shm)."""
    return {
        str(p): p.read_bytes()
        for d in dirs
        if d.exists()
        for p in sorted(d.rglob("*"))
        if p.is_file() and not p.name.endswith("-shm")
    }


@pytest.mark.parametrize("where", ["index", "in-memory index", "no ledger"])
def test_no_statement_can_create_attach_or_write_a_file(repo: Repo, bare_repo: Repo, tmp_path, where) -> None:
    target = bare_repo if where == "no ledger" else repo
    if where != "no ledger":
        seed(repo)
    env = dict(target.env)
    if where == "in-memory index":
        blocker = tmp_path / "not-a-dir"
        blocker.write_text("x")
        env["XDG_CACHE_HOME"] = str(blocker)
    out = tmp_path / "out"
    out.mkdir()
    warm = subprocess.run([DOCKET, "sql", "SELECT 1"], cwd=target.path, env=env, capture_output=True)  # the index
    assert warm.returncode == 0
    before = _files(target.path, tmp_path / "cache", out)
    for statement in FILE_STATEMENTS:
        sql = statement.format(out=out)
        proc = subprocess.run([DOCKET, "sql", sql], cwd=target.path, env=env, capture_output=True, text=True)
        assert proc.returncode == 2, (sql, proc.stdout, proc.stderr)
        assert proc.stderr.splitlines()[-1].startswith("docket: sql: "), (sql, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert list(out.iterdir()) == [], sql
        assert _files(target.path, tmp_path / "cache", out) == before, sql
    refused = subprocess.run([DOCKET, "sql", FILE_STATEMENTS[0].format(out=out)], cwd=target.path, env=env,
                             capture_output=True, text=True).stderr  # fmt: skip
    assert "docket: sql: ATTACH (or VACUUM) is refused: a query may only read" in refused
    assert target.docket("sql", "SELECT * FROM pragma_table_info('records') LIMIT 1", "--json").code == 0


def test_a_typed_ledger_query_can_touch_no_file_either(repo: Repo, tmp_path) -> None:
    declare(repo, '\n[ledgers.events]\ntype = "log"\n')
    repo.ok("ledger", "append", "events", '{"operation": "append", "value": 1}')
    out = tmp_path / "out"
    out.mkdir()
    repo.ok("ledger", "query", "events", "SELECT 1")  # the projection
    before = _files(repo.path, tmp_path / "cache")
    for statement in FILE_STATEMENTS:
        result = repo.docket("ledger", "query", "events", statement.format(out=out))
        assert result.code == 1 and result.err.startswith("docket: query failed: "), (statement, result.err)
        assert list(out.iterdir()) == [], statement
        assert _files(repo.path, tmp_path / "cache") == before, statement
    result = repo.docket("ledger", "query", "events", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 "
                         "FROM c) SELECT count(*) FROM c", "--timeout", "0.2")  # fmt: skip
    assert result.code == 1 and "time limit of 0.2 s" in result.err and "--timeout" in result.err


ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c"


def test_a_statement_stops_at_its_time_limit_and_names_the_option(repo: Repo) -> None:
    seed(repo)
    result = repo.docket("sql", ENDLESS)  # the default: a few seconds, not forever
    assert result.code == 2
    assert result.err == (
        "docket: sql: the query ran past its time limit of 5 s; narrow it, or raise --timeout SECONDS\n"
    )
    result = repo.docket("sql", ENDLESS, "--timeout", "0.2")
    assert result.code == 2 and "time limit of 0.2 s" in result.err
    for bad in ("0", "-1", "nan", "inf", "soon", "9" * 5000):
        result = repo.docket("sql", "SELECT 1", "--timeout", bad)
        assert result.code == 2 and result.err.startswith("docket: --timeout "), bad


def test_a_result_is_bounded_in_rows_and_bytes(repo: Repo) -> None:
    seed(repo)
    many = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 50000000) SELECT x FROM c"
    result = repo.docket("sql", many, "--max-rows", "1000")
    assert result.code == 2
    assert result.err == "docket: sql: the result passed 1,000 rows; narrow the query (LIMIT), or raise --max-rows\n"
    result = repo.docket("sql", many)  # the default stops it too (the row or the time limit, whichever first)
    assert result.code == 2 and ("--max-rows" in result.err or "--timeout" in result.err)
    wide = (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 100) SELECT printf('%.*c', 500, 'x') FROM c"
    )
    result = repo.docket("sql", wide, "--max-bytes", "10000")
    assert result.code == 2 and "passed 10,000 bytes" in result.err and "--max-bytes" in result.err
    result = repo.docket("sql", "SELECT zeroblob(20000)", "--max-bytes", "10000")
    assert result.code == 2 and "--max-bytes" in result.err
    # one huge value: SQLite's printf gives NULL past the length limit, at once, instead of 900 MB
    assert repo.ok("sql", "SELECT printf('%.*c', 900000000, 'x') AS v", "--json").json() == [{"v": None}]
    assert repo.ok("sql", "SELECT count(*) AS n FROM records", "--json", "--max-rows", "1").json() == [{"n": 4}]
    for flag in ("--max-rows", "--max-bytes"):
        for bad in ("0", "1000000001", "9" * 5000):
            result = repo.docket("sql", "SELECT 1", flag, bad)
            assert result.code == 2 and result.err.startswith(f"docket: {flag}"), (flag, bad, result.err)
            assert "Traceback" not in result.err


def test_a_cache_dir_with_uri_characters_opens_the_index_not_another_file(repo: Repo, tmp_path) -> None:
    seed(repo)
    cache = tmp_path / "c?mode=rwc#"
    env = {**repo.env, "XDG_CACHE_HOME": str(cache)}
    proc = subprocess.run([DOCKET, "sql", "SELECT count(*) AS n FROM records", "--json"], cwd=repo.path, env=env,
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["[", "{", '"n":', "4", "}", "]"]
    assert not (tmp_path / "c").exists()  # "file:.../c?mode=rwc#..." would have made it
