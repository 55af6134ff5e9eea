"""Every record docket writes is a record gh-aw accepts, checked field by field against the reference's wording.

The rules below are restated from ``../shared/reference/gh-aw-ledger-records.md`` (sections 1 and 5:
record envelope, record IDs, canonical JSON, operation validation and limits), never from docket's
code: the canonical JSON is ``json.dumps`` with sorted keys and no whitespace (what ``JSON.stringify``
of a key-sorted copy gives for the plain strings and small integers written here), the record ID is
``finalId`` as section 1 spells it, and replay order is section 3's layered Kahn sort.

Then a round trip: the requests of gh-aw's own fixture runs (``tests/fixtures/gh-aw/*/runs.json``),
written by docket with the same transaction IDs, give records whose payloads are byte for byte the
payloads gh-aw wrote, and docket's replay of them is what ``expected.json`` says gh-aw computes.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import Repo, commit
from tests.typed_helpers import declare, rows

FIXTURES = Path(__file__).parent / "fixtures" / "gh-aw"

# -- the reference's rules, restated -------------------------------------------------------------------

ENVELOPE_KEYS = {"version", "id", "type", "timestamp", "parents", "payload", "sha"}  # "exactly these seven keys"
ID_SHAPE = re.compile(r"^ldg-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
PARENT_SHAPE = re.compile(r"^sha256:[0-9a-f]{64}$")
URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
SAFE = 2**53 - 1
#: "operation + exactly that operation's fields + optional id" (section 5's table).
FIELDS = {
    "log": {"append": {"value"}},
    "set": {"add": {"value"}, "remove": {"value"}},
    "map": {"put": {"key", "value"}, "delete": {"key"}},
    "table": {"insert": {"value"}, "update": {"key", "patch"}, "upsert": {"value"}, "delete": {"key"}},
    "counter": {"increment": {"name", "amount"}, "decrement": {"name", "amount"}},
    "notes": {"note": {"subject", "note", "reason", "citations"}, "vote": {"note_id", "vote", "reason"}},
}
REQUIRED_OPTIONAL = {("notes", "vote"): {"reason"}}


def canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def final_id(txn: str, index: int) -> str:
    """Section 1, "Record IDs": SHA-256 hex of "<txn>:<index>", cut and stamped as a UUIDv4, ldg- in front."""
    h = hashlib.sha256(f"{txn}:{index}".encode()).hexdigest()
    variant = format(int(h[16:18], 16) & 0x3F | 0x80, "02x")
    return f"ldg-{h[0:8]}-{h[8:12]}-4{h[13:16]}-{variant}{h[18:20]}-{h[20:32]}"


def utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def check_citation(c: dict) -> None:
    assert set(c) <= {"type", "path", "start_line", "end_line"}, c  # "Any other key refuses the note"
    assert c["type"] == "repository"
    path = c["path"]
    assert isinstance(path, str) and path.strip()
    assert "\\" not in path and not any(ord(ch) < 32 or ord(ch) == 127 for ch in path)
    assert not URL_SCHEME.match(path) and not any(code in path.lower() for code in ("%2e", "%2f", "%5c"))
    assert all(part not in ("", ".", "..") for part in path.split("/"))
    for name in ("start_line", "end_line"):
        if name in c:
            assert type(c[name]) is int and 1 <= c[name] <= SAFE
    if "start_line" in c and "end_line" in c:
        assert c["end_line"] >= c["start_line"]
    assert utf8(canonical(c)) <= 2048  # "each ≤ 2048 canonical bytes"


def check_operation(ltype: str | None, op: dict, *, schema_key: str | None = None) -> None:
    """Section 5: the operation's fields and rules, for the record as gh-aw's persistence job takes it."""
    if ltype is None:
        return
    name = op["operation"]
    assert name in FIELDS[ltype], f"Unsupported ledger operation {name!r}"
    fields = set(op) - {"operation", "id"}
    allowed = FIELDS[ltype][name]
    assert fields <= allowed and allowed - REQUIRED_OPTIONAL.get((ltype, name), set()) <= fields, op
    if ltype == "map":
        assert isinstance(op["key"], str)
    if ltype == "table":
        if name in ("insert", "upsert"):
            assert isinstance(op["value"], dict) and isinstance(op["value"].get(schema_key), str)
        if name == "update":
            assert isinstance(op["patch"], dict) and schema_key not in op["patch"]
    if ltype == "counter":
        assert isinstance(op["name"], str) and op["name"]
        assert type(op["amount"]) is int and 0 <= op["amount"] <= SAFE
    if ltype == "notes" and name == "note":
        assert op["subject"].strip() and utf8(op["subject"]) <= 512
        assert op["note"].strip() and utf8(op["note"]) <= 4096
        assert op["reason"].strip() and len(op["reason"]) <= 1024
        assert isinstance(op["citations"], list) and 1 <= len(op["citations"]) <= 32
        for citation in op["citations"]:
            check_citation(citation)
    if ltype == "notes" and name == "vote":
        assert isinstance(op["note_id"], str) and op["note_id"].strip() and utf8(op["note_id"]) <= 128
        assert op["vote"] in ("up", "down")
        if "reason" in op:
            assert op["reason"].strip() and len(op["reason"]) <= 1024


def check_record(line: bytes, ltype: str | None, txn: str, index: int, key: str | None = None) -> dict:
    """One written line against section 1 (envelope, IDs, canonical JSON, line format) and section 5 (limits)."""
    assert line.endswith(b"\n") and line.count(b"\n") == 1  # "canonicalJSON(record) followed by \n"
    text = line[:-1].decode("utf-8")
    record = json.loads(text)
    assert text == canonical(record)  # the line is the canonical form of its own parse
    assert list(record) == ["id", "parents", "payload", "sha", "timestamp", "type", "version"]
    assert set(record) == ENVELOPE_KEYS
    assert record["version"] == 1 and type(record["version"]) is int
    assert ID_SHAPE.match(record["id"])
    assert record["type"] == "ledger_append"  # "The persistence job always writes ledger_append"
    stamp = record["timestamp"]  # survives new Date(ts).toISOString() unchanged: UTC, milliseconds, Z
    parsed = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert parsed.strftime("%Y-%m-%dT%H:%M:%S.") + f"{parsed.microsecond // 1000:03d}Z" == stamp
    parents = record["parents"]
    assert isinstance(parents, list) and len(parents) <= 64
    assert all(PARENT_SHAPE.match(p) for p in parents) and parents == sorted(set(parents))  # distinct, ascending
    body = {k: v for k, v in record.items() if k != "sha"}
    assert record["sha"] == "sha256:" + hashlib.sha256(canonical(body).encode("utf-8")).hexdigest()
    payload = record["payload"]
    assert isinstance(payload, dict)
    rid = final_id(txn, index)
    if ltype == "notes":  # the deterministic ID is the envelope id; the payload must not contain id
        assert record["id"] == rid and "id" not in payload
        op = payload
    else:  # the deterministic ID is payload.id; the envelope id is random
        assert payload["id"] == rid and record["id"] != rid
        op = {k: v for k, v in payload.items() if k != "id"}
    check_operation(ltype, op, schema_key=key)
    if ltype is None:  # an untyped record may not use a reserved key (besides the id gh-aw adds)
        reserved = {"hash", "parents", "payload_sha", "sha", "timestamp", "transaction_id", "version"}
        assert not reserved & set(op)
    depth_ok(payload, 1)
    appended = {**op, "id": rid}  # the record gh-aw's persistence job validates: fields + id
    assert utf8(json.dumps(appended, separators=(",", ":"), ensure_ascii=False)) <= 32 * 1024
    assert len(line) <= 40 * 1024  # "written line ≤ min(40 KiB, max_record_kb·1024 + 5 KiB, ...)"
    return record


def depth_ok(value: object, depth: int) -> None:
    """Section 5's record shape: depth ≤ 32, ≤ 128 keys per object, key names ≤ 256 bytes."""
    assert depth <= 32
    if isinstance(value, dict):
        assert len(value) <= 128 and all(utf8(k) <= 256 for k in value)
        for v in value.values():
            depth_ok(v, depth + 1)
    elif isinstance(value, list):
        for v in value:
            depth_ok(v, depth + 1)


