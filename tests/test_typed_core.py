"""Typed ledgers' pure core: canonical JSON, record hashing and order, replay determinism, union merge."""

from __future__ import annotations

import json
import random
import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docket_git.typed import api, canonical, envelope, merge, replay
from docket_git.typed.declare import Ledger
from tests.hypothesis_helpers import profile

COUNTER = Ledger("metrics", "counter")
LOG = Ledger("history", "log")
MAP = Ledger("repositories", "map")
NOTES = Ledger("knowledge", "notes")


def chain(ops: list[dict], parents: list[str] | None = None, start: int = 0, txn: str = "t") -> list[envelope.Record]:
    """Records for ops, each on the previous one (the first on parents)."""
    out = []
    heads = list(parents or [])
    for i, op in enumerate(ops):
        rtype = op.get("operation", "record")
        record, _ = envelope.seal(envelope.record_id(txn, start + i), rtype, "2026-01-01T00:00:00.000Z", heads, op)
        out.append(record)
        heads = [record.sha]
    return out


def data_of(records: list[envelope.Record]) -> bytes:
    return b"".join(r.raw for r in records)


def dump(ledger: Ledger, data: bytes) -> list:
    return api._dump_bytes(ledger, data)[0]


def test_canonical_form_rfc8785_numbers_and_sorted_keys():
    assert canonical.dumps({"b": 1, "a": [1.0, 1.5, 1e21, 1e-7, 0.000001, -0.0]}) == (
        '{"a":[1,1.5,1e+21,1e-7,0.000001,0],"b":1}'
    )
    assert canonical.dumps({"é": "\n\u2028", "Z": None, "a": True}) == '{"Z":null,"a":true,"é":"\\n\u2028"}'
    for bad, why in (
        (float("nan"), "NaN"),
        (float("inf"), "NaN"),
        (2**53, "safe range"),
        ("\ud800", "surrogate"),
        ({1: 2}, "keys must be strings"),
        ((1, 2), "not a JSON value"),
    ):
        with pytest.raises(canonical.NotCanonical, match=why):
            canonical.dumps(bad)
    deep: object = 1
    for _ in range(33):
        deep = [deep]
    with pytest.raises(canonical.NotCanonical, match="deeper than 32"):
        canonical.dumps(deep)


@given(st.recursive(st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.floats(allow_nan=False,
       allow_infinity=False) | st.text(), lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(), c, max_size=4),
       max_leaves=12))  # fmt: skip
@profile(40, 400, checks=())
def test_canonical_text_round_trips(value):
    try:
        text = canonical.dumps(value)
    except canonical.NotCanonical:
        return  # e.g. a float that is an integer beyond the safe range
    assert canonical.dumps(json.loads(text)) == text


def test_record_id_is_deterministic_uuid4_shaped():
    rid = envelope.record_id("session:1", 0)
    assert rid == envelope.record_id("session:1", 0) != envelope.record_id("session:1", 1)
    assert envelope.ID.match(rid)


def test_a_parsed_record_checks_hash_and_canonical_form():
    (record,) = chain([{"operation": "append", "value": "x"}])
    line = record.raw.rstrip(b"\n")
    assert isinstance(envelope.parse_line(line, 1), envelope.Record)
    tampered = line.replace(b'"x"', b'"y"')
    assert envelope.parse_line(tampered, 1).code == "invalid-sha"
    spaced = line.replace(b'"value":', b'"value": ')
    assert envelope.parse_line(spaced, 1).code == "not-canonical"
    assert envelope.parse_line(b"{nope", 1).code == "invalid-json"
    body = json.loads(line)
    body["version"] = 2
    assert envelope.parse_line(json.dumps(body).encode(), 1).code == "unsupported-version"


def test_layered_order_is_depth_then_sha_not_a_min_heap():
    roots = chain([{"operation": "append", "value": 1}], txn="a") + chain(
        [{"operation": "append", "value": 2}], txn="z"
    )
    first, second = sorted(roots, key=lambda r: r.sha)
    (child,) = chain([{"operation": "append", "value": 3}], parents=[first.sha], txn="c")
    ordered, diags, heads = envelope.order([child, second, first])
    assert [r.sha for r in ordered] == [first.sha, second.sha, child.sha]
    assert diags == [] and heads == sorted([second.sha, child.sha])


def shuffled_lines(data: bytes, seed: int) -> bytes:
    lines = data.splitlines(keepends=True)
    random.Random(seed).shuffle(lines)
    return b"".join(lines)


