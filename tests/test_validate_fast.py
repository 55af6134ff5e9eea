"""Bulk validation accepts exactly what the rules, applied one by one in order, accept, with the same records and report.

``store.validated`` reads a ledger a slice at a time and runs ``parse_line``,
``check_line`` (``validate.RULES`` in order) and ``Index.check`` on each line,
skipping the lone-surrogate walk for a line with no ``\\ud`` escape. Here valid
ledgers are mutated line by line (duplicate keys, key order, wrong types,
control characters, bad IDs, superseded IDs, truncation, stray bytes...) and
every outcome is compared with a reference that reads line by line, one
``json.loads`` and rule after another.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docket_git.errors import LedgerError
from docket_git.ledger import canonical, index, model, store, validate
from tests.hypothesis_helpers import profile

from .conftest import rec
from .test_context_properties import ledgers
from .test_outline import cache_home, ledger_in


def reference(data: bytes) -> tuple:
    """What the rules in order make of data: (records, ends, valid length, torn line, index) or the refusal."""
    known = validate.Index()
    records: list[dict] = []
    ends: list[int] = []
    valid_end = pos = number = 0
    torn = None
    while pos < len(data):
        nl = data.find(b"\n", pos)
        end = len(data) if nl < 0 else nl + 1
        raw = data[pos : end if nl < 0 else nl]
        pos = end
        number += 1
        if not raw.strip():
            valid_end = end
            continue
        try:
            record = validate.parse_line(raw)
        except ValueError as exc:
            if end == len(data) and not data.endswith(b"\n"):
                torn = number
                break
            return ("refused", f"line {number}: {exc}")
        try:
            validate.check_line(record)
            known.check(record)
        except validate.Invalid as exc:
            return ("refused", f"line {number}: {exc.where}: {exc.message}")
        known.add(record, number)
        records.append(record)
        ends.append(end)
        valid_end = end
    return (repr(records), ends, valid_end, torn, _fields(known))


def _fields(known: validate.Index) -> tuple:
    return (known.max_seq, dict(known.lines), set(known.retired), known.count)


def fast(data: bytes, size: int | None) -> tuple:
    """The same through ``store.validated`` (slices of ``size`` bytes)."""
    snap = store.Snapshot(path=Path("ledger.jsonl"), data=data)
    records: list[dict] = []
    ends: list[int] = []
    try:
        for found, found_ends in store.validated(snap, size=size):
            records.extend(found)
            ends.extend(found_ends)
    except LedgerError as exc:
        return ("refused", str(exc))
    return (repr(records), ends, snap.valid_length, snap.torn_line, _fields(snap.index))


#: Values a field may be set to: right and wrong types, empty and odd strings, IDs good and bad.
VALUES = st.sampled_from(
    [
        None,
        0,
        1,
        2,
        2.0,
        True,
        False,
        "",
        " ",
        "x",
        "c1",
        "q2",
        "d3",
        "c0",
        "c01",
        "C1",
        "x1",
        "c1 ",
        "c" + "9" * 19,
        "\u0001",
        "tab\tok",
        [],
        [""],
        ["c1"],
        ["c1", "c1"],
        ["q2"],
        [[]],
        [["c1"]],
        [["c1"], ["d3"]],
        [[""]],
        ["c1", 1],
        {},
        {"ref": "x"},
        [{"ref": "x"}],
        [{"ref": ""}],
        [{"ref": "x", "commit": 1}],
        [{"ref": "x", "other": "y"}],
        [{"ref": "x", "checked_at": "t", "commit": "abc"}],
        [["c1"]],
        {"source_id": "d1", "raw": {"id": "d1"}, "relation_map": {}},
    ]
)
FIELDS = st.sampled_from([*model.FIELD_ORDER, "unknown", "legacy"])
MUTATIONS = (
    "none",
    "set",
    "delete",
    "duplicate-key",
    "reorder",
    "raw-control",
    "escaped-control",
    "escaped-quote-colon",
    "key-space",
    "truncate",
    "crlf",
    "conflict",
    "blank",
    "leading-space",
    "not-utf8",
    "bom",
    "not-object",
    "repeat-line",
    "two-objects",
    "supersede",
    "cite",
    "deep",
    "no-final-newline",
    "non-ascii",
    "respace",
    "number",
    "long-text",
)
#: Escapes a line may hold in its text: lone
#: surrogates, which check_line refuses, and a surrogate pair, which is a character.
ESCAPES = st.sampled_from(
    [b'\\":', b"\\n", b'\\"', b"\\\\", b"\\/", b"\\u00e9", b"\\t", b"\\ud800", b"\\uDC00", b"\\ud83d\\ude00"]
)
#: Other spellings of a line's numbers and booleans.
NUMBERS = [
    (b'"schema":2', b'"schema":2.0'),
    (b'"schema":2', b'"schema":2e0'),
    (b'"schema":2', b'"schema":-2'),
    (b'"schema":2', b'"schema":02'),
    (b'"pinned":false', b'"pinned":0'),
    (b'"pinned":false', b'"pinned":null'),
    (b'"pinned":false', b'"pinned":"false"'),
    (b'"evidence":[]', b'"evidence":[{"commit":"x","ref":"y"}]'),
    (b'"evidence":[]', b'"evidence":[{"ref":"y","checked_at":"t","commit":"c"}]'),
    (b'"evidence":[]', b'"evidence":[{"ref":""}]'),
    (b'"evidence":[]', b'"evidence":{}'),
]


def into_text(line: bytes, insert: bytes) -> bytes:
    """The line with insert at the start of its text's value (written compactly or not)."""
    return re.sub(rb'"text": ?"', lambda m: m.group(0) + insert, line, count=1)