def ghaw_order(records: list[dict]) -> list[str]:
    """Section 3: from all shas sorted ascending, each round emits in sha order every pending record whose
    parents are all accepted or absent."""
    present = {r["sha"]: r for r in records}
    pending, accepted, out = sorted(present), set(), []
    while pending:
        ready = [s for s in pending if all(p in accepted or p not in present for p in present[s]["parents"])]
        if not ready:
            break
        out += ready
        accepted |= set(ready)
        pending = [s for s in pending if s not in accepted]
    return out


# -- one record of each type, with citations and parents ------------------------------------------------

CONFIG = """
[ledgers.history]
type = "log"
schema = { type = "string" }

[ledgers.processed]
type = "set"

[ledgers.repositories]
type = "map"

[ledgers.findings]
type = "table"
key = "id"

[ledgers.metrics]
type = "counter"

[ledgers.knowledge]
type = "notes"

[ledgers.audit]
"""
#: (ledger, type, table key, the first run's operations, an operation for each branch, one after the merge)
WRITES = [
    ("history", "log", None, [{"operation": "append", "value": "v1"}, {"operation": "append", "value": "v2"}],
     {"operation": "append", "value": "topic"}, {"operation": "append", "value": "main"},
     {"operation": "append", "value": "merged"}),
    ("processed", "set", None, [{"operation": "add", "value": {"b": 1, "a": [2, 1]}}, {"operation": "remove", "value": "x"}],
     {"operation": "add", "value": 1}, {"operation": "add", "value": "1"}, {"operation": "remove", "value": 1}),
    ("repositories", "map", None, [{"operation": "put", "key": "k", "value": {"stars": 3}}, {"operation": "delete", "key": "gone"}],
     {"operation": "put", "key": "k", "value": "topic"}, {"operation": "put", "key": "k", "value": "main"},
     {"operation": "put", "key": "after", "value": True}),
    ("findings", "table", "id",
     [{"operation": "insert", "value": {"id": "f1", "severity": "low"}},
      {"operation": "update", "key": "f1", "patch": {"severity": "high"}}],
     {"operation": "upsert", "value": {"id": "f2", "severity": "low"}}, {"operation": "delete", "key": "f3"},
     {"operation": "insert", "value": {"id": "f4", "severity": "mid"}}),
    ("metrics", "counter", None, [{"operation": "increment", "name": "runs", "amount": 0},
                                  {"operation": "decrement", "name": "runs", "amount": SAFE}],
     {"operation": "increment", "name": "runs", "amount": 1}, {"operation": "increment", "name": "b", "amount": 2},
     {"operation": "decrement", "name": "b", "amount": 1}),
    ("knowledge", "notes", None,
     [{"operation": "note", "subject": "retry policy", "note": "payments retry 3 times", "reason": "the loop bound",
       "citations": [{"type": "repository", "path": "src/retry.py", "start_line": 2, "end_line": 3},
                     {"type": "repository", "path": "src/retry.py", "start_line": 4},
                     {"type": "repository", "path": "src/retry.py", "end_line": 2},
                     {"type": "repository", "path": "README.md"}]},
      {"operation": "vote", "note_id": final_id("first-knowledge", 0), "vote": "up", "reason": "still true"}],
     {"operation": "note", "subject": "topic", "note": "from the topic branch", "reason": "r",
      "citations": [{"type": "repository", "path": "README.md", "end_line": 1}]},
     {"operation": "note", "subject": "é" * 256, "note": "n", "reason": "r",
      "citations": [{"type": "repository", "path": "README.md", "start_line": 1}]},
     {"operation": "vote", "note_id": final_id("first-knowledge", 0), "vote": "down"}),
    ("audit", None, None, [{"record_type": "audit", "status": "ok"}, {"record_type": "note", "n": [1, {"x": None}]}],
     {"record_type": "topic"}, {"record_type": "main"}, {"record_type": "merged"}),
]  # fmt: skip


