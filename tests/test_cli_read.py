"""list, show, where through the real console script."""

from __future__ import annotations

import json

import pytest

from .conftest import Repo


def seed(repo: Repo) -> None:
    repo.ok("claim", "Payments need idempotency keys", "--state", "accepted", "--scope", "src/pay/")
    repo.ok("question", "Where do keys live?")
    repo.ok("decision", "Keep keys in Redis", "--choice", "Redis", "--depends-on", "c1", "--answers", "q2")
    repo.ok("claim", "Keys expire after a day", "--supports", "c1")
    repo.ok("claim", "Keys expire after a week", "--supersedes", "c4", "--rationale", "Provider changed the TTL")


def test_list_hides_retired_and_shows_derived_state(repo: Repo) -> None:
    seed(repo)
    assert repo.ok("list").out.splitlines() == [
        "c1  accepted  Payments need idempotency keys",
        "q2  resolved  Where do keys live?",
        "d3  adopted  Keep keys in Redis",
        "      choice: Redis",
        "c5  unassessed  Keys expire after a week",
        "      rationale: Provider changed the TTL",
    ]
    superseded = repo.ok("list", "--superseded").out
    assert "c4  unassessed  Keys expire after a day  <- c1  (superseded by c5)" in superseded
    oneline = repo.ok("list", "--oneline", "--superseded").out.splitlines()
    assert "c4    unassessed Keys expire after a day (superseded by c5)" in oneline


def test_list_filters(repo: Repo) -> None:
    seed(repo)
    assert [r["id"] for r in repo.ok("list", "--json", "--kind", "claim").json()] == ["c1", "c5"]
    assert [r["id"] for r in repo.ok("list", "--json", "--state", "resolved").json()] == ["q2"]
    assert [r["id"] for r in repo.ok("list", "--json", "--state", "open").json()] == []
    assert [r["id"] for r in repo.ok("list", "--json", "--find", "REDIS").json()] == ["d3"]
    assert repo.ok("list", "--oneline").out.splitlines()[0].startswith("c1    accepted  Payments")
    assert repo.docket("list", "--state", "bogus").code == 2
    assert repo.docket("list", "--kind", "note").code == 2


def test_list_empty(repo: Repo) -> None:
    assert repo.ok("list", "--json").out == "[]\n"
    result = repo.ok("list")
    assert (result.out, result.err) == ("", "docket: nothing recorded\n")


def test_show_json_and_at(repo: Repo) -> None:
    seed(repo)
    q2 = repo.ok("show", "q2", "--json").json()
    assert (q2["state"], q2["recorded_state"], q2["resolved_by"]) == ("resolved", "open", ["d3"])
    d3 = repo.ok("show", "d3", "--json").json()
    assert (d3["applicable"], d3["blocked_by"]) == (True, [])
    c4 = repo.ok("show", "c4", "--json").json()
    assert c4["retired_by"] == "c5"
    assert repo.ok("show", "c4", "--at", "c4", "--json").json()["retired_by"] == ""
    assert repo.ok("show", "q2", "--at", "q2", "--json").json()["state"] == "open"


def test_show_human(repo: Repo) -> None:
    seed(repo)
    out = repo.ok("show", "d3").out.splitlines()
    assert out[0] == "d3  decision  adopted  Keep keys in Redis"
    assert "Choice: Redis" in out
    assert "Depends on: c1 (Payments need idempotency keys)" in out
    assert "Answers: q2 (Where do keys live?)" in out
    assert out[-1].startswith("Author: tester")


def test_show_unknown(repo: Repo) -> None:
    seed(repo)
    result = repo.docket("show", "zz")
    assert (result.code, result.err) == (1, "docket: no entry zz\n")
    result = repo.docket("show", "c1", "--at", "c9")
    assert (result.code, result.err) == (1, "docket: unknown record c9\n")


