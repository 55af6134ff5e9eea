"""Derived views: retirement, resolution, applicability and blocked chains."""

from __future__ import annotations

from docket_git.ledger.project import at, project

from .conftest import rec


def by_id(records: list[dict]) -> dict[str, dict]:
    return {r["id"]: r for r in project(records)}


def test_answered_question_is_resolved_until_the_answer_is_retired() -> None:
    records = [rec("q1"), rec("c2", state="accepted", answers=["q1"])]
    view = by_id(records)["q1"]
    assert (view["state"], view["recorded_state"], view["resolved_by"]) == ("resolved", "open", ["c2"])
    records.append(rec("c3", supersedes=["c2"]))
    views = by_id(records)
    assert views["q1"]["state"] == "open"
    assert views["q1"]["resolved_by"] == []
    assert views["c2"]["retired_by"] == "c3"


def test_unaccepted_claims_do_not_resolve() -> None:
    views = by_id([rec("q1"), rec("c2", answers=["q1"]), rec("c3", state="disputed", answers=["q1"])])
    assert views["q1"]["state"] == "open"


def test_blocked_decision_keeps_adopted_and_does_not_resolve() -> None:
    views = by_id([rec("c1"), rec("q2"), rec("d3", depends_on=["c1"], answers=["q2"])])
    assert views["d3"]["applicable"] is False
    assert views["d3"]["blocked_by"] == ["c1"]
    assert views["d3"]["state"] == "adopted"
    assert views["q2"]["state"] == "open"


def test_chains_flatten_in_order() -> None:
    views = by_id([rec("c1"), rec("d2", depends_on=["c1"]), rec("d3", depends_on=["d2"])])
    assert views["d3"]["blocked_by"] == ["d2", "c1"]


def test_blockers_are_deduplicated() -> None:
    records = [rec("c1"), rec("d2", depends_on=["c1"]), rec("d3", depends_on=["c1", "d2"])]
    assert by_id(records)["d3"]["blocked_by"] == ["c1", "d2"]


def test_applicable_when_every_prerequisite_is_available() -> None:
    records = [rec("c1", state="accepted"), rec("d2", depends_on=["c1"]), rec("d3", depends_on=["d2", "c1"])]
    views = by_id(records)
    assert views["d3"]["applicable"] is True
    assert views["d3"]["blocked_by"] == []


def test_revoked_or_retired_decisions_block_themselves_and_dependents() -> None:
    records = [rec("d1", state="revoked"), rec("d2", depends_on=["d1"]), rec("d3"), rec("d4", supersedes=["d3"])]
    views = by_id(records)
    assert views["d1"]["blocked_by"] == ["d1"]
    assert views["d2"]["blocked_by"] == ["d1"]
    assert views["d3"]["applicable"] is False
    assert views["d3"]["blocked_by"] == ["d3"]


def test_retired_claim_blocks_even_when_accepted() -> None:
    records = [rec("c1", state="accepted"), rec("d2", depends_on=["c1"]), rec("c3", supersedes=["c1"])]
    assert by_id(records)["d2"]["blocked_by"] == ["c1"]


def test_retiring_the_replacement_does_not_revive_the_original() -> None:
    records = [rec("c1"), rec("c2", supersedes=["c1"]), rec("c3", supersedes=["c2"])]
    views = by_id(records)
    assert views["c1"]["retired_by"] == "c2"
    assert views["c2"]["retired_by"] == "c3"


def test_projection_does_not_mutate_input() -> None:
    records = [rec("q1"), rec("c2", state="accepted", answers=["q1"])]
    project(records)
    assert "resolved_by" not in records[0]


def test_at_projects_a_prefix() -> None:
    records = [rec("c1"), rec("c2", supersedes=["c1"])]
    prefix = at(records, "c1")
    assert prefix is not None
    assert project(prefix)[0]["retired_by"] == ""
    assert at(records, "c9") is None


def test_long_chains_need_no_recursion() -> None:
    records = [rec("c1")] + [rec(f"d{i}", depends_on=[f"{'c' if i == 2 else 'd'}{i - 1}"]) for i in range(2, 5002)]
    views = project(records)
    assert views[-1]["blocked_by"][0] == "d5000"
    assert views[-1]["blocked_by"][-1] == "c1"