def write(repo: Repo, name: str, ops: list[dict], txn: str) -> None:
    result = repo.docket("ledger", "append", name, "-", "--txn", txn, input="".join(json.dumps(o) + "\n" for o in ops))
    assert result.code == 0, result.err


def records_of(repo: Repo, name: str) -> list[bytes]:
    return (repo.path / ".docket" / "ledgers" / f"{name}.jsonl").read_bytes().splitlines(keepends=True)


def test_every_record_docket_writes_follows_gh_aw_s_envelope_and_validation_rules(repo: Repo) -> None:
    declare(repo, CONFIG)
    (repo.path / "src").mkdir()
    (repo.path / "src" / "retry.py").write_text("def retry():\n    for _ in range(3):\n        pay()\n    return\n")
    (repo.path / "README.md").write_text("# project\n")
    commit(repo, "sources")
    for name, _, _, first, *_ in WRITES:
        write(repo, name, first, f"first-{name}")
    commit(repo, "first")
    repo.git("checkout", "-q", "-b", "topic")
    for name, _, _, _, topic, _, _ in WRITES:
        write(repo, name, [topic], f"topic-{name}")
    commit(repo, "topic")
    repo.git("checkout", "-q", "main")
    for name, _, _, _, _, main, _ in WRITES:
        write(repo, name, [main], f"main-{name}")
    commit(repo, "main")
    repo.git("merge", "-q", "--no-edit", "topic")  # the docket merge driver: union of records
    for name, *_, merged in WRITES:
        write(repo, name, [merged], f"merged-{name}")

    for name, ltype, key, first, *_ in WRITES:
        lines = records_of(repo, name)
        assert len(lines) == len(first) + 3, name
        txns = [(f"first-{name}", i) for i in range(len(first))]
        # The file is ours then theirs (the merge driver keeps ours as a prefix), then the merged write.
        txns += [(f"main-{name}", 0), (f"topic-{name}", 0), (f"merged-{name}", 0)]
        written = [check_record(line, ltype, txn, i, key) for line, (txn, i) in zip(lines, txns, strict=True)]
        first_run, main_rec, topic_rec, merged = written[: len(first)], written[-3], written[-2], written[-1]
        assert first_run[0]["parents"] == []  # the first record of a ledger names no parent
        for before, after in itertools.pairwise(first_run):  # records of one run chain one after another
            assert after["parents"] == [before["sha"]]
        assert main_rec["parents"] == topic_rec["parents"] == [first_run[-1]["sha"]]
        # The first write after a merge names all current heads.
        assert merged["parents"] == sorted([main_rec["sha"], topic_rec["sha"]]), name
        # Docket replays its own records in gh-aw's order, each once, with no diagnostics.
        got = rows(repo, name, "SELECT sha FROM records ORDER BY ordinal")
        assert [r["sha"] for r in got] == ghaw_order(written)
        assert repo.docket("ledger", "check", name, "--strict").code == 0

    # The citation pins are kept where gh-aw does not look: the pins file, keyed by record ID and citation.
    note_id = final_id("first-knowledge", 0)
    pins_file = repo.path / ".docket" / "ledgers" / "knowledge.pins.jsonl"
    pins = [json.loads(line) for line in pins_file.read_text().splitlines()]
    assert all(set(p) == {"citation", "commit", "content_sha256", "record_id"} for p in pins)
    # Both branches added pins: the merge kept every line of both (the docket driver's union).
    assert sorted((p["record_id"], p["citation"]) for p in pins) == sorted(
        [(note_id, i) for i in range(4)] + [(final_id("topic-knowledge", 0), 0), (final_id("main-knowledge", 0), 0)]
    )
    first_pins = [p for p in pins if p["record_id"] == note_id]
    assert [p["citation"] for p in first_pins] == [0, 1, 2, 3]
    sources = repo.git("rev-parse", "HEAD~3").strip()  # main: sources, first, main, the merge
    assert {p["commit"] for p in first_pins} == {sources}  # HEAD when the note was written
    lines = (repo.path / "src" / "retry.py").read_bytes().split(b"\n")
    assert first_pins[0]["content_sha256"] == hashlib.sha256(b"\n".join(lines[1:3])).hexdigest()
    assert first_pins[1]["content_sha256"] == hashlib.sha256(lines[3]).hexdigest()
    assert first_pins[2]["content_sha256"] == hashlib.sha256(b"\n".join(lines[0:2])).hexdigest()
    assert first_pins[3]["content_sha256"] == hashlib.sha256(b"# project\n").hexdigest()
    cited = rows(repo, "knowledge", f"SELECT ordinal, content_sha256 FROM note_citations WHERE note_id = '{note_id}'")
    assert [c["content_sha256"] for c in cited] == [p["content_sha256"] for p in first_pins]
    verified = repo.docket("ledger", "verify", "knowledge", "--json")
    assert verified.code == 0 and {r["status"] for r in json.loads(verified.out)} == {"unchanged"}


