"""The pure migration: derived map, conversion, edge fixes, map checks, schema_of, is_migration_of."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docket_git.ledger import canonical, store, validate
from docket_git.migrate import convert, mapping
from docket_git.migrate import schema1 as v1
from tests.hypothesis_helpers import profile
from tests.migrate_fixtures import every_shape, jsonl, s1


def converted(records: list[dict]) -> convert.Migration:
    return convert.migrate_bytes(jsonl(records))


def by_id(migration: convert.Migration) -> dict[str, dict]:
    return {r["id"]: r for r in migration.records}


def messages(exc_info: pytest.ExceptionInfo) -> list[str]:
    return exc_info.value.messages


# -- classification and fields ---------------------------------------------------------


def test_every_state_maps_to_its_kind_and_keeps_its_number():
    result = converted(every_shape())
    assert result.report == [
        "d1 -> q1 question/open",
        "d2 -> d2 decision/adopted",
        "d3 -> d3 decision/adopted",
        "d4 -> d4 decision/adopted",
        "d5 -> d5 decision/adopted",
        "d6 -> q6 question/open",
        "d7 -> d7 decision/adopted",
        "d8 -> d8 decision/adopted",
    ]
    records = by_id(result)
    # ruled-out is a live constraint: adopted, never revoked
    assert records["d3"]["state"] == "adopted"
    assert result.counts() == {"claim": 0, "decision": 6, "question": 2}


def test_fields_come_from_question_answer_and_provenance():
    records = by_id(converted(every_shape()))
    d2 = records["d2"]
    assert d2["text"] == "Keep retry keys in Redis"
    assert d2["choice"] == "Redis"
    assert d2["rationale"] == "Redis"
    assert d2["alternatives"] == []
    assert d2["cost_if_wrong"] == "lost retries"
    assert (d2["ts"], d2["author"], d2["session"], d2["branch"]) == ("2025-03-03T10:00:00Z", "alice", "sess-1", "main")
    q6 = records["q6"]
    assert "choice" not in q6 and "alternatives" not in q6
    assert q6["rationale"] == "maybe"  # an open question's answer text survives as its rationale


def test_output_is_a_valid_schema_2_ledger_in_canonical_form(tmp_path: Path):
    result = converted(every_shape())
    snap = store.parse(tmp_path / "ledger.jsonl", result.data)
    assert [r["id"] for r in snap.records] == ["q1", "d2", "d3", "d4", "d5", "q6", "d7", "d8"]
    assert result.data == b"".join(canonical.line(r) for r in snap.records)


def test_relations_map_to_new_ids():
    records = by_id(converted(every_shape()))
    assert records["d3"]["supports"] == [["d2"]]
    assert records["d7"]["depends_on"] == ["d5"]
    assert records["d7"]["answers"] == ["q6"]  # old answers edge to a record that became a question
    assert records["d8"]["supersedes"] == ["d4"]
    assert records["q6"]["supports"] == [["d5"]]


# -- because forms ----------------------------------------------------------------------


def test_flat_because_is_one_and_set():
    records = by_id(converted(every_shape()))
    assert records["d4"]["supports"] == [["d2", "d3"]]


def test_nested_because_is_or_sets():
    ledger = [
        s1("d1", "settled", "A", "a"),
        s1("d2", "settled", "B", "b"),
        s1("d3", "settled", "C", "c", because=[["d1"], ["d2"], ["d1", "d2"]]),
    ]
    assert by_id(converted(ledger))["d3"]["supports"] == [["d1"], ["d2"], ["d1", "d2"]]


def test_empty_because_forms_give_no_supports():
    ledger = [s1("d1", "settled", "A", "a", because=[]), s1("d2", "settled", "B", "b", because=[[]])]
    records = by_id(converted(ledger))
    assert records["d1"]["supports"] == [] and records["d2"]["supports"] == []


def test_malformed_because_is_refused():
    ledger = [s1("d1", "settled", "A", "a"), s1("d2", "settled", "B", "b", because=["d1", ["d1"]])]
    with pytest.raises(v1.MigrationError) as exc:
        converted(ledger)
    assert messages(exc) == ["d2: because must be a list of ids (one AND set) or a list of id lists (OR sets)"]


# -- edge fixes -----------------------------------------------------------------------------


def test_supersedes_onto_a_question_becomes_an_answers_edge_with_a_warning():
    result = converted(every_shape())
    d4 = by_id(result)["d4"]
    assert d4["supersedes"] == [] and d4["answers"] == ["q1"]
    assert "d4 supersedes d1, a question; recorded as an answers edge" in result.warnings
    assert d4["legacy"]["relation_map"]["source_supersedes"] == ["d1"]


def test_because_onto_a_question_is_dropped_with_a_warning_and_kept_in_legacy():
    result = converted(every_shape())
    d5 = by_id(result)["d5"]
    assert d5["supports"] == [["d2"], ["d3"]]  # (d2) OR (d1 AND d3) without the question d1
    assert d5["legacy"]["relation_map"]["source_because"] == [["d2"], ["d1", "d3"]]
    assert (
        "d5 is justified by d1, a question; support edge dropped and kept in legacy.relation_map.source_because"
        in result.warnings
    )
    d8 = by_id(result)["d8"]
    assert d8["supports"] == []  # its only ground was a question


def test_dropping_a_question_never_leaves_a_duplicate_or_set():
    ledger = [
        s1("d1", "open", "Q?"),
        s1("d2", "settled", "B", "b"),
        s1("d3", "settled", "C", "c", because=[["d2"], ["d1", "d2"]]),
    ]
    assert by_id(converted(ledger))["d3"]["supports"] == [["d2"]]


def test_warnings_are_exactly_the_edge_fixes():
    assert converted(every_shape()).warnings == [
        "d4 supersedes d1, a question; recorded as an answers edge",
        "d5 is justified by d1, a question; support edge dropped and kept in legacy.relation_map.source_because",
        "d8 is justified by d1, a question; support edge dropped and kept in legacy.relation_map.source_because",
    ]


def test_legacy_audit_field_holds_source_and_mapping():
    ledger = every_shape()
    d4 = by_id(converted(ledger))["d4"]
    assert list(d4)[-1] == "legacy"
    assert d4["legacy"] == {
        "source_id": "d4",
        "raw": ledger[3],
        "relation_map": {
            "source_because": ["d2", "d3"],
            "source_depends_on": [],
            "source_answers": [],
            "source_supersedes": ["d1"],
            "mapped_supports": [["d2", "d3"]],
            "mapped_depends_on": [],
            "mapped_answers": ["q1"],
            "mapped_supersedes": [],
            "overrides": {},
        },
    }


# -- hard errors ------------------------------------------------------------------------------


def test_unknown_state_stops_with_a_placeholder():
    ledger = [s1("d1", "parked", "Maybe later", "x"), s1("d2", "settled", "B", "b"), s1("d3", "parked", "C", "c")]
    with pytest.raises(v1.MigrationError) as exc:
        converted(ledger)
    assert messages(exc) == ["unrecognised schema-1 state(s) parked: d1, d3"]
    assert exc.value.hint and exc.value.exit_code == 2
    entries, _ = mapping.derive_map(v1.sources(v1.parse(jsonl(ledger))[1]))
    assert entries["d1"] == {
        "kind": None,
        "state": None,
        "text": "Maybe later",
        "overrides": {},
        "source_state": "parked",
        "source_answer": "x",
    }
    assert mapping.placeholders(entries) == ["d1", "d3"]


@pytest.mark.parametrize("state", ["settled", "ruled-out"])
def test_empty_answer_stops(state: str):
    ledger = [s1("d1", state, "Pick a queue", ""), s1("d2", state, "Pick a cache", "   ")]
    with pytest.raises(v1.MigrationError) as exc:
        converted(ledger)
    assert messages(exc) == [
        f"d1 is {state} with an empty answer, so no choice can be derived",
        f"d2 is {state} with an empty answer, so no choice can be derived",
    ]


def test_mixed_schemas_are_refused():
    data = jsonl([s1("d1", "settled", "A", "a")]) + b'{"schema":2,"kind":"claim","id":"c2"}\n'
    with pytest.raises(v1.MixedSchemas) as exc:
        v1.parse(data)
    assert messages(exc) == ["mixed schema versions in one ledger: 1, 2"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            b'{"id":"d1","state":"open","question":"Q"}\nnot json\n',
            "malformed input at line 2: invalid JSON: Expecting value",
        ),
        (b'["d1"]\n', "malformed input at line 1: each JSONL line must be an object"),
        (
            b'{"id":"d1","state":"open","question":"Q"}\n\n{"id":"d1","state":"open","question":"R"}\n',
            "malformed input at line 3: duplicate old id d1 (first on line 1)",
        ),
        (
            b'{"id":"q1","state":"open","question":"Q"}\n',
            'malformed input at line 1: invalid old id "q1"; schema-1 ids are dN',
        ),
        (b'{"id":"d1","question":"Q"}\n', "malformed input at line 1: d1 has no state string"),
        (b'{"id":"d1","state":"open","question":3}\n', "malformed input at line 1: d1 question must be a string"),
        (
            b'{"id":"d1","state":"open","question":"Q","because":"d0"}\n',
            "malformed input at line 1: d1 because must be a list",
        ),
        (
            b'{"id":"d1","state":"settled","question":"Q","answer":"a","depends_on":[["d0"]]}\n',
            "malformed input at line 1: d1 depends_on must be a list of ids",
        ),
        (
            b'{"id":"d1","state":"settled","question":"Q","answer":"a","supersedes":[7]}\n',
            "malformed input at line 1: d1 supersedes must be a list of ids",
        ),
    ],
)
def test_malformed_input_names_the_line(data: bytes, message: str):
    with pytest.raises(v1.MigrationError) as exc:
        convert.migrate_bytes(data)
    assert messages(exc)[0].startswith(message)


def test_a_lone_surrogate_is_named_not_a_crash():
    data = b'{"id":"d1","state":"settled","question":"Broken \\ud800 text","answer":"a"}\n'
    with pytest.raises(v1.MigrationError) as exc:
        convert.migrate_bytes(data)  # the converted record is validated: check_line names the field
    assert messages(exc)[0].startswith("d1 (as d1): text holds U+D800, half of a UTF-16 surrogate pair")
    assert exc.value.hint


def test_cross_kind_supersession_needs_an_override():
    ledger = [s1("d1", "settled", "Use tabs", "tabs"), s1("d2", "open", "Tabs or spaces?", supersedes=["d1"])]
    with pytest.raises(v1.MigrationError) as exc:
        converted(ledger)
    assert messages(exc) == ["cross-kind supersession d2->d1 requires an explicit supersedes override"]
    records = v1.sources(v1.parse(jsonl(ledger))[1])
    entries, _ = mapping.derive_map(records)
    entries["d2"]["overrides"] = {"supersedes": []}
    result = convert.convert(records, entries)
    q2 = by_id(result)["q2"]
    assert q2["supersedes"] == []
    assert q2["legacy"]["relation_map"]["overrides"] == {"supersedes": []}
    assert q2["legacy"]["relation_map"]["source_supersedes"] == ["d1"]


def test_a_reference_to_an_unknown_or_later_record_is_named_with_both_ids():
    ledger = [
        s1("d1", "settled", "A", "a", because=["d3"]),
        s1("d2", "settled", "B", "b", depends_on=["d9"]),
        s1("d3", "settled", "C", "c"),
        s1("d4", "open", "Q?", depends_on=["d3"]),
    ]
    with pytest.raises(v1.MigrationError) as exc:
        converted(ledger)
    assert messages(exc) == [
        "d1 (as d1): supports refers to unknown or later ID 'd3'",
        "d2 (as d2): depends_on refers to unknown or later ID 'd9'",
        "d4 (as q4): only decisions may have depends_on",
    ]


# -- the map ----------------------------------------------------------------------------------


def _records(ledger: list[dict]) -> list[dict]:
    return v1.sources(v1.parse(jsonl(ledger))[1])


def test_emitted_map_applied_unchanged_gives_identical_bytes():
    records = _records(every_shape())
    entries, problems = mapping.derive_map(records)
    assert problems == []
    round_tripped = json.loads(mapping.dump_map(entries))
    assert convert.convert(records, round_tripped).data == converted(every_shape()).data


def test_emitted_map_is_indented_and_sorted():
    entries, _ = mapping.derive_map(_records(every_shape()))
    text = mapping.dump_map(entries).decode()
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert set(json.loads(text)) == {f"d{n}" for n in range(1, 9)}


def test_map_can_reclassify_and_override():
    ledger = [s1("d1", "settled", "The API is idempotent", "yes"), s1("d2", "settled", "Retry on 503", "retry")]
    records = _records(ledger)
    entries, _ = mapping.derive_map(records)
    entries["d1"].update(kind="claim", state="accepted", rationale="measured in staging")
    entries["d2"].update(choice="retry with backoff", overrides={"supports": [["d1"]]})
    result = by_id(convert.convert(records, entries))
    assert result["c1"]["kind"] == "claim" and "choice" not in result["c1"]
    assert result["c1"]["rationale"] == "measured in staging"
    assert result["d2"]["supports"] == [["c1"]]
    assert result["d2"]["choice"] == "retry with backoff"
    assert result["d2"]["legacy"]["relation_map"]["overrides"] == {"supports": [["d1"]]}


def test_filled_placeholder_is_accepted():
    ledger = [s1("d1", "parked", "Maybe cache sessions", ""), s1("d2", "settled", "Pick a queue", "")]
    records = _records(ledger)
    entries, _ = mapping.derive_map(records)
    entries["d1"].update(kind="question", state="open")
    entries["d2"].update(kind="decision", state="adopted", choice="SQS")
    result = by_id(convert.convert(records, entries))
    assert result["q1"]["state"] == "open"
    assert result["d2"]["choice"] == "SQS"


def map_errors(ledger: list[dict], edit) -> list[str]:
    records = _records(ledger)
    entries, _ = mapping.derive_map(records)
    edit(entries)
    with pytest.raises(v1.MigrationError) as exc:
        convert.convert(records, entries)
    return messages(exc)


TWO = [s1("d1", "settled", "A", "a"), s1("d2", "open", "B?")]


def test_map_refuses_unfilled_placeholders_naming_them():
    ledger = [*TWO, s1("d3", "parked", "C", "c"), s1("d4", "settled", "D", "")]
    assert map_errors(ledger, lambda e: None) == [
        "mapping still has placeholder(s) with kind or state null: d3, d4; give each a kind and a state"
    ]


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda e: e.pop("d2"), "missing mapping for old id(s): d2"),
        (lambda e: e.update(d7={"kind": "claim"}, d10={}), "mapping contains unknown old id(s): d7, d10"),
        (lambda e: e["d1"].pop("text"), "mapping for d1 is missing text"),
        (lambda e: e["d1"].update(text=" "), "mapping for d1 is missing text"),
        (lambda e: e["d1"].update(kind="claim", state="x"), "mapping for d1 has invalid state 'x' for claim"),
        (
            lambda e: e["d1"].update(kind="question", state="open"),
            "mapping for d1 gives choice, which only a decision has",
        ),
        (
            lambda e: e["d1"].update(kind="idea"),
            'mapping for d1 has invalid kind "idea"; use claim, decision or question',
        ),
        (lambda e: e["d1"].update(colour="red"), "mapping for d1 has unknown field(s): colour"),
        (lambda e: e.update(d1=[]), "mapping for d1 must be an object"),
        (
            lambda e: e["d2"].update(overrides={"because": []}),
            "mapping for d2 overrides must be an object with supports, depends_on, answers or supersedes",
        ),
        (
            lambda e: e["d2"].update(overrides={"supports": ["d1"]}),
            "mapping for d2 overrides supports must be a list of non-empty old-id lists",
        ),
        (
            lambda e: e["d2"].update(overrides={"supports": [["d9"]]}),
            "mapping for d2 overrides supports with unknown old id(s): d9",
        ),
    ],
)
def test_map_errors(edit, expected: str):
    def apply(entries):
        entries["d1"]["choice"] = "a"
        edit(entries)

    assert expected in map_errors(TWO, apply)


def test_map_that_is_not_an_object_is_refused():
    with pytest.raises(v1.MigrationError) as exc:
        convert.convert(_records(TWO), [])
    assert messages(exc) == ["the map must be a JSON object keyed by old id"]


def test_decision_without_a_choice_in_the_map_is_refused():
    ledger = [s1("d1", "open", "Which queue?")]
    errors = map_errors(ledger, lambda e: e["d1"].update(kind="decision", state="adopted"))
    assert errors == ['mapping for d1 is a decision with no choice; add a "choice"']


# -- schema_of ------------------------------------------------------------------------------


def test_schema_of():
    schema1 = jsonl(every_shape())
    assert v1.schema_of(schema1) == 1
    assert v1.schema_of(converted(every_shape()).data) == 2
    assert v1.schema_of(b"") is None
    assert v1.schema_of(b"\n  \n") is None
    assert v1.schema_of(b'{"schema":1,"id":"d1"}\n') == 1
    assert v1.schema_of(b'{"schema":3,"id":"d1"}\n') == 3
    with pytest.raises(v1.MixedSchemas):
        v1.schema_of(schema1 + converted(every_shape()).data)
    with pytest.raises(v1.MigrationError):
        v1.schema_of(b"<<<<<<< ours\n")


@pytest.mark.parametrize(
    ("line", "schema"),
    [
        (b'{"schema":2,"kind":"claim","id":"c1"}', 2),
        (b'{ "schema": 2, "kind": "claim" }', 2),  # not canonical: parsed
        (b'{"id":"d1","state":"open","question":"Change the \\"schema\\" field?"}', 1),
        (b'{"id":"d1","question":"the schema, in prose"}', 1),
        (b'{"id":"d1","\\u0073chema":2}', 2),  # an escaped key is still the schema field
        (b'{"schema":2,"schema":1}', 1),  # duplicate keys: the last one wins, as for json.loads
        (b'{"id":"d1","schema":1}', 1),
        (b'{"id":"d1","text":"x","schema":3}', 3),
    ],
)
def test_schema_of_fast_paths_agree_with_a_full_parse(line: bytes, schema: int):
    assert v1.schema_of(line + b"\n") == schema
    assert v1.parse(line + b"\n")[0] == schema


def test_schema_of_reads_canonical_and_plain_schema_1_lines_without_json(monkeypatch: pytest.MonkeyPatch):
    """The merge driver and pre-commit call this on every run: no full parse of a 100k ledger."""
    schema2 = converted(every_shape()).data
    schema1 = jsonl([s1(f"d{n}", "settled", f"Decision {n}", "yes") for n in range(1, 50)])

    def refuse(*_args, **_kw):
        raise AssertionError("schema_of parsed a line it could read by its bytes")

    monkeypatch.setattr(v1.json, "loads", refuse)
    assert v1.schema_of(schema2) == 2
    assert v1.schema_of(schema1) == 1
    with pytest.raises(v1.MixedSchemas):
        v1.schema_of(schema1 + schema2)


# -- is_migration_of ----------------------------------------------------------------------------


def test_is_migration_of_accepts_the_derived_run():
    old = jsonl(every_shape())
    assert convert.is_migration_of(old, converted(every_shape()).data)


def test_is_migration_of_accepts_a_map_run():
    ledger = [*TWO, s1("d3", "settled", "Pick a queue", "")]
    records = _records(ledger)
    entries, _ = mapping.derive_map(records)
    entries["d3"].update(kind="decision", state="adopted", choice="SQS", rationale="managed")
    entries["d2"].update(overrides={"supports": [["d1"]]})
    new = convert.convert(records, entries).data
    assert convert.is_migration_of(jsonl(ledger), new)


def _tampered(data: bytes, change) -> bytes:
    lines = [json.loads(x) for x in data.splitlines()]
    change(lines)
    return b"".join(canonical.line(r) for r in lines)


@pytest.mark.parametrize(
    "change",
    [
        lambda rs: rs[1].update(ts="2030-01-01T00:00:00Z"),
        lambda rs: rs[1].update(author="mallory"),
        lambda rs: rs[1]["legacy"]["raw"].update(answer="Memcached"),
        lambda rs: rs.pop(),
        lambda rs: rs.append({**copy.deepcopy(rs[-1]), "id": "d9"}),
        lambda rs: rs[3].update(answers=[], supersedes=[]),
    ],
)
def test_is_migration_of_refuses_anything_else(change):
    old = jsonl(every_shape())
    new = converted(every_shape()).data
    assert not convert.is_migration_of(old, _tampered(new, change))


def test_is_migration_of_refuses_non_migrations():
    old = jsonl(every_shape())
    new = converted(every_shape()).data
    assert not convert.is_migration_of(new, new)  # schema 2 is not migrated again
    assert not convert.is_migration_of(old, old)
    assert not convert.is_migration_of(b"", b"")
    assert not convert.is_migration_of(old, new.replace(b"\n", b"\r\n"))
    assert not convert.is_migration_of(old, b"garbage\n")
    assert not convert.is_migration_of(jsonl([s1("d1", "settled", "A", "")]), b"")


def test_migration_does_not_depend_on_the_environment(monkeypatch: pytest.MonkeyPatch):
    first = converted(every_shape()).data
    monkeypatch.setenv("DOCKET_AUTHOR", "someone-else")
    monkeypatch.setenv("USER", "other")
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    assert converted(every_shape()).data == first


# -- the core validator's legacy rules -------------------------------------------------------


def _migrated_d4() -> dict:
    return copy.deepcopy(by_id(converted(every_shape()))["d4"])


def test_validator_accepts_what_migrate_writes():
    for record in converted(every_shape()).records:
        assert validate.check_line(record) == record["id"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda r: r["legacy"]["relation_map"].update(mapped_answers=[]),
            "legacy relation_map mapped_answers must equal answers",
        ),
        (
            lambda r: r["legacy"]["relation_map"].update(mapped_supports=[["d2"]]),
            "legacy relation_map mapped_supports must equal supports",
        ),
        (lambda r: r.update(supports=[["d3"]]), "legacy relation_map mapped_supports must equal supports"),
        (lambda r: r["legacy"]["relation_map"].pop("mapped_depends_on"), "legacy relation_map must hold exactly"),
        (lambda r: r["legacy"]["relation_map"].update(extra=1), "legacy relation_map must hold exactly"),
        (
            lambda r: r["legacy"]["relation_map"].update(source_because="d2"),
            "legacy relation_map source_because must be a list",
        ),
        (
            lambda r: r["legacy"]["relation_map"].update(overrides={"because": []}),
            "overrides must be an object keyed by relation",
        ),
        (lambda r: r["legacy"].update(source_id="x4"), "legacy source_id must be a schema-1 id"),
        (lambda r: r["legacy"]["raw"].update(id="d5"), "legacy raw must be the schema-1 record whose id is source_id"),
        (lambda r: r["legacy"].pop("raw"), "legacy must be an object with source_id, raw, and relation_map"),
    ],
)
def test_validator_refuses_legacy_that_disagrees(change, message: str):
    record = _migrated_d4()
    change(record)
    with pytest.raises(validate.Invalid) as exc:
        validate.check_line(record)
    assert message in exc.value.message


# -- properties over generated schema-1 ledgers ---------------------------------------------------

STATES = ("settled", "ruled-out", "open", "parked")


@st.composite
def schema1_ledgers(draw) -> list[dict]:
    n = draw(st.integers(min_value=1, max_value=12))
    clean = draw(st.integers(0, 3)) > 0  # mostly ledgers the derivation can classify
    states = STATES[:3] if clean else STATES
    answers = ["yes", "Redis"] if clean else ["", "yes", "Redis"]
    records: list[dict] = []
    for i in range(1, n + 1):
        earlier = [f"d{k}" for k in range(1, i)]
        because: list = []
        supersedes: list = []
        if earlier:
            cap = min(3, len(earlier))
            group = st.lists(st.sampled_from(earlier), min_size=1, max_size=cap, unique=True)
            because = draw(group) if draw(st.booleans()) else draw(st.lists(group, max_size=2))
            supersedes = draw(st.lists(st.sampled_from(earlier), max_size=1)) if draw(st.integers(0, 3)) == 0 else []
        record = s1(
            f"d{i}",
            draw(st.sampled_from(states)),
            draw(st.sampled_from(["Use Redis", "Which cache?", "Keep the API idempotent"])),
            draw(st.sampled_from(answers)),
            because=because,
            supersedes=supersedes,
        )
        records.append(record)
    return records


@profile(20, 120)
@given(schema1_ledgers())
def test_any_schema_1_ledger_migrates_to_a_valid_ledger_or_stops_with_named_reasons(ledger: list[dict]):
    data = jsonl(ledger)
    try:
        result = convert.migrate_bytes(data)
    except v1.MigrationError as exc:
        assert exc.messages and all(isinstance(m, str) and m for m in exc.messages)
        entries, _ = mapping.derive_map(v1.sources(v1.parse(data)[1]))
        assert set(entries) == {r["id"] for r in ledger}  # emit-map still works
        return
    snap = store.parse(Path("ledger.jsonl"), result.data)
    assert [r["legacy"]["source_id"] for r in snap.records] == [r["id"] for r in ledger]
    assert v1.schema_of(result.data) == 2
    assert convert.is_migration_of(data, result.data)
    assert convert.migrate_bytes(data).data == result.data  # deterministic
    entries, _ = mapping.derive_map(v1.sources(v1.parse(data)[1]))
    assert convert.convert(v1.sources(v1.parse(data)[1]), json.loads(mapping.dump_map(entries))).data == (result.data)


# -- what the merge driver needs --------------------------------------------------------------------


def test_migration_is_prefix_stable_so_a_migrated_branch_merges_with_one_migrated_later():
    """Each line converts on its own: migrating base + tail starts with the bytes of migrating base."""
    base = every_shape()
    tail = [
        s1("d9", "settled", "Locks use Redlock", "Redlock", because=["d5"], supersedes=["d6"]),
        s1("d10", "open", "Do we need fencing tokens?", because=["d9"]),
    ]
    migrated_base = converted(base).data
    migrated_all = converted(base + tail).data
    assert migrated_all.startswith(migrated_base)
    assert migrated_all.count(b"\n") == migrated_base.count(b"\n") + 2


def test_merge_schema_fault_names_the_side_to_migrate():
    one = jsonl(every_shape())
    two = converted(every_shape()).data
    assert convert.merge_schema_fault(two, two) is None
    assert convert.merge_schema_fault(b"", two) is None
    assert convert.merge_schema_fault(two, b"") is None
    assert convert.merge_schema_fault(two, one) == (
        "the other branch's ledger is schema 1 and this branch's is schema 2; "
        "run 'docket migrate' on the other branch first, commit it, then merge again"
    )
    assert convert.merge_schema_fault(one, two) == (
        "this branch's ledger is schema 1 and the other branch's is schema 2; "
        "abort this merge, run 'docket migrate' on this branch first, commit it, then merge again"
    )
    assert "both branches' ledgers are schema 1; run 'docket migrate' on each branch" in (
        convert.merge_schema_fault(one, one)
    )
    assert convert.merge_schema_fault(b"\n" + two, b"\n\n" + one).startswith("the other branch's ledger is schema 1")
    assert convert.merge_schema_fault(two, b"<<<<<<< ours\n" + two) == (
        "malformed input at line 1: invalid JSON: Expecting value; run 'docket check' on each branch and repair it first"
    )