def test_blocked_decision_shows_blockers(repo: Repo) -> None:
    repo.ok("claim", "Unchecked premise")
    repo.ok("decision", "Build on it", "--choice", "yes", "--depends-on", "c1")
    repo.ok("decision", "Build further", "--choice", "more", "--depends-on", "d2")
    d3 = repo.ok("show", "d3", "--json").json()
    assert (d3["applicable"], d3["blocked_by"], d3["state"]) == (False, ["d2", "c1"], "adopted")
    assert "Blocked by: d2, c1" in repo.ok("show", "d3").out


def test_where_before_creation(bare_repo: Repo) -> None:
    assert bare_repo.ok("where").out == f"{bare_repo.ledger}  (project, not created yet)\n"


def test_help_teaches(repo: Repo) -> None:
    out = repo.ok("--help").out
    for command in ("claim", "decision", "question", "record", "list", "show", "check", "init", "where"):
        assert command in out
    assert "--supports" in repo.ok("claim", "--help").out


def test_show_from_the_outline_equals_the_full_projection(repo: Repo) -> None:
    """`show ID` reads one line through the cached outline; `--at` (the latest record) projects everything."""
    seed(repo)
    repo.ok("decision", "Blocked one", "--choice", "x", "--depends-on", "c1", "--pin", "--scope", "src/")
    repo.ok("claim", "Retires c1", "--supersedes", "c1", "--state", "accepted")
    ids = [r["id"] for r in repo.records()]
    for rid in ids:
        for extra in ([], ["--json"]):
            fast = repo.ok("show", rid, *extra).out
            assert fast == repo.ok("show", rid, "--at", ids[-1], *extra).out, rid
    digest = repo.ok("context").out.split("latest: ", 1)[1].split()[0].split("@")[1]
    assert repo.ok("show", f"{ids[-1]}@{digest}").out == repo.ok("show", ids[-1]).out


def test_show_of_a_held_record_never_imports_typer(repo: Repo) -> None:
    seed(repo)
    proc, imported = repo.imports("show", "d3", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["id"] == "d3"
    assert "docket_git.cli.show" in imported
    assert not {"typer", "pydantic", "pygit2"} & imported
    assert repo.ok("show", "-h").out.startswith("Usage: docket show")  # help is Typer's


@pytest.mark.parametrize("args", [["check"], ["check", "--staged"], ["check", "--staged", "--against", "HEAD"]])
def test_check_and_the_commit_guard_never_import_typer(repo: Repo, args: list[str]) -> None:
    """git runs ``docket check --staged`` on every commit: a plain check answers without Typer, click or rich."""
    seed(repo)
    repo.git("add", "-A")
    repo.git("commit", "-qm", "seed")
    repo.ok("claim", "One more premise")
    repo.git("add", "-A")
    proc, imported = repo.imports(*args)
    assert proc.returncode == 0, proc.stderr
    assert "docket_git.cli.check" in imported
    assert not {"typer", "click", "rich"} & imported
    assert repo.ok("check", "-h").out.startswith("Usage: docket check")  # help is Typer's


def test_check_reports_faults_with_exit_1_and_usage_errors_with_exit_2(repo: Repo) -> None:
    seed(repo)
    bad = len(repo.ledger.read_bytes().splitlines()) + 1
    with repo.ledger.open("a") as f:
        f.write('{"schema":2,"kind":"claim"\n')
    result = repo.docket("check")
    assert result.code == 1
    assert "has 1 fault(s)" in result.out and f"line {bad}: invalid JSON" in result.out, result.out
    misuse = repo.docket("check", "--against", "HEAD")
    assert misuse.code == 2 and misuse.err.strip() == "docket: --against only applies with --staged"


def test_the_commit_guard_blocks_a_staged_fault_with_the_fix(repo: Repo) -> None:
    seed(repo)
    repo.git("add", "-A")
    repo.git("commit", "-qm", "seed")
    with repo.ledger.open("a") as f:
        f.write('{"schema":2,"kind":"claim"\n')
    repo.git("add", "-A")
    result = repo.docket("check", "--staged")
    assert result.code == 1
    assert "(staged) has 1 fault(s)" in result.out, result.out
    assert "docket: commit blocked; fix or remove the faulty line(s)" in result.err, result.err
    assert "internal error" not in result.err
