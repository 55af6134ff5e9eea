"""Every schema-2 validation rule, with Docket's messages, in Docket's order."""

from __future__ import annotations

import pytest

from docket_git.ledger.validate import Index, Invalid, check_all, check_line, check_new

from .conftest import rec


def line_error(record: object) -> str:
    with pytest.raises(Invalid) as info:
        check_line(record)
    return f"{info.value.where}: {info.value.message}"


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ([1, 2], "record: each JSONL line must be an object"),
        (
            {"id": "d1", "state": "settled", "question": "q"},
            "schema: legacy format is unsupported; run 'docket migrate'",
        ),
        (rec("c1", schema=1), "schema: legacy format is unsupported"),
        (rec("c1", colour="red", size=1), "record: unknown field(s): colour, size"),
        (rec("c1", schema=3), "schema: expected schema 2, got 3"),
        (rec("c1", schema="2"), 'schema: expected schema 2, got "2"'),
        (rec("c1", schema=True), "schema: expected schema 2, got true"),
        (rec("c1", kind="note"), "record: kind must be one of claim, decision, question"),
        (rec("c1", id="x1"), "record: id must match cN, dN, or qN with a positive sequence number"),
        (rec("c1", id="c01"), "record: id must match cN"),
        (rec("c1", id="d1"), "record: claim id 'd1' has the wrong prefix or sequence"),
        (rec("c1", id="c0"), "record: claim id 'c0' has the wrong prefix or sequence"),
        (rec("c1", text=""), "c1: text must be a non-empty string"),
        (rec("c1", text=5), "c1: text must be a non-empty string"),
        (rec("c1", state="adopted"), "c1: invalid claim state 'adopted'"),
        (rec("d1", state="accepted"), "d1: invalid decision state 'accepted'"),
        (rec("q1", state="resolved"), "q1: questions have recorded state open; resolution is derived from answers"),
        (rec("c1", ts=1), "c1: ts must be a string"),
        (rec("c1", author=None), "c1: author must be a string"),
        (rec("c1", rationale=[]), "c1: rationale must be a string"),
        (rec("c1", pinned="yes"), "c1: pinned must be boolean"),
        (rec("c1", pinned=1), "c1: pinned must be boolean"),
        (rec("c1", scope=["a", ""]), "c1: scope must be a list of non-empty strings"),
        (rec("c1", scope="src/"), "c1: scope must be a list of non-empty strings"),
        (rec("d1", depends_on="c1"), "d1: depends_on must be a list of non-empty ID strings"),
        (rec("c1", answers=[""]), "c1: answers must be a list of non-empty ID strings"),
        (rec("c1", supports=[[]]), "c1: supports must be a list of conjunctive ID lists"),
        (rec("c1", supports=["c2"]), "c1: supports must be a list of conjunctive ID lists"),
        (rec("c1", evidence=["x"]), "c1: evidence must be a list of objects"),
        (rec("c1", evidence=[{"ref": ""}]), "c1: each evidence object needs a non-empty ref"),
        (rec("c1", evidence=[{"ref": "a", "url": "b"}]), "c1: evidence only permits ref, checked_at, and commit"),
        (rec("c1", evidence=[{"ref": "a", "checked_at": 3}]), "c1: evidence checked_at must be a string"),
        (rec("d1", choice=""), "d1: decision choice must be a non-empty string"),
        (rec("d1", alternatives=[""]), "d1: decision alternatives must be a list of non-empty strings"),
        (rec("d1", decided_by=7), "d1: decision decided_by must be a string"),
        (rec("c1", choice="x"), "c1: choice and alternatives are decision-only fields"),
        (rec("q1", decided_by="me"), "q1: decided_by is a decision-only field"),
        (rec("q1", answers=["q0"]), "q1: questions cannot answer other questions"),
        (rec("c1", depends_on=["c0"]), "c1: only decisions may have depends_on"),
    ],
)
def test_line_rules(record: object, message: str) -> None:
    assert line_error(record).startswith(message)


def test_missing_required_field_is_named() -> None:
    record = rec("c1")
    del record["branch"]
    assert line_error(record) == "c1: branch must be a string"


def test_rules_apply_in_order() -> None:
    # Unknown fields are reported before a bad kind, a bad kind before a bad id.
    assert line_error(rec("c1", kind="note", extra=1)).startswith("record: unknown field(s): extra")
    assert line_error(rec("c1", kind="note", id="zz")).startswith("record: kind must be")


def test_valid_records_pass() -> None:
    assert check_line(rec("c1")) == "c1"
    assert check_line(rec("d7", alternatives=["a"], decided_by="lead")) == "d7"
    assert check_line(rec("q3", evidence=[{"ref": "doc", "checked_at": "2026", "commit": "abc"}])) == "q3"


