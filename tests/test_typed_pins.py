"""Citation pins beside the ledger (``.docket/ledgers/<name>.pins.jsonl``), docket's older record format
still replaying, and ``docket ledger verify`` on notes gh-aw wrote (no pins)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from docket_git.typed import envelope
from tests.conftest import Repo
from tests.typed_helpers import declare, ledger_file, op, rows, snapshot

FIXTURES = Path(__file__).parent / "fixtures" / "gh-aw"
TS = "2026-01-01T00:00:00.000Z"
NOTES = '[ledgers.knowledge]\ntype = "notes"\n'


def commit(repo: Repo, message: str) -> None:
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", message)


def pins_file(repo: Repo, name: str = "knowledge") -> Path:
    return repo.path / ".docket" / "ledgers" / f"{name}.pins.jsonl"


def note(repo: Repo, subject: str, cite: str, *args: str) -> str:
    result = repo.docket(
        "ledger", "note-add", "knowledge", "--subject", subject, "--note", "n", "--reason", "r", "--cite", cite, *args
    )
    assert result.code == 0, result.err
    return result.out.split("\t")[0]


def test_verify_on_notes_gh_aw_wrote_checks_the_cited_lines_and_says_not_pinned(repo: Repo) -> None:
    declare(repo, NOTES)
    target = ledger_file(repo, "knowledge")
    target.parent.mkdir(parents=True)
    shutil.copyfile(FIXTURES / "10-notes-citation-shapes" / "ledger.jsonl", target)
    (repo.path / "LICENSE").write_text("".join(f"l{i}\n" for i in range(12)))
    (repo.path / "src" / "app").mkdir(parents=True)
    (repo.path / "src" / "app" / "main.py").write_text("".join(f"l{i}\n" for i in range(60)))
    (repo.path / "src" / "payments").mkdir()
    (repo.path / "src" / "payments" / "retry.py").write_text("short\n")  # line 40 is gone
    result = repo.docket("ledger", "verify", "knowledge")
    assert result.code == 1  # a cited line that no longer exists fails it
    lines = sorted(result.out.splitlines()[1:])
    assert lines == sorted(
        [
            "ldg-f85c43bd-4597-4d6f-9a26-96aa74008449\tunpinned\tLICENSE:1-10 (not pinned: no content hash was "
            "taken when it was written; lines 1-10 exist, read them)",
            "ldg-f85c43bd-4597-4d6f-9a26-96aa74008449\tunpinned\tsrc/app/main.py:40-52 (not pinned: no content "
            "hash was taken when it was written; lines 40-52 exist, read them)",
            "ldg-ef02e7fb-b3c1-4555-b059-e681e3653535\tmissing\tsrc/payments/retry.py:40 (not pinned, and "
            "src/payments/retry.py has 1 lines; line 40 is gone)",
        ]
    ), result.out
    (repo.path / "src" / "payments" / "retry.py").write_text("".join(f"l{i}\n" for i in range(45)))
    passed = repo.docket("ledger", "verify", "knowledge", "--json")
    assert passed.code == 0  # unpinned citations whose lines exist do not fail it
    assert {r["status"] for r in json.loads(passed.out)} == {"unpinned"}
    assert not pins_file(repo).exists()


def test_pins_live_beside_the_ledger_and_a_merge_of_two_branches_keeps_both(repo: Repo) -> None:
    declare(repo, NOTES)
    (repo.path / "a.py").write_text("one\ntwo\nthree\n")
    commit(repo, "sources")
    first = note(repo, "first", "a.py:2")
    commit(repo, "first")
    repo.git("checkout", "-q", "-b", "topic")
    topic = note(repo, "topic", "a.py:1-3")
    commit(repo, "topic")
    repo.git("checkout", "-q", "main")
    main = note(repo, "main", "a.py")
    commit(repo, "main")
    merged = subprocess.run(
        ["git", "merge", "--no-edit", "topic"], cwd=repo.path, env=repo.env, capture_output=True, text=True
    )
    assert merged.returncode == 0, merged.stderr
    keys = sorted((p["record_id"], p["citation"]) for p in map(json.loads, pins_file(repo).read_text().splitlines()))
    assert keys == sorted([(first, 0), (topic, 0), (main, 0)])
    assert "<<<<<<<" not in pins_file(repo).read_text()
    assert "merge: docket" in repo.git("check-attr", "merge", ".docket/ledgers/knowledge.pins.jsonl")
    cited = rows(repo, "knowledge", "SELECT note_id, commit_sha, content_sha256 FROM note_citations")
    assert all(len(c["content_sha256"]) == 64 and len(c["commit_sha"]) == 40 for c in cited) and len(cited) == 3
    # No record holds a pin: every citation has only gh-aw's four keys.
    for line in ledger_file(repo, "knowledge").read_text().splitlines():
        for c in json.loads(line)["payload"]["citations"]:
            assert set(c) <= {"type", "path", "start_line", "end_line"}
    (repo.path / "a.py").write_text("zero\none\ntwo\nthree\n")
    statuses = {
        r["note_id"]: r["status"] for r in json.loads(repo.docket("ledger", "verify", "knowledge", "--json").out)
    }
    assert statuses == {first: "moved", topic: "moved", main: "changed"}


def test_the_precommit_check_keeps_the_pins_file_append_only(repo: Repo) -> None:
    declare(repo, NOTES)
    (repo.path / "a.py").write_text("one\n")
    commit(repo, "sources")
    note(repo, "first", "a.py:1")
    repo.git("add", "-A")
    assert repo.docket("check", "--staged").code == 0
    commit(repo, "first")
    path = pins_file(repo)
    original = path.read_bytes()
    path.write_bytes(original + b'{"not":"a pin"}\n')
    repo.git("add", "-A")
    result = repo.docket("check", "--staged")
    assert result.code == 1 and "knowledge.pins.jsonl (staged) line 2: not a citation pin" in result.err, result.err
    path.write_bytes(b"")
    repo.git("add", "-A")
    result = repo.docket("check", "--staged")
    assert result.code == 1 and "line 1 of HEAD's version is changed or missing" in result.err
    path.write_bytes(original)
    repo.git("add", "-A")
    assert repo.docket("check", "--staged").code == 0


def test_a_torn_pins_line_is_cut_before_the_next_append_and_the_projection_follows_the_pins_file(repo: Repo) -> None:
    declare(repo, NOTES)
    (repo.path / "a.py").write_text("one\ntwo\n")
    first = note(repo, "first", "a.py:1")
    path = pins_file(repo)
    path.write_bytes(path.read_bytes() + b'{"citation":0,"comm')  # a writer killed mid-line
    second = note(repo, "second", "a.py:2")
    pins = [json.loads(line) for line in path.read_text().splitlines()]
    assert [p["record_id"] for p in pins] == [first, second]
    # The pins file changed outside docket (a checkout, a merge): the projection is rebuilt from it.
    path.write_bytes(path.read_bytes().splitlines(keepends=True)[1])
    cited = {r["note_id"]: r["content_sha256"] for r in rows(repo, "knowledge", "SELECT * FROM note_citations")}
    assert cited[first] is None and cited[second] == pins[1]["content_sha256"]


def test_docket_s_older_records_still_replay_and_a_retry_finds_them(repo: Repo) -> None:
    """Records docket wrote before gh-aw's format (the operation as type, the record ID as the envelope id,
    pins inside each citation) replay as before; retrying their transaction is still a no-op."""
    declare(repo, NOTES + '[ledgers.metrics]\ntype = "counter"\n')
    (repo.path / "a.py").write_text("one\n")
    rid = envelope.record_id("old", 0)
    pinned = {"type": "repository", "path": "a.py", "start_line": 1, "commit": "a" * 40,
              "content_sha256": "b" * 64}  # fmt: skip
    old_note = {"operation": "note", "subject": "s", "note": "n", "reason": "r", "citations": [pinned]}
    _, note_line = envelope.seal(rid, "note", TS, [], old_note)
    _, count_line = envelope.seal(
        envelope.record_id("oldc", 0), "increment", TS, [], {"operation": "increment", "name": "n", "amount": 2}
    )
    ledger_file(repo, "knowledge").parent.mkdir(parents=True)
    ledger_file(repo, "knowledge").write_bytes(note_line)
    ledger_file(repo, "metrics").write_bytes(count_line)
    assert rows(repo, "knowledge", "SELECT commit_sha, content_sha256 FROM note_citations") == [
        {"commit_sha": "a" * 40, "content_sha256": "b" * 64}
    ]
    assert rows(repo, "metrics", "SELECT * FROM state") == [{"name": "n", "value": 2}]
    before = snapshot(repo)
    again = op(repo, "metrics", {"operation": "increment", "name": "n", "amount": 2}, "--txn", "oldc")
    assert again.code == 0 and "already recorded" in again.out
    retried = repo.docket(
        "ledger", "note-add", "knowledge", "--subject", "s", "--note", "n", "--reason", "r", "--cite", "a.py:1",
        "--txn", "old",
    )  # fmt: skip
    assert retried.code == 0 and "already recorded" in retried.out, retried.err
    assert {k: v for k, v in snapshot(repo).items() if not k.endswith(".lock")} == {
        k: v for k, v in before.items() if not k.endswith(".lock")
    }
    other = op(repo, "metrics", {"operation": "increment", "name": "n", "amount": 3}, "--txn", "oldc")
    assert other.code == 1 and "already exists with other content (gh-aw: Conflicting ledger record ID)" in other.err


def test_records_gh_aw_would_refuse_are_refused_on_write(repo: Repo) -> None:
    declare(repo, "[ledgers.audit]\n")
    before = snapshot(repo)
    reserved = op(repo, "audit", {"id": "mine", "status": "ok"})
    assert reserved.code == 1 and "may not hold the key 'id'" in reserved.err, reserved.err
    wide = op(repo, "audit", {f"k{i}": i for i in range(129)})
    assert wide.code == 1 and "129 keys; gh-aw's limit is 128" in wide.err
    long_key = op(repo, "audit", {"k" * 257: 1})
    assert long_key.code == 1 and "longer than 256 bytes" in long_key.err
    assert snapshot(repo) == before
    assert op(repo, "audit", {f"k{i}": i for i in range(128)}).code == 0


def test_strict_names_what_gh_aw_refuses_in_docket_s_older_records(repo: Repo) -> None:
    """Older records replay in docket (check is clean), but --strict says where gh-aw's projection fails."""
    declare(repo, NOTES + '[ledgers.history]\ntype = "log"\n')
    pinned = {"type": "repository", "path": "a.py", "commit": "a" * 40, "content_sha256": "b" * 64}
    old_note = {"operation": "note", "subject": "s", "note": "n", "reason": "r", "citations": [pinned]}
    rid = envelope.record_id("old", 0)
    ledger_file(repo, "knowledge").parent.mkdir(parents=True)
    ledger_file(repo, "knowledge").write_bytes(envelope.seal(rid, "note", TS, [], old_note)[1])
    assert repo.docket("ledger", "check", "knowledge").code == 0
    strict = repo.docket("ledger", "check", "knowledge", "--strict")
    assert strict.code == 1 and f"a note gh-aw's citation check refuses (line 1, {rid}:" in strict.out, strict.out
    roots = [
        envelope.seal(envelope.record_id("r", i), "append", TS, [], {"operation": "append", "value": i})
        for i in range(65)
    ]
    heads = sorted(record.sha for record, _ in roots)
    join = envelope.seal(envelope.record_id("j", 0), "append", TS, heads, {"operation": "append", "value": "j"})
    ledger_file(repo, "history").write_bytes(b"".join(raw for _, raw in [*roots, join]))
    assert repo.docket("ledger", "check", "history").code == 0
    strict = repo.docket("ledger", "query", "history", "SELECT count(*) FROM state", "--strict")
    assert (
        strict.code == 1 and "Ledger branch contains invalid canonical records (line 66: invalid-envelope" in strict.err
    )
    assert "names 65 parents, gh-aw's limit is 64" in strict.err