#: Mutations that edit the decoded record (the others edit bytes).
STRUCTURAL = frozenset({"set", "delete", "reorder", "supersede", "cite", "deep", "non-ascii"})


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A valid ledger's lines with a few of them mutated."""
    records = draw(ledgers())
    if draw(st.booleans()):  # as docket writes them: compact, fields in write order (the canonical path's lines)

        def dumps(record: object) -> str:
            return json.dumps(record, ensure_ascii=False, separators=(",", ":"))

        lines = [canonical.line(r)[:-1] for r in records]
    else:

        def dumps(record: object) -> str:
            return json.dumps(record)

        lines = [json.dumps(r, ensure_ascii=draw(st.booleans())).encode() for r in records]
    final_newline = True
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        how = draw(st.sampled_from(MUTATIONS))
        try:
            record = json.loads(lines[i])
        except ValueError:
            record = None
        if not isinstance(record, dict):
            if how in STRUCTURAL:
                continue  # an earlier mutation left no object to edit
            record = {}
        if how == "set":
            record[draw(FIELDS)] = draw(VALUES)
            lines[i] = dumps(record).encode()
        elif how == "delete":
            record.pop(draw(FIELDS), None)
            lines[i] = dumps(record).encode()
        elif how == "duplicate-key":
            name = draw(FIELDS)
            lines[i] = b"{" + dumps({name: draw(VALUES)})[1:-1].encode() + b"," + lines[i][1:]
        elif how == "reorder":
            lines[i] = dumps(dict(reversed(list(record.items())))).encode()
        elif how == "raw-control":
            lines[i] = into_text(lines[i], b"\x01")
        elif how == "escaped-control":
            lines[i] = into_text(lines[i], b"\\u0000")
        elif how == "escaped-quote-colon":
            lines[i] = into_text(lines[i], draw(ESCAPES))
        elif how == "key-space":
            lines[i] = lines[i].replace(b'":', b'" :', draw(st.integers(1, 3)))
        elif how == "truncate":
            lines[i] = lines[i][: draw(st.integers(0, max(0, len(lines[i]) - 1)))]
        elif how == "crlf":
            lines[i] += b"\r"
        elif how == "conflict":
            lines.insert(i, draw(st.sampled_from([b"<<<<<<< HEAD", b"=======", b">>>>>>> theirs", b"||||||| base"])))
        elif how == "blank":
            lines.insert(i, draw(st.sampled_from([b"", b"  ", b"\t", b"\x0c"])))
        elif how == "leading-space":
            lines[i] = b" " + lines[i] + draw(st.sampled_from([b"", b" "]))
        elif how == "not-utf8":
            lines[i] = into_text(lines[i], b"\xff\xfe")
        elif how == "bom":
            lines[i] = b"\xef\xbb\xbf" + lines[i]
        elif how == "not-object":
            lines[i] = draw(st.sampled_from([b"[]", b"1", b'"x"', b"null", b"{}", b"[" + lines[i] + b"]"]))
        elif how == "repeat-line":
            lines.insert(i, lines[i])
        elif how == "two-objects":
            lines[i] = lines[i] + b", " + lines[i]
        elif how == "supersede":
            earlier = [r["id"] for r in records[:i]] or ["c1"]
            record["supersedes"] = draw(st.lists(st.sampled_from(earlier), min_size=1, max_size=2))
            lines[i] = dumps(record).encode()
        elif how == "cite":
            ids = [r["id"] for r in records] + ["c999", record["id"]]
            name = draw(st.sampled_from(["supports", "depends_on", "answers"]))
            targets = draw(st.lists(st.sampled_from(ids), min_size=1, max_size=2))
            record[name] = [targets] if name == "supports" else targets
            lines[i] = dumps(record).encode()
        elif how == "deep":
            depth = draw(st.integers(1, 40))
            record["legacy"] = {
                "source_id": "d1",
                "raw": {"id": "d1", "x": json.loads("[" * depth + "]" * depth)},
                "relation_map": {
                    **{k: [] for k in validate.LEGACY_SOURCE_KEYS},
                    **{f"mapped_{r}": record.get(r, []) for r in model.RELATIONS},
                    "overrides": {},
                },
            }
            lines[i] = dumps(record).encode()
        elif how == "no-final-newline":
            final_newline = False
        elif how == "long-text":  # either side of the text limit, in 1- and 3-byte characters
            char = draw(st.sampled_from(["a", "長"]))
            size = validate.MAX_TEXT_BYTES // len(char.encode()) + draw(st.integers(-1, 1))
            record["text"] = char * size
            lines[i] = json.dumps(record, ensure_ascii=draw(st.booleans())).encode()
        elif how == "non-ascii":
            record["text"] = "Ünïcode 長い " + str(record.get("text"))
            lines[i] = json.dumps(record, ensure_ascii=False).encode()
        elif how == "respace":  # whitespace JSON allows where docket writes none
            at = draw(st.sampled_from([b",", b":", b"[", b"]", b"{", b"}"]))
            lines[i] = lines[i].replace(at, at + draw(st.sampled_from([b" ", b"\t", b"\n"])), 1)
        elif how == "number":  # 2 spelled otherwise, a boolean spelled as a number
            lines[i] = lines[i].replace(*draw(st.sampled_from(NUMBERS)), 1)
    data = b"\n".join(lines)
    return data + b"\n" if final_newline else data