def branchy(ledger_ops: list[dict]) -> bytes:
    """A shared stem, two concurrent branches, and a record that merges both heads."""
    stem = chain(ledger_ops[:2], txn="stem")
    left = chain(ledger_ops[2:5], parents=[stem[-1].sha], txn="left")
    right = chain(ledger_ops[5:8], parents=[stem[-1].sha], txn="right")
    merged = chain(ledger_ops[8:], parents=sorted([left[-1].sha, right[-1].sha]), txn="merge")
    return data_of(stem + left + right + merged)


@pytest.mark.parametrize("seed", range(5))
def test_replay_is_independent_of_file_order(seed: int):
    ops = [{"operation": "put", "key": f"k{i % 3}", "value": {"v": i}} for i in range(10)]
    data = branchy(ops)
    assert dump(MAP, shuffled_lines(data, seed)) == dump(MAP, data)
    counter = [{"operation": "increment", "name": f"n{i % 2}", "amount": i} for i in range(10)]
    cdata = branchy(counter)
    assert dump(COUNTER, shuffled_lines(cdata, seed)) == dump(COUNTER, cdata)


def test_an_invalid_record_is_skipped_and_reported_not_poisoning():
    ops = [
        {"operation": "increment", "name": "a", "amount": 1},
        {"operation": "increment", "name": "a", "amount": "2"},  # a string amount: invalid
        {"operation": "launch", "name": "a"},  # not a counter operation
        {"operation": "increment", "name": "a", "amount": 4},
    ]
    data = data_of(chain(ops)) + b"garbage line\n"
    conn = sqlite3.connect(":memory:")
    replay.build(COUNTER)(conn, data)
    assert conn.execute("SELECT name, value FROM state").fetchall() == [("a", 5)]
    diags = conn.execute("SELECT code, line, detail FROM diagnostics ORDER BY line").fetchall()
    assert [(c, line) for c, line, _ in diags] == [
        ("invalid-operation", 2),
        ("invalid-operation", 3),
        ("invalid-json", 5),
    ]
    assert "amount must be" in diags[0][2] and "skipped" in diags[0][2]
    assert conn.execute("SELECT count(*) FROM records").fetchone() == (4,)


def test_votes_replay_after_notes_whatever_their_order():
    note_op = {"operation": "note", "subject": "s", "note": "n", "reason": "r",
               "citations": [{"type": "repository", "path": "a.py"}]}  # fmt: skip
    (note,) = chain([note_op], txn="n")
    vote_id = note.id
    (vote,) = chain([{"operation": "vote", "note_id": vote_id, "vote": "up"}], txn="v")  # a root: may sort first
    conn = sqlite3.connect(":memory:")
    replay.build(NOTES)(conn, data_of([vote, note]))
    assert conn.execute("SELECT note_id, upvotes, net_votes FROM note_state").fetchall() == [(note.id, 1, 1)]
    assert conn.execute("SELECT count(*) FROM diagnostics").fetchone() == (0,)


def test_duplicate_lines_count_once_and_conflicting_ids_keep_the_smaller_sha():
    (record,) = chain([{"operation": "increment", "name": "a", "amount": 1}])
    assert dump(COUNTER, record.raw * 3)[2] == [("a", 1)]
    (twin,) = chain([{"operation": "increment", "name": "a", "amount": 7}])  # same txn and index: same ID
    keep = min(record, twin, key=lambda r: r.sha)
    for data in (record.raw + twin.raw, twin.raw + record.raw):
        records, diags = envelope.read(data)
        assert [r.sha for r in records] == [keep.sha]
        assert [d.code for d in diags] == ["duplicate-id-conflict"]


def test_union_merge_keeps_ours_as_prefix_and_adds_what_ours_lacks():
    stem = chain([{"operation": "append", "value": i} for i in range(2)], txn="s")
    ours = stem + chain([{"operation": "append", "value": "o"}], parents=[stem[-1].sha], txn="o")
    theirs = stem + chain([{"operation": "append", "value": t} for t in "tu"], parents=[stem[-1].sha], txn="t")
    tail = merge.union(data_of(stem), data_of(ours), data_of(theirs))
    assert tail == data_of(theirs[2:])
    assert merge.union(b"", data_of(ours), data_of(ours)) == b""
    reverse = merge.union(data_of(stem), data_of(theirs), data_of(ours))
    assert dump(LOG, data_of(ours) + tail) == dump(LOG, data_of(theirs) + reverse)
    (clash,) = chain([{"operation": "append", "value": "other"}], parents=[stem[-1].sha], txn="o")
    with pytest.raises(merge.TypedConflict, match="same ID"):
        merge.union(b"", data_of(ours), data_of([*stem, clash]))
    with pytest.raises(merge.TypedConflict, match="line 3"):
        merge.union(b"", data_of(ours), data_of(stem) + b"not json\n")


