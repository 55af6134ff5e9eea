"""The fast replay equals a straightforward reference replay, line by line and ledger by ledger.

``envelope.parse_line``/``parse_lines`` (one pass over a usual line's bytes, one re-encoding of all
payloads at once), ``envelope.read``'s shortcut for a file without duplicates, ``envelope.order``'s
single pass for a file in append order and the replay loop with its inlined step are all checked
here against the definitions: ``parse_line_reference``, the layered rounds written out literally,
and ``replay.step`` applied record by record. Plus the cap on a record's parents.
"""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docket_git.typed import canonical, envelope, ops, replay
from docket_git.typed.declare import Ledger
from tests.conftest import Repo
from tests.hypothesis_helpers import profile
from tests.typed_helpers import declare, ledger_file, op, rows, snapshot

TS = "2026-01-01T00:00:00.000Z"
LEDGERS = {
    "table": Ledger("findings", "table", key="id", schema={
        "type": "object", "required": ["id", "severity"],
        "properties": {"id": {"type": "string"}, "severity": {"type": "string"}},
    }),
    "map": Ledger("repositories", "map"),
    "set": Ledger("processed", "set"),
    "log": Ledger("history", "log", schema={"type": "string"}),
    "counter": Ledger("metrics", "counter"),
    "notes": Ledger("knowledge", "notes"),
    None: Ledger("events"),
}  # fmt: skip


# ---------------------------------------------------------------- the reference replay, written out


def reference_replay(ledger: Ledger, data: bytes) -> dict:
    """Everything a replay derives, by the definitions: the slow parser, literal rounds, one step a record."""
    diagnostics: list[tuple] = []
    records: dict[str, envelope.Record] = {}
    by_id: dict[str, envelope.Record] = {}
    pieces = data.split(b"\n")
    torn = len(pieces) if data and not data.endswith(b"\n") else None
    for number, raw in enumerate(pieces, start=1):
        if not raw.strip():
            continue
        found = envelope.parse_line_reference(raw, number)
        if isinstance(found, envelope.Diagnostic):
            code = "truncated-record" if number == torn else found.code
            diagnostics.append((code, number, found.id))
        elif found.sha in records:
            diagnostics.append(("duplicate-record", number, found.id))
        elif found.id in by_id:
            other = by_id[found.id]
            keep, drop = (other, found) if other.sha < found.sha else (found, other)
            diagnostics.append(("duplicate-id-conflict", drop.line, drop.id))
            if keep is found:
                del records[other.sha]
                records[found.sha] = by_id[found.id] = found
        else:
            records[found.sha] = by_id[found.id] = found
    for r in records.values():
        diagnostics += [("missing-parent", r.line, r.id) for p in r.parents if p not in records]
    # Layered order: each round takes every pending record whose present parents are all taken, by sha.
    pending, taken, ordered = sorted(records), set(), []
    while True:
        ready = [s for s in pending if all(p in taken or p not in records for p in records[s].parents)]
        if not ready:
            break
        ordered += [records[s] for s in ready]
        taken.update(ready)
        pending = [s for s in pending if s not in taken]
    diagnostics += [("cycle", records[s].line, records[s].id) for s in pending]
    state = replay.MemState()
    notes_first = sorted(ordered, key=lambda r: r.type == "vote") if ledger.type == "notes" else ordered
    skipped_inserts: dict[str, set[str]] = {}  # table key -> shas of its inserts that replay skipped
    row_by: dict[str, str] = {}  # table key -> the sha whose insert or upsert made its current row

    def ancestors(record: envelope.Record) -> set[str]:
        found, todo = set(), list(record.parents)
        while todo:
            sha = todo.pop()
            if sha in records and sha not in found:
                found.add(sha)
                todo += records[sha].parents
        return found

    for record in notes_first:
        payload = record.payload if isinstance(record.payload, dict) else {}
        try:
            if ledger.type == "table" and payload.get("operation") in ("update", "delete"):
                # A branch whose insert of the key was skipped does not update or delete the winner's row.
                mine = ancestors(record)
                if skipped_inserts.get(payload.get("key"), set()) & mine and row_by.get(payload["key"]) not in mine:
                    raise ops.OpError("follows a skipped insert")
            op = replay.step(ledger, record, state)
            if ledger.type == "table" and op["operation"] in ("insert", "upsert"):
                row_by[op["value"][ledger.key]] = record.sha
        except ops.OpError:
            diagnostics.append(("invalid-operation", record.line, record.id))
            value = payload.get("value")
            inserted = isinstance(value, dict) and isinstance(value.get(ledger.key), str)
            if ledger.type == "table" and payload.get("operation") == "insert" and inserted:
                skipped_inserts.setdefault(value[ledger.key], set()).add(record.sha)
    referenced = {p for r in records.values() for p in r.parents}
    if ledger.type == "notes":
        derived = [sorted(state.notes.values()), sorted(state.citations), sorted(state.votes)]
    else:
        derived = replay.state_rows(ledger, state) if ledger.type else []
    return {
        "records": [(r.sha, r.id, r.type, r.timestamp, r.payload_text, r.line) for r in ordered],
        "parents": sorted((r.sha, p) for r in ordered for p in r.parents),
        "heads": sorted(r.sha for r in ordered if r.sha not in referenced),
        "state": derived,
        "diagnostics": sorted(diagnostics, key=repr),
    }