def test_a_pins_file_that_is_a_link_is_refused_with_a_clear_message(repo: Repo) -> None:
    declare(repo, NOTES)
    (repo.path / "a.py").write_text("one\n")
    note(repo, "first", "a.py:1")
    pins_file(repo).unlink()
    pins_file(repo).symlink_to("/etc/passwd")
    before = snapshot(repo)
    for args in (("ledger", "query", "knowledge", "SELECT 1"), ("ledger", "note-add", "knowledge", "--subject", "s",
                 "--note", "n", "--reason", "r", "--cite", "a.py:1")):  # fmt: skip
        result = repo.docket(*args)
        assert result.code == 1 and result.err.startswith("docket: ") and "is a symbolic link" in result.err
        assert "Traceback" not in result.err
    assert {k: v for k, v in snapshot(repo).items() if not k.endswith(".lock")} == {
        k: v for k, v in before.items() if not k.endswith(".lock")
    }


def test_pins_lines_parse_last_wins_and_union_keeps_both_sides() -> None:
    from docket_git.typed import pins

    rid = envelope.record_id("t", 0)
    a = pins.line(rid, 0, {"commit": "a" * 40, "content_sha256": "1" * 64})
    b = pins.line(rid, 0, {"content_sha256": "2" * 64})  # a retry's pins, without a commit
    c = pins.line(rid, 1, {"commit": "c" * 40, "content_sha256": "3" * 64})
    assert a == f'{{"citation":0,"commit":"{"a" * 40}","content_sha256":"{"1" * 64}","record_id":"{rid}"}}\n'.encode()
    assert pins.parse(a + b + c) == {(rid, 0): (None, "2" * 64), (rid, 1): ("c" * 40, "3" * 64)}
    spaced = a.replace(b",", b", ")  # not canonical: never read, and the pre-commit check names it
    assert pins.parse(spaced + c) == {(rid, 1): ("c" * 40, "3" * 64)}
    assert pins.faults("p", spaced, [])[0].startswith("p (staged) line 1: not a citation pin")
    assert pins.union(a + c, b + a) == b
    assert pins.union(a, a) == b""
    assert pins.union(a + c + b, b + c + a) == b""