def test_typed_ledger_paths():
    assert merge.is_typed_ledger(".docket/ledgers/metrics.jsonl")
    assert merge.is_typed_ledger("sub/.docket/ledgers/x.jsonl")
    assert not merge.is_typed_ledger(".docket/ledger.jsonl")
    assert not merge.is_typed_ledger("ledgers/x.jsonl")


SCHEMAS = [
    {"type": "string"},
    {"type": "object"},
    {"type": ["integer", "null"]},
    {"type": "number"},
    {"type": "object", "required": ["id", "severity"], "properties": {"id": {"type": "string"}}},
    {"type": "object", "properties": {"a": {"type": "boolean"}}, "additionalProperties": False},
    {"type": "array", "items": {"type": "integer"}},
    {"enum": [1, "a", None]},
    {"anyOf": [{"type": "string"}, {"type": "array"}]},
]
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from([1.5, 2.0]) | st.sampled_from(["a", "id", "b"]),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(["a", "id", "severity", "z"]), c, max_size=3),
    max_leaves=8,
)


@given(st.sampled_from(SCHEMAS), JSON)
@profile(80, 800, checks=())
def test_compiled_schema_never_accepts_what_jsonschema_rejects(schema, value):
    from jsonschema import Draft202012Validator

    from docket_git.typed import ops

    if ops.compile_schema(schema)(value):
        assert Draft202012Validator(schema).is_valid(value)


def test_a_grown_file_extends_the_projection_and_a_rewrite_rebuilds_it(tmp_path, monkeypatch):
    """What ``api._ensure`` does to the projection: kept when current, extended in place when the file grew past
    the bytes it replayed, rebuilt into a new file when it was rewritten; an append keeps it current."""
    from docket_git.ledger import db

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / ".git").mkdir()
    (tmp_path / ".docket").mkdir()
    (tmp_path / ".docket" / "config.toml").write_text('[ledgers.metrics]\ntype = "counter"\n')
    ledger = api.resolve(tmp_path, "metrics")
    path = api.ledger_file(tmp_path, "metrics")
    path.parent.mkdir()
    records = chain([{"operation": "increment", "name": "a", "amount": i} for i in range(1, 5)])
    path.write_bytes(data_of(records[:2]))

    def ensured() -> tuple[int, int, list]:
        """(inode, mtime) of the projection once made current, and its state."""
        dbp = api._ensure(tmp_path, ledger)
        st = dbp.stat()
        return st.st_ino, st.st_mtime_ns, db.query(dbp, "SELECT value FROM state")[1]

    built = ensured()
    assert built[2] == [(3,)]
    assert ensured() == built  # current: not written at all
    path.write_bytes(data_of(records))  # grown by records that follow the heads
    extended = ensured()
    assert extended[0] == built[0] and extended[2] == [(10,)]  # the same file, extended in place
    path.write_bytes(data_of(records[:3]))  # rewritten (a branch switch)
    rebuilt = ensured()
    assert rebuilt[0] != built[0] and rebuilt[2] == [(6,)]  # a new file swapped in
    api.append(tmp_path, ledger, [{"operation": "increment", "name": "a", "amount": 100}])
    appended = ensured()
    assert appended[0] == rebuilt[0] and appended[2] == [(106,)]
    assert ensured()[:2] == appended[:2]  # the append left it current: no replay next time


def layered_reference(records: list[envelope.Record]) -> list[str]:
    """The reference's algorithm, literally: rounds over the pending list in sha order."""
    present = {r.sha: r for r in records}
    pending = sorted(present)
    accepted: set[str] = set()
    out: list[str] = []
    while True:
        ready = [s for s in pending if all(p in accepted or p not in present for p in present[s].parents)]
        if not ready:
            return out
        out += ready
        accepted.update(ready)
        pending = [s for s in pending if s not in accepted]


@given(st.lists(st.lists(st.integers(0, 30), max_size=3), min_size=1, max_size=30))
@profile(20, 200, checks=())
def test_order_matches_the_layered_reference_on_random_dags(parent_picks):
    records: list[envelope.Record] = []
    for i, picks in enumerate(parent_picks):
        parents = sorted({records[p % i].sha for p in picks} if i else set())
        record, _ = envelope.seal(envelope.record_id("dag", i), "append", "2026-01-01T00:00:00.000Z", parents,
                                  {"operation": "append", "value": i})  # fmt: skip
        records.append(record)
    ordered, _, heads = envelope.order(records)
    assert [r.sha for r in ordered] == layered_reference(records)
    referenced = {p for r in records for p in r.parents}
    assert heads == sorted(r.sha for r in records if r.sha not in referenced)