def fast_replay(ledger: Ledger, data: bytes) -> dict:
    """The same, from the projection replay.build writes."""
    conn = sqlite3.connect(":memory:")
    replay.build(ledger)(conn, data)
    if ledger.type == "notes":
        derived = [conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in ("notes", "note_citations")]
        derived.append(conn.execute("SELECT * FROM note_votes ORDER BY 1").fetchall())
        derived = [sorted(rows) for rows in derived]
    elif ledger.type:
        derived = conn.execute("SELECT * FROM state ORDER BY 1").fetchall()
    else:
        derived = []
    return {
        "records": conn.execute(
            "SELECT sha, id, type, timestamp, payload, line FROM records ORDER BY ordinal"
        ).fetchall(),
        "parents": conn.execute("SELECT child_sha, parent_sha FROM parents ORDER BY 1, 2").fetchall(),
        "heads": [h for (h,) in conn.execute("SELECT sha FROM heads ORDER BY sha")],
        "state": derived,
        "diagnostics": sorted(conn.execute("SELECT code, line, id FROM diagnostics").fetchall(), key=repr),
    }


# ---------------------------------------------------------------- random ledgers


def random_op(kind: str | None, rng: random.Random, note_ids: list[str]) -> dict:
    """A plausible operation of the ledger's type, now and then an invalid one."""
    key = f"k{rng.randrange(4)}"
    value = rng.choice([{"id": key, "severity": rng.choice(["low", "high"])}, "text é ☃", 7, [1, {"b": None}],
                        {"id": key, "severity": "mid", "n": rng.choice([1.5, 2**53 - 1, 10**15, -3])}])  # fmt: skip
    if kind == "table":
        return rng.choice([
            {"operation": "insert", "value": {"id": key, "severity": "low"}},
            {"operation": "upsert", "value": {"id": key, "severity": "high", "x": rng.random()}},
            {"operation": "update", "key": key, "patch": {"severity": rng.choice(["a", 5])}},  # 5: schema fails
            {"operation": "delete", "key": key},
        ])  # fmt: skip
    if kind == "map":
        return rng.choice([{"operation": "put", "key": key, "value": value}, {"operation": "delete", "key": key}])
    if kind == "set":
        return {"operation": rng.choice(["add", "remove"]), "value": value}
    if kind == "log":
        return {"operation": "append", "value": rng.choice(["a", 'b\n"c"', 3])}  # 3: schema fails
    if kind == "counter":
        amount = rng.choice([1, 5, 2**52, "2"])
        return {"operation": rng.choice(["increment", "decrement"]), "name": key, "amount": amount}
    if kind == "notes":
        if note_ids and rng.random() < 0.5:
            return {"operation": "vote", "note_id": rng.choice(note_ids), "vote": rng.choice(["up", "down"])}
        cite = {"type": "repository", "path": rng.choice(["a.py", "docs/x.md", "../up"]), "start_line": 2}
        return {"operation": "note", "subject": "s", "note": "n ✓", "reason": "r", "citations": [cite]}
    return {"record_type": rng.choice(["audit", "run"]), "n": rng.randrange(100), "v": value}