@profile(40, 500)
@given(data=mutated(), size=st.sampled_from([None, 1, 200, 2000]))
def test_bulk_validation_accepts_exactly_what_the_rules_in_order_accept(data: bytes, size: int | None) -> None:
    expected = reference(data)
    assert fast(data, size) == expected


@profile(10, 80)
@given(data=mutated())
def test_a_cold_build_refuses_and_accepts_as_the_rules_in_order_do(data: bytes) -> None:
    expected = reference(data)
    with cache_home() as tmp:
        path = ledger_in(tmp, data)
        try:
            ix = index.open_index(path)
        except LedgerError as exc:
            assert expected == ("refused", str(exc))
            return
        try:
            assert expected[0] != "refused"
            assert ix.how == "rebuilt"
            assert ix.count() == expected[4][3]
            rows = ix.conn.execute("SELECT line_offset + line_length + 1 FROM records ORDER BY seq").fetchall()
            assert [min(end, len(data)) for (end,) in rows] == expected[1]
        finally:
            ix.close()


@pytest.mark.parametrize(
    "write", [canonical.line, lambda r: json.dumps(r).encode() + b"\n"], ids=["canonical", "spaced"]
)
def test_superseding_a_record_already_retired_is_refused_by_every_path(write) -> None:
    """c3 supersedes c1, which c2 already retired: the exact rule (``Index.check``) refuses line 3, and so must
    bulk validation (``store.validated``) and a cold index build."""
    records = [rec("c1"), rec("c2", supersedes=["c1"]), rec("c3", supersedes=["c1"])]
    data = b"".join(write(r) for r in records)
    expected = reference(data)
    assert expected[0] == "refused" and expected[1].startswith("line 3: ")
    for size in (None, 1):
        assert fast(data, size) == expected
    with cache_home() as tmp:
        with pytest.raises(LedgerError) as refused:
            index.open_index(ledger_in(tmp, data)).close()
        assert str(refused.value) == expected[1]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("pinned", True, "pinned must be boolean"),
        ("scope", ["src/a.py"], "scope must be a list of non-empty strings"),
        ("state", "accepted", "invalid claim state 'accepted'"),
    ],
)
def test_a_rule_changed_in_its_one_statement_changes_every_path(
    monkeypatch: pytest.MonkeyPatch, field: str, value: object, message: str
) -> None:
    """Mutate one ``validate.RULES`` entry to refuse a value it accepts: the rules read line by line, bulk
    validation and a cold build all refuse it, with the same message."""
    records = [rec("c1"), rec("c2", **{field: value})]
    data = b"".join(canonical.line(r) for r in records)
    assert reference(data)[0] != "refused"
    assert fast(data, None) == reference(data)

    def refuse(rule: validate.Rule) -> validate.Rule:
        if rule.field != field or "claim" not in rule.kinds:
            return rule
        test = rule.test
        return rule.replace(test=lambda v: v != value and test(v))

    mutated_rules = tuple(refuse(rule) for rule in validate.RULES)
    assert mutated_rules != validate.RULES
    monkeypatch.setattr(validate, "RULES", mutated_rules)
    monkeypatch.setattr(validate, "_BY_KIND", validate.by_kind(mutated_rules))
    expected = ("refused", f"line 2: c2: {message}")
    assert reference(data) == expected
    assert fast(data, None) == expected
    with cache_home() as tmp:
        with pytest.raises(LedgerError) as refused:
            index.open_index(ledger_in(tmp, data)).close()
        assert str(refused.value) == expected[1]