# -- the round trip: gh-aw's own runs, written by docket ---------------------------------------------------

CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "runs.json").exists())


def _toml(value: object) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def _requests(run: dict) -> list[dict]:
    """The run's tool arguments as operations: temp_id dropped, "#name" resolved to that request's final ID
    (what gh-aw's normalisation does before it writes)."""
    names = {q["temp_id"].lstrip("#"): final_id(run["transaction_id"], i) for i, q in enumerate(run["requests"])
             if "temp_id" in q}  # fmt: skip
    out = []
    for q in run["requests"]:
        q = {k: v for k, v in q.items() if k != "temp_id"}
        if isinstance(q.get("note_id"), str) and q["note_id"].startswith("#"):
            q["note_id"] = names[q["note_id"][1:]]
        out.append(q["record"] if set(q) == {"record"} else q)
    return out


def _runs_by_parent(case: Path, runs: list[dict]) -> list[set[int]]:
    """For each run, the runs its first record follows in gh-aw's ledger (from the fixture's parents)."""
    records = [json.loads(line) for line in (case / "ledger.jsonl").read_text().splitlines()]
    run_of_id = {final_id(r["transaction_id"], i): n for n, r in enumerate(runs) for i in range(len(r["requests"]))}
    by_sha = {}
    for record in records:
        rid = record["payload"].get("id", record["id"]) if isinstance(record["payload"], dict) else record["id"]
        by_sha[record["sha"]] = (run_of_id[rid], record)
    firsts = {run_of_id[final_id(r["transaction_id"], 0)]: None for r in runs}
    for n, record in by_sha.values():
        rid = record["payload"].get("id", record["id"])
        if rid == final_id(runs[n]["transaction_id"], 0):
            firsts[n] = {by_sha[p][0] for p in record["parents"]}
    return [firsts[n] for n in range(len(runs))]