def random_ledger(kind: str | None, seed: int, size: int) -> bytes:
    """Records on a random DAG (forks, merges, roots), then the file's own hazards: shuffles, duplicates,
    conflicting IDs, hand-edited and torn lines, missing parents."""
    rng = random.Random(seed)
    records: list[envelope.Record] = []
    note_ids: list[str] = []
    for i in range(size):
        picks = rng.sample(records, min(len(records), rng.choice([0, 1, 1, 1, 2, 3]))) if records else []
        parents = sorted({r.sha for r in picks})
        if rng.random() < 0.05:
            parents = sorted({*parents, "sha256:" + hashlib.sha256(str(i).encode()).hexdigest()})  # missing
        op = random_op(kind, rng, note_ids)
        rtype = op.get("operation", "record") if kind else "record"
        if rng.random() < 0.05:
            rtype = "wrong"  # the record type differs from its operation
        txn = "again" if rng.random() < 0.05 else "t"  # "again": IDs that other records may share
        record, _ = envelope.seal(envelope.record_id(txn, i if txn == "t" else i % 3), rtype, TS, parents, op)
        records.append(record)
        if rtype == "note":
            note_ids.append(record.id)
    lines = [r.raw for r in records]
    if rng.random() < 0.5:
        rng.shuffle(lines)
    for _ in range(rng.randrange(3)):
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(lines))  # duplicate lines
    if rng.random() < 0.3:
        i = rng.randrange(len(lines))
        lines[i] = lines[i].replace(b'":', b'": ', 1)  # hand-edited: no longer canonical
    if rng.random() < 0.2:
        lines.insert(rng.randrange(len(lines) + 1), b"\n")
    data = b"".join(lines)
    if rng.random() < 0.2:
        data = data[: -rng.randrange(2, 40)]  # torn last line
    return data


@pytest.mark.parametrize("kind", list(LEDGERS))
@given(seed=st.integers(0, 2**32), size=st.integers(1, 40))
@profile(10, 80, checks=())
def test_fast_replay_equals_the_reference_replay(kind, seed, size):
    ledger = LEDGERS[kind]
    data = random_ledger(kind, seed, size)
    assert fast_replay(ledger, data) == reference_replay(ledger, data)


def test_the_reference_replay_sees_what_the_generator_plants():
    """The property above compares something: the generated ledgers hold every hazard the fast paths skip."""
    codes: set[str] = set()
    for seed in range(60):
        for kind in ("table", "counter", "notes"):
            codes.update(
                code for code, _, _ in reference_replay(LEDGERS[kind], random_ledger(kind, seed, 30))["diagnostics"]
            )
    assert codes >= {"invalid-operation", "duplicate-record", "duplicate-id-conflict", "missing-parent",
                     "not-canonical", "truncated-record"}  # fmt: skip


# ---------------------------------------------------------------- one line, fast and reference


def forged(payload_text: str, *, rtype: str = "append", parents: list[str] | None = None, tail: str = "") -> bytes:
    """A line whose sha matches its own bytes, whatever they are: only the canonical check can refuse it."""
    plist = ",".join(f'"{p}"' for p in parents or [])
    head = f'{{"id":"{envelope.record_id("f", 0)}","parents":[{plist}],"payload":{payload_text}'
    rest = f',"timestamp":"{TS}","type":{json.dumps(rtype, ensure_ascii=False)},"version":1}}{tail}'
    sha = "sha256:" + hashlib.sha256((head + rest).encode("utf-8", "surrogatepass")).hexdigest()
    return (head + f',"sha":"{sha}"' + rest).encode("utf-8", "surrogatepass")