def cross_error(*records: dict) -> str:
    index = Index()
    for number, record in enumerate(records, start=1):
        check_line(record)
        try:
            index.check(record)
        except Invalid as exc:
            return f"{exc.where}: {exc.message}"
        index.add(record, number)
    raise AssertionError("no error")


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([rec("c2"), rec("c2")], "c2: duplicate ID"),
        ([rec("c5"), rec("d3")], "d3: global sequence must increase monotonically; gaps are allowed"),
        ([rec("c1", supersedes=["c1"])], "c1: supersedes cannot refer to itself"),
        ([rec("d1", depends_on=["c2"]), rec("c2")], "d1: depends_on refers to unknown or later ID 'c2'"),
        ([rec("c1", supports=[["c9"]])], "c1: supports refers to unknown or later ID 'c9'"),
        ([rec("q1"), rec("c2", supports=[["q1"]])], "c2: supports target 'q1' is not a claim or decision"),
        ([rec("q1"), rec("d2", depends_on=["q1"])], "d2: depends_on target 'q1' is not a claim or decision"),
        ([rec("c1"), rec("c2", answers=["c1"])], "c2: answers target 'c1' is not a question"),
        ([rec("d1"), rec("c2", supersedes=["d1"])], "c2: supersedes target 'd1' is a different kind"),
        (
            [rec("c1"), rec("c2", supersedes=["c1"]), rec("c3", supersedes=["c1"])],
            "c3: supersedes target 'c1' is already retired",
        ),
    ],
)
def test_cross_record_rules(records: list[dict], message: str) -> None:
    assert cross_error(*records) == message


def test_gaps_are_allowed() -> None:
    index = Index()
    for number, record in enumerate([rec("c1"), rec("q5"), rec("d9", depends_on=["c1"])], start=1):
        index.check(record)
        index.add(record, number)
    assert index.max_seq == 9
    assert index.next_id("claim") == "c10"


def test_check_all_reports_every_fault_with_line_numbers() -> None:
    import json

    lines = [
        (1, json.dumps(rec("c2")).encode()),
        (2, b"{not json"),
        (3, json.dumps(rec("c2")).encode()),
        (4, json.dumps(rec("c1")).encode()),
        (5, json.dumps(rec("c6", colour=1)).encode()),
        (6, json.dumps(rec("c7", supports=[["c1"]])).encode()),
    ]
    faults, count = check_all(lines)
    assert [str(f) for f in faults] == [
        "line 2: invalid JSON: Expecting property name enclosed in double quotes (column 2)",
        "line 3: duplicate id c2, first seen on line 1",
        "line 4: id c1 does not increase past c2",
        "line 5: record: unknown field(s): colour",
    ]
    assert count == 3  # c2, c1 (out of order but citeable) and c7


@pytest.mark.parametrize(
    ("record", "fragment"),
    [
        (rec("c1", text="Is the cache safe?"), "a claim must state the commitment, not ask it"),
        (rec("d1", text="Use Postgres?", choice="Postgres"), "docket question' and link it with --answers"),
        (rec("d1", text="Postgres", choice="postgres "), "decision text must carry more than the choice"),
        (
            rec("d1", text="Store sessions", choice="Redis", alternatives=["redis"]),
            "alternatives must name an option the choice beat",
        ),
        (
            rec("d1", text="Store sessions", choice="Redis", rationale=" REDIS"),
            "decision rationale must say why the choice won",
        ),
    ],
)
def test_write_time_refusals(record: dict, fragment: str) -> None:
    with pytest.raises(Invalid) as info:
        check_new(record)
    assert fragment in info.value.message


def test_questions_may_end_with_question_marks() -> None:
    check_new(rec("q1", text="Which store?"))


def test_a_field_given_twice_is_refused_when_another_key_is_spaced_before_its_colon() -> None:
    """Counting '":' alone missed it: the spaced key's end went uncounted and the repeated one made up for it."""
    from docket_git.ledger.validate import parse_line

    line = (
        b'{"schema":2,"schema":2,"kind":"claim","id":"c1","text":"t","state":"unassessed",'
        b'"ts":"","author":"","session":"","branch":"","scope" :[]}'
    )
    with pytest.raises(ValueError, match="field 'schema' appears twice"):
        parse_line(line)
    assert parse_line(line.replace(b'"schema":2,"schema":2', b'"schema":2'))["scope"] == []
    assert parse_line(b'{"a" :1, "b": "x\\" :y"}') == {"a": 1, "b": 'x" :y'}