@pytest.mark.parametrize("case", CASES)
def test_gh_aw_s_runs_written_by_docket_replay_as_gh_aw_computes(repo: Repo, case: str) -> None:
    """docket writes each fixture run (same transaction IDs, the same branches and merges as gh-aw's
    history): every payload is byte for byte the one gh-aw wrote, docket replays in gh-aw's order, and
    the state is ``expected.json``'s (or fails under --strict with gh-aw's error)."""
    folder = FIXTURES / case
    config = json.loads((folder / "config.json").read_text())
    expected = json.loads((folder / "expected.json").read_text())
    runs = json.loads((folder / "runs.json").read_text())
    name, ltype = config["name"], config.get("type")
    declare(
        repo,
        "".join(
            [f"[ledgers.{name}]\n"] + [f"{k} = {_toml(config[k])}\n" for k in ("type", "key", "schema") if k in config]
        ),
    )
    for run in runs:  # a note's citations must name lines that exist: docket pins them
        for q in run["requests"]:
            for c in q.get("citations", ()):
                target = repo.path / c["path"]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text("".join(f"line {i}\n" for i in range(1, 101)))
    commit(repo, "sources")
    follows = _runs_by_parent(folder, runs)
    branch_of: dict[int, str] = {}
    tip: dict[str, int] = {}  # branch -> the last run written on it
    for n, run in enumerate(runs):
        after = follows[n]
        if len(after) > 1:  # the first write after a merge of the branches these runs are on
            branches = sorted({branch_of[m] for m in after})
            repo.git("checkout", "-q", branches[0])
            for other in branches[1:]:
                repo.git("merge", "-q", "--no-edit", other)
            branch = branches[0]
        elif after and tip[branch_of[min(after)]] != min(after):  # gh-aw's history forks here
            branch = f"run-{n}"
            repo.git("checkout", "-q", "-b", branch, f"run-{min(after)}-done")
        else:
            branch = branch_of[min(after)] if after else "main"
            repo.git("checkout", "-q", branch)
        write(repo, name, _requests(run), run["transaction_id"])
        commit(repo, f"run {n}")
        repo.git("tag", f"run-{n}-done")
        branch_of[n], tip[branch] = branch, n
    repo.git("checkout", "-q", "main")
    for other in sorted(set(tip) - {"main"}):  # the ledger gh-aw reads is the union of every branch's shards
        repo.git("merge", "-q", "--no-edit", other)

    lines = records_of(repo, name)
    written = [check_record(line, ltype, *_txn_index(line, runs, ltype), config.get("key")) for line in lines]
    ours = sorted(canonical(r["payload"]) for r in written)
    assert ours == sorted(r["payload"] for r in expected["records"])  # byte for byte gh-aw's payloads
    got = rows(repo, name, "SELECT sha, type, payload FROM records ORDER BY ordinal")
    assert [r["sha"] for r in got] == ghaw_order(written)
    if not expected["ok"]:
        strict = repo.docket("ledger", "check", name, "--strict")
        assert strict.code == 1 and f"gh-aw's projection fails: {expected['error']} (" in strict.out, strict.out
        return
    assert repo.docket("ledger", "check", name, "--strict").code == 0
    by_sha = {r["sha"]: r for r in written}
    for table, want in (expected["tables"] or {}).items():
        if ltype == "map":
            want = _map_state([by_sha[r["sha"]]["payload"] for r in got])
        have = rows(repo, name, f"SELECT * FROM {table}") if want else []
        _compare(table, have, want, by_sha)