PAYLOAD_TEXTS = [
    '{"operation":"append","value":"x"}',
    '{"value":"x","operation":"append"}',  # keys out of order
    '{"operation":"append","value":"x","value":"y"}',  # a duplicate key
    '{"operation":"append","value":1.0}', '{"operation":"append","value":1.5}', '{"operation":"append","value":1e-7}',
    '{"operation":"append","value":1e-07}', '{"operation":"append","value":9007199254740991}',
    '{"operation":"append","value":9007199254740992}', '{"operation":"append","value":-0}',
    '{"operation":"append","value":"1234567890123456"}',  # 16 digits, but in a string
    '{"operation":"append","value":"\\u00e9"}', '{"operation":"append","value":"é\\n\\u0001"}',
    '{"operation":"append","value":"\\/"}', '{"operation":"append","value":"\\ud800"}',
    '{"operation":"append","value":NaN}', '{"operation":"append","value":Infinity}',
    '{"operation":"append","value":"x"} ', ' {"operation":"append","value":"x"}', '{"operation":"append","value":"x"},1',
    "[" * 29 + "1" + "]" * 29, "[" * 30 + "1" + "]" * 30, "[" * 31 + "1" + "]" * 31, "[" * 33 + "1" + "]" * 33,
    '"just a string"', "12", "null", "{}", '{"a":{"b":[true,false,null]}}', '{"a":{"c":1,"b":2}}',
]  # fmt: skip
TYPES = ["append", 'a"b', "a\\b", "é☃", "x" * 128, "x" * 129, "tab\there", "del\x7f", "c1\x85"]


@pytest.mark.parametrize("payload", PAYLOAD_TEXTS)
@pytest.mark.parametrize("rtype", TYPES)
def test_fast_parse_answers_like_the_reference_on_forged_lines(payload, rtype):
    raw = forged(payload, rtype=rtype)
    expected = envelope.parse_line_reference(raw, 3)
    assert envelope.parse_line(raw, 3) == expected
    assert envelope.parse_lines([(3, raw)]) == [expected]


def test_one_odd_payload_among_many_is_found_by_the_bulk_check():
    good = [chain_line(i) for i in range(50)]
    for odd in ('{"value":"x","operation":"append"}', '{"operation":"append","value":9007199254740993}'):
        lines = [(i + 1, raw) for i, raw in enumerate([*good[:20], forged(odd), *good[20:]])]
        parsed = envelope.parse_lines(lines)
        assert parsed == [envelope.parse_line_reference(raw, n) for n, raw in lines]
        assert isinstance(parsed[20], envelope.Diagnostic) and parsed[20].code in ("not-canonical", "invalid-envelope")
        assert sum(isinstance(p, envelope.Record) for p in parsed) == 50


def chain_line(i: int) -> bytes:
    _, raw = envelope.seal(envelope.record_id("c", i), "append", TS, [], {"operation": "append", "value": i})
    return raw.rstrip(b"\n")


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
    max_leaves=10,
)


@given(value=JSONISH, rtype=st.text(min_size=1, max_size=6), parents=st.integers(0, 3), cut=st.integers(0, 400),
       junk=st.binary(max_size=3))  # fmt: skip
@profile(80, 800, checks=())
def test_fast_parse_answers_like_the_reference_on_random_and_damaged_lines(value, rtype, parents, cut, junk):
    plist = sorted("sha256:" + hashlib.sha256(bytes([i])).hexdigest() for i in range(parents))
    try:
        _, raw = envelope.seal(envelope.record_id("h", parents), rtype, TS, plist, {"operation": "x", "value": value})
    except canonical.NotCanonical:
        return
    raw = raw.rstrip(b"\n")
    for line in (raw, raw[:cut] + junk + raw[cut:], raw[:cut] + raw[cut + 1 :]):
        assert envelope.parse_line(line, 1) == envelope.parse_line_reference(line, 1)


# ---------------------------------------------------------------- order's single pass


