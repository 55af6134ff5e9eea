"""gh-aw's own ledgers replay in docket to the state gh-aw's reducer computed for them.

Each directory of tests/fixtures/gh-aw/ (copied from ../shared/reference/gh-aw-fixtures, data made by
running gh-aw's ledger logic, see its README) holds a ledger declaration (``config.json``), the records
as gh-aw stores them (``ledger.jsonl``: envelope type ``ledger_append``, the operation in the payload,
the deterministic record ID in the payload for every type but notes) and ``expected.json``: the
projection gh-aw builds. The directory is read at test time: a new fixture is a new test.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .conftest import Repo

FIXTURES = Path(__file__).parent / "fixtures" / "gh-aw"
CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.json").exists())
#: The records table's columns gh-aw and docket share (gh-aw adds shard and offset, docket its line).
RECORD_COLUMNS = ("ordinal", "id", "sha", "type", "timestamp", "payload")


def _toml_value(value: object) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def declare(repo: Repo, config: dict) -> str:
    """Declare the fixture's ledger in .docket/config.toml as docket spells it; its name."""
    name = config["name"]
    lines = [f"[ledgers.{name}]"]
    for key in ("type", "key", "schema"):
        if key in config:
            lines.append(f"{key} = {_toml_value(config[key])}")
    (repo.path / ".docket" / "config.toml").write_text("\n".join(lines) + "\n")
    return name


def query(repo: Repo, name: str, sql: str) -> list[dict]:
    result = repo.docket("ledger", "query", name, sql, "--json")
    assert result.code == 0, result.err
    return json.loads(result.out)


@pytest.fixture(scope="module")
def expected_of() -> dict[str, dict]:
    return {case: json.loads((FIXTURES / case / "expected.json").read_text()) for case in CASES}


@pytest.mark.parametrize("case", CASES)
def test_a_gh_aw_ledger_replays_to_gh_aw_s_projection(repo: Repo, case: str, expected_of: dict) -> None:
    expected = expected_of[case]
    config = json.loads((FIXTURES / case / "config.json").read_text())
    name = declare(repo, config)
    target = repo.path / ".docket" / "ledgers" / f"{name}.jsonl"
    target.parent.mkdir(exist_ok=True)
    shutil.copyfile(FIXTURES / case / "ledger.jsonl", target)
    before = target.read_bytes()

    records = query(repo, name, f"SELECT {', '.join(RECORD_COLUMNS)} FROM records ORDER BY ordinal")
    assert records == [{k: r[k] for k in RECORD_COLUMNS} for r in expected["records"]]
    diagnostics = query(repo, name, "SELECT code, detail FROM diagnostics")
    if not expected["ok"]:
        # gh-aw fails the whole projection; docket (by default) skips the poisoned operation and says so.
        assert [d["code"] for d in diagnostics] == ["invalid-operation"], expected["error"]
        said = repo.docket("ledger", "query", name, "SELECT count(*) FROM state")
        assert said.code == 0 and said.err.endswith(
            f"docket: note: 1 diagnostic(s): lines or operations replay skipped; 'docket ledger check {name}' lists them\n"
        ), said.err
        # --strict fails exactly where gh-aw's projection fails, with gh-aw's message.
        strict = repo.docket("ledger", "query", name, "SELECT count(*) FROM state", "--strict")
        assert strict.code == 1 and strict.out == "", strict
        assert strict.err.startswith(
            f"docket: ledger '{name}' fails under --strict, where gh-aw's projection fails: {expected['error']} (line "
        ), strict.err
        checked = repo.docket("ledger", "check", name, "--strict")
        assert checked.code == 1 and f"gh-aw's projection fails: {expected['error']} (line " in checked.out
        config = repo.path / ".docket" / "config.toml"
        config.write_text(config.read_text() + "strict = true\n")  # the declaration's key does the same
        keyed = repo.docket("ledger", "query", name, "SELECT count(*) FROM state")
        assert keyed.code == 1 and keyed.err == strict.err
    else:
        assert diagnostics == []
        assert "diagnostic" not in repo.docket("ledger", "query", name, "SELECT 1").err
        assert repo.docket("ledger", "query", name, "SELECT 1", "--strict").code == 0  # gh-aw's succeeds too
        for table, rows in (expected["tables"] or {}).items():
            if not rows:
                assert query(repo, name, f"SELECT count(*) AS n FROM {table}") == [{"n": 0}]
                continue
            columns = list(rows[0])
            got = query(repo, name, f"SELECT {', '.join(columns)} FROM {table}")
            key = lambda row: json.dumps(row, sort_keys=True)  # noqa: E731
            assert sorted(got, key=key) == sorted(rows, key=key), table
    assert target.read_bytes() == before


def test_strict_fails_on_any_history_diagnostic_as_gh_aw_does(repo: Repo) -> None:
    """gh-aw refuses a history with any reconstruct diagnostic (here a line that is not JSON), with one message."""
    case = FIXTURES / "03-map-put-delete"
    name = declare(repo, json.loads((case / "config.json").read_text()))
    target = repo.path / ".docket" / "ledgers" / f"{name}.jsonl"
    target.parent.mkdir(exist_ok=True)
    target.write_bytes((case / "ledger.jsonl").read_bytes() + b"{not json\n")
    assert repo.docket("ledger", "query", name, "SELECT count(*) FROM state").code == 0  # docket skips it
    strict = repo.docket("ledger", "query", name, "SELECT count(*) FROM state", "--strict")
    assert (
        strict.code == 1 and "gh-aw's projection fails: Ledger branch contains invalid canonical records" in strict.err
    )
    assert "invalid-json" in strict.err