def _txn_index(line: bytes, runs: list[dict], ltype: str | None) -> tuple[str, int]:
    record = json.loads(line)
    rid = record["id"] if ltype == "notes" else record["payload"]["id"]
    return next((r["transaction_id"], i) for r in runs for i in range(len(r["requests"]))
                if final_id(r["transaction_id"], i) == rid)  # fmt: skip


def _map_state(payloads: list[dict]) -> list[dict]:
    """Section 5's map, over the records in gh-aw's order: put replaces, delete removes; rows sorted by key."""
    state: dict[str, object] = {}
    for p in payloads:
        if p["operation"] == "put":
            state[p["key"]] = p["value"]
        else:
            state.pop(p["key"], None)
    return [{"key": k, "value": canonical(v)} for k, v in sorted(state.items())]


#: Columns that hold the writer's clock or a record's sha: docket's own write time, checked against its records.
TIMES = {"created_at", "last_vote_at", "last_positive_vote_at", "record_sha"}


def _compare(table: str, have: list[dict], want: list[dict], by_sha: dict) -> None:
    by_id = {r["id"]: r for r in by_sha.values()}
    for row in have:
        if table == "notes":
            assert row["created_at"] == by_id[row["id"]]["timestamp"] and row["record_sha"] in by_sha
        if table == "note_votes":
            assert row["created_at"] == by_id[row["record_id"]]["timestamp"]
    columns = [c for c in (want[0] if want else {}) if c not in TIMES]
    key = lambda row: json.dumps([row[c] for c in columns])  # noqa: E731
    assert sorted(({c: r[c] for c in columns} for r in have), key=key) == sorted(
        ({c: r[c] for c in columns} for r in want), key=key
    ), table


@pytest.mark.parametrize(
    "case", [c for c in CASES if json.loads((FIXTURES / c / "config.json").read_text()).get("type") == "notes"]
)
def test_record_lines_gives_gh_aw_s_bytes_for_notes(case: str) -> None:
    """``write.record_lines`` (the format as one pure function, for any storage): a notes record has no
    random part, so given gh-aw's clock and heads it is byte for byte the line gh-aw wrote."""
    from docket_git.typed import write as record_format

    folder = FIXTURES / case
    stored = (folder / "ledger.jsonl").read_bytes().splitlines(keepends=True)
    by_id = {json.loads(line)["id"]: line for line in stored}
    for run in json.loads((folder / "runs.json").read_text()):
        ops = _requests(run)
        first = json.loads(by_id[final_id(run["transaction_id"], 0)])
        lines = record_format.record_lines(
            "notes", ops, run["transaction_id"], first["parents"], timestamp=run["timestamp"]
        )
        assert lines == [by_id[final_id(run["transaction_id"], i)] for i in range(len(ops))]