@given(st.lists(st.lists(st.integers(0, 30), max_size=3), min_size=1, max_size=30), st.randoms())
@profile(20, 200, checks=())
def test_order_is_the_same_in_append_order_and_shuffled(parent_picks, rng):
    records: list[envelope.Record] = []
    for i, picks in enumerate(parent_picks):
        parents = sorted({records[p % i].sha for p in picks} if i else set())
        record, _ = envelope.seal(
            envelope.record_id("o", i), "append", TS, parents, {"operation": "append", "value": i}
        )
        records.append(record)
    shuffled = records[:]
    rng.shuffle(shuffled)
    forward, back = envelope.order(records), envelope.order(shuffled)
    assert [r.sha for r in forward[0]] == [r.sha for r in back[0]] and forward[2] == back[2]


# ---------------------------------------------------------------- the parent cap


def many_parents(n: int) -> list[str]:
    return sorted("sha256:" + hashlib.sha256(str(i).encode()).hexdigest() for i in range(n))


@pytest.mark.parametrize(("rtype", "cap"), [("ledger_append", 64), ("append", 1024)])
def test_a_record_with_more_than_the_cap_of_parents_is_refused_on_read(rtype: str, cap: int):
    """gh-aw's format (what docket writes) names at most 64 parents, gh-aw's limit; docket's older records
    (the operation as type) keep their 1024, so a ledger written before still replays."""
    op = {"operation": "append", "value": "x"}
    _, ok = envelope.seal(envelope.record_id("p", 0), rtype, TS, many_parents(cap), op)
    _, over = envelope.seal(envelope.record_id("p", 1), rtype, TS, many_parents(cap + 1), op)
    assert isinstance(envelope.parse_line(ok.rstrip(b"\n"), 1), envelope.Record)
    assert isinstance(envelope.parse_line_reference(ok.rstrip(b"\n"), 1), envelope.Record)
    found = envelope.parse_line(over.rstrip(b"\n"), 2)
    assert found.code == "invalid-envelope" and f"at most {cap} parents, this one {cap + 1}" in found.detail
    assert found == envelope.parse_line_reference(over.rstrip(b"\n"), 2)


def test_parent_cap_on_write_and_in_check(repo: Repo):
    """A file with more heads than gh-aw's 64 takes no new record (gh-aw: Too many ledger DAG heads); a
    record over the cap is listed by check."""
    declare(repo, '[ledgers.history]\ntype = "log"\n')
    path = ledger_file(repo, "history")
    path.parent.mkdir(parents=True, exist_ok=True)
    roots = b"".join(
        envelope.seal(envelope.record_id("root", i), "ledger_append", TS, [], {"operation": "append", "value": i})[1]
        for i in range(65)
    )
    path.write_bytes(roots)
    before = {name: data for name, data in snapshot(repo).items() if not name.endswith(".lock")}
    result = op(repo, "history", {"operation": "append", "value": "new"})
    assert result.code == 1 and result.out == ""
    assert result.err.startswith("docket: ledger 'history' has 65 heads, more than the 64 parents"), result.err
    assert "Too many ledger DAG heads" in result.err
    assert "nothing was written" in result.err and "Traceback" not in result.err
    assert {name: data for name, data in snapshot(repo).items() if not name.endswith(".lock")} == before
    heads = sorted(r.sha for r in envelope.read(roots)[0])
    join = {"operation": "append", "value": "j"}
    _, over = envelope.seal(envelope.record_id("join", 0), "ledger_append", TS, heads, join)
    path.write_bytes(roots + over)
    check = repo.docket("ledger", "check", "history")
    assert check.code == 1
    assert "line 66" in check.out + check.err
    assert "at most 64 parents, this one 65" in check.out + check.err
    assert rows(repo, "history", "SELECT count(*) AS n FROM records") == [{"n": 65}]
    # The same join in docket's older record form (the operation as type) replays: old ledgers keep working.
    _, legacy = envelope.seal(envelope.record_id("join", 0), "append", TS, heads, join)
    path.write_bytes(roots + legacy)
    assert repo.docket("ledger", "check", "history").code == 0
    assert rows(repo, "history", "SELECT count(*) AS n FROM records") == [{"n": 66}]
