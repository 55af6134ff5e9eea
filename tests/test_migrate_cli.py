"""`docket migrate` through the real console script: messages, exit codes, backup, crashes."""

from __future__ import annotations

import errno
import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from docket_git.migrate import convert, swap
from docket_git.migrate import schema1 as v1
from tests.conftest import DOCKET, Repo, rec
from tests.migrate_fixtures import every_shape, jsonl, s1

HINT = (
    "docket: to classify records by hand, run 'docket migrate --emit-map FILE', edit FILE, "
    "then 'docket migrate --map FILE'"
)


def put(repo: Repo, data: bytes) -> bytes:
    repo.ledger.write_bytes(data)
    return data


def docket_files(repo: Repo) -> list[str]:
    return sorted(p.name for p in repo.ledger.parent.iterdir() if p.name not in (".gitignore", "ledger.jsonl.lock"))


# -- the plain run ------------------------------------------------------------------------------


def test_dry_run_prints_the_conversion_and_writes_nothing(repo: Repo):
    before = put(repo, jsonl(every_shape()))
    result = repo.ok("migrate", "--dry-run")
    assert result.out.splitlines() == [
        "d1 -> q1 question/open",
        "d2 -> d2 decision/adopted",
        "d3 -> d3 decision/adopted",
        "d4 -> d4 decision/adopted",
        "d5 -> d5 decision/adopted",
        "d6 -> q6 question/open",
        "d7 -> d7 decision/adopted",
        "d8 -> d8 decision/adopted",
        "docket: would migrate 8 records from schema 1 to schema 2 (0 claims, 6 decisions, 2 questions)",
    ]
    assert result.err.splitlines() == [
        "docket: warning: d4 supersedes d1, a question; recorded as an answers edge",
        "docket: warning: d5 is justified by d1, a question; support edge dropped and kept in "
        "legacy.relation_map.source_because",
        "docket: warning: d8 is justified by d1, a question; support edge dropped and kept in "
        "legacy.relation_map.source_because",
    ]
    assert repo.ledger.read_bytes() == before
    assert docket_files(repo) == ["ledger.jsonl"]  # no backup, no temp file


def test_migrate_replaces_the_ledger_and_keeps_the_original(repo: Repo):
    before = put(repo, jsonl(every_shape()))
    result = repo.ok("migrate")
    assert result.out.splitlines() == [
        "docket: migrated 8 records from schema 1 to schema 2 (0 claims, 6 decisions, 2 questions)",
        f"docket: original kept at {repo.ledger}.schema1",
    ]
    assert len(result.err.splitlines()) == 3 and "warning: d4 supersedes d1" in result.err
    assert (repo.ledger.parent / "ledger.jsonl.schema1").read_bytes() == before
    assert repo.ledger.read_bytes() == convert.migrate_bytes(before).data
    assert docket_files(repo) == ["ledger.jsonl", "ledger.jsonl.schema1"]
    # every reading command now works on the result
    assert repo.ok("check").out.strip().endswith("reads cleanly, 8 records")
    listed = repo.ok("list", "--json").json()
    assert [v["id"] for v in listed] == ["q1", "d2", "d3", "d5", "q6", "d7", "d8"]  # d8 retired d4
    d4 = repo.ok("show", "d4", "--json").json()
    assert (d4["answers"], d4["retired_by"]) == (["q1"], "d8")
    assert repo.ok("show", "q6", "--json").json()["resolved_by"] == ["d7"]


def test_the_backup_stays_out_of_commits_even_with_an_older_ignore_file(repo: Repo):
    ignore = repo.ledger.parent / ".gitignore"
    ignore.write_text("*.lock\n*.migrating\n")  # what init wrote before the backup was ignored
    put(repo, jsonl(every_shape()))
    result = repo.ok("migrate")
    assert result.out.splitlines()[-1] == f"docket: added *.schema1, .*.tmp to {ignore}"
    status = repo.git("status", "--porcelain", "--untracked-files=all")
    assert "schema1" not in status and ".docket/ledger.jsonl" in status


def test_a_second_run_says_already_schema_2_and_changes_nothing(repo: Repo):
    put(repo, jsonl(every_shape()))
    repo.ok("migrate")
    after = repo.ledger.read_bytes()
    result = repo.ok("migrate")
    assert result.out == "docket: already schema 2\n"
    assert repo.ledger.read_bytes() == after


def test_schema_2_ledger_is_left_alone(repo: Repo):
    before = repo.write_ledger([rec("c1", "A claim")])
    assert repo.ok("migrate").out == "docket: already schema 2\n"
    assert repo.ok("migrate", "--dry-run").out == "docket: already schema 2\n"
    assert repo.ledger.read_bytes() == before
    assert docket_files(repo) == ["ledger.jsonl"]


def test_no_ledger_says_so(bare_repo: Repo):
    result = bare_repo.ok("migrate")
    assert result.out.startswith(f"docket: no ledger at {bare_repo.ledger} yet; run 'docket init'")
    assert not bare_repo.ledger.parent.exists()


def test_empty_ledger_has_nothing_to_migrate(repo: Repo):
    result = repo.ok("migrate")
    assert result.out == f"docket: {repo.ledger} holds no records; nothing to migrate\n"
    assert repo.ledger.read_bytes() == b""


def test_reading_commands_refuse_schema_1_and_name_migrate(repo: Repo):
    put(repo, jsonl(every_shape()))
    result = repo.docket("list")
    assert result.code == 1
    assert "docket migrate" in result.err


# -- refusals -----------------------------------------------------------------------------------


def test_mixed_schemas_are_refused(repo: Repo):
    before = put(repo, jsonl([s1("d1", "settled", "A", "a")]) + (json.dumps(rec("c2")) + "\n").encode())
    result = repo.docket("migrate")
    assert result.code == 2
    assert result.err.splitlines() == ["docket: mixed schema versions in one ledger: 1, 2", HINT]
    assert repo.ledger.read_bytes() == before
    assert docket_files(repo) == ["ledger.jsonl"]


def test_empty_answer_and_unknown_state_stop_and_name_the_records(repo: Repo):
    before = put(
        repo,
        jsonl(
            [s1("d1", "settled", "Pick a queue", ""), s1("d2", "parked", "Cache sessions?", "x"), s1("d3", "open", "Q")]
        ),
    )
    result = repo.docket("migrate")
    assert result.code == 2
    assert result.out == ""
    assert result.err.splitlines() == [
        "docket: unrecognised schema-1 state(s) parked: d2",
        "docket: d1 is settled with an empty answer, so no choice can be derived",
        HINT,
    ]
    assert repo.ledger.read_bytes() == before
    assert docket_files(repo) == ["ledger.jsonl"]


def test_cross_kind_supersession_stops(repo: Repo):
    put(repo, jsonl([s1("d1", "settled", "Use tabs", "tabs"), s1("d2", "open", "Tabs?", supersedes=["d1"])]))
    result = repo.docket("migrate", "--dry-run")
    assert result.code == 2
    assert result.err.splitlines() == [
        "docket: cross-kind supersession d2->d1 requires an explicit supersedes override",
        HINT,
    ]


def test_malformed_line_is_named(repo: Repo):
    before = put(repo, jsonl([s1("d1", "settled", "A", "a")]) + b"{oops\n")
    result = repo.docket("migrate")
    assert result.code == 2
    assert result.err.splitlines()[0].startswith("docket: malformed input at line 2: invalid JSON")
    assert repo.ledger.read_bytes() == before


def test_a_different_backup_is_never_overwritten(repo: Repo):
    before = put(repo, jsonl(every_shape()))
    backup = repo.ledger.parent / "ledger.jsonl.schema1"
    backup.write_bytes(b'{"id":"d1","state":"open","question":"an older original"}\n')
    result = repo.docket("migrate")
    assert result.code == 1
    assert result.err.startswith(
        f"docket: {backup} already exists and differs from {repo.ledger}; a second migration would overwrite the original"
    )
    assert repo.ledger.read_bytes() == before
    assert backup.read_bytes().startswith(b'{"id":"d1","state":"open","question":"an older')
    assert docket_files(repo) == ["ledger.jsonl", "ledger.jsonl.schema1"]
    dry = repo.ok("migrate", "--dry-run")
    assert "warning: the real run will stop:" in dry.err


def test_an_identical_backup_left_by_a_crash_is_accepted(repo: Repo):
    before = put(repo, jsonl(every_shape()))
    (repo.ledger.parent / "ledger.jsonl.schema1").write_bytes(before)
    repo.ok("migrate")
    assert repo.ledger.read_bytes() == convert.migrate_bytes(before).data


# -- flags ---------------------------------------------------------------------------------------


def test_map_and_emit_map_together_is_a_usage_error(repo: Repo, tmp_path: Path):
    before = put(repo, jsonl(every_shape()))
    result = repo.docket("migrate", "--map", str(tmp_path / "a.json"), "--emit-map", str(tmp_path / "b.json"))
    assert result.code == 2
    assert result.err == (
        "docket: --map and --emit-map cannot be used together: emit a map, edit it, then apply it with --map\n"
    )
    assert repo.ledger.read_bytes() == before
    assert not (tmp_path / "b.json").exists()


def test_emit_map_and_map_on_schema_2_are_refused(repo: Repo, tmp_path: Path):
    repo.write_ledger([rec("c1", "A claim")])
    emit = repo.docket("migrate", "--emit-map", str(tmp_path / "m.json"))
    assert emit.code == 2
    assert emit.err == (
        "docket: --emit-map applies to a schema 1 ledger; this one is at schema 2, whose records are already typed\n"
    )
    assert not (tmp_path / "m.json").exists()
    (tmp_path / "m.json").write_text("{}")
    applied = repo.docket("migrate", "--map", str(tmp_path / "m.json"))
    assert applied.code == 2
    assert applied.err == "docket: a classification map applies only to schema 1; this ledger is schema 2\n"


def test_unreadable_map_files(repo: Repo, tmp_path: Path):
    put(repo, jsonl(every_shape()))
    missing = repo.docket("migrate", "--map", str(tmp_path / "nope.json"))
    assert missing.code == 2
    assert missing.err == f"docket: cannot read the map {tmp_path / 'nope.json'}: No such file or directory\n"
    bad = tmp_path / "bad.json"
    bad.write_text('{"d1": ')
    result = repo.docket("migrate", "--map", str(bad))
    assert result.code == 2
    assert result.err.startswith(f"docket: the map {bad} is not valid JSON: Expecting value (line 1")


# -- emit / edit / map -------------------------------------------------------------------------------


def test_emit_then_map_unedited_gives_bytes_identical_to_a_plain_run(repo: Repo, tmp_path: Path, env):
    data = jsonl(every_shape())
    put(repo, data)
    emitted = repo.ok("migrate", "--emit-map", "map.json")
    assert emitted.out == "docket: wrote 8 mapping entries to map.json\n"
    assert repo.ledger.read_bytes() == data  # emitting never touches the ledger
    repo.ok("migrate", "--map", "map.json")
    via_map = repo.ledger.read_bytes()

    other = Repo(tmp_path / "other", env)
    other.path.mkdir()
    subprocess.run(["git", "init", "-q", str(other.path)], check=True, env=env)
    other.ok("init")
    put(other, data)
    other.ok("migrate")
    assert via_map == other.ledger.read_bytes()


def test_placeholders_are_emitted_refused_until_filled_then_applied(repo: Repo):
    before = put(
        repo,
        jsonl(
            [
                s1("d1", "settled", "Pick a queue", ""),
                s1("d2", "parked", "Cache sessions in Redis", ""),
                s1("d3", "open", "How long do sessions last?", because=["d1"]),
            ]
        ),
    )
    emitted = repo.ok("migrate", "--emit-map", "map.json")
    assert emitted.out == "docket: wrote 3 mapping entries to map.json\n"
    assert emitted.err == (
        "docket: 2 placeholder entries need a kind and a state before --map accepts the file: d1, d2\n"
    )
    entries = json.loads((repo.path / "map.json").read_text())
    assert entries["d1"] == {
        "kind": None,
        "state": None,
        "text": "Pick a queue",
        "overrides": {},
        "source_answer": "",
        "source_state": "settled",
    }
    assert entries["d3"]["kind"] == "question"

    refused = repo.docket("migrate", "--map", "map.json")
    assert refused.code == 2
    assert refused.err == (
        "docket: mapping still has placeholder(s) with kind or state null: d1, d2; give each a kind and a state\n"
    )
    assert repo.ledger.read_bytes() == before

    entries["d1"].update(kind="decision", state="adopted", choice="SQS")
    refused = repo.docket("migrate", "--map", "map.json")
    assert "d2" in refused.err  # the edit was not saved yet: still named
    (repo.path / "map.json").write_text(json.dumps(entries))
    still = repo.docket("migrate", "--map", "map.json")
    assert still.code == 2
    assert still.err == (
        "docket: mapping still has placeholder(s) with kind or state null: d2; give each a kind and a state\n"
    )
    entries["d2"].update(kind="claim", state="disputed")
    (repo.path / "map.json").write_text(json.dumps(entries))
    done = repo.ok("migrate", "--map", "map.json")
    assert done.out.splitlines()[0] == (
        "docket: migrated 3 records from schema 1 to schema 2 (1 claims, 1 decisions, 1 questions)"
    )
    records = repo.records()
    assert [r["id"] for r in records] == ["d1", "c2", "q3"]
    assert records[0]["choice"] == "SQS"
    assert records[2]["supports"] == [["d1"]]


def test_map_errors_are_reported_without_the_emit_hint(repo: Repo):
    before = put(repo, jsonl([s1("d1", "settled", "A", "a"), s1("d2", "open", "Q")]))
    (repo.path / "map.json").write_text(json.dumps({"d1": {"kind": "claim", "state": "x", "text": "A"}, "d5": {}}))
    result = repo.docket("migrate", "--map", "map.json")
    assert result.code == 2
    assert result.err.splitlines() == [
        "docket: missing mapping for old id(s): d2",
        "docket: mapping contains unknown old id(s): d5",
        "docket: mapping for d1 has invalid state 'x' for claim",
    ]
    assert repo.ledger.read_bytes() == before


def test_dry_run_with_a_map_previews_it(repo: Repo):
    before = put(repo, jsonl([s1("d1", "settled", "The API is idempotent", "yes")]))
    (repo.path / "map.json").write_text(
        json.dumps({"d1": {"kind": "claim", "state": "accepted", "text": "The API is idempotent"}})
    )
    result = repo.ok("migrate", "--dry-run", "--map", "map.json")
    assert result.out.splitlines()[0] == "d1 -> c1 claim/accepted"
    assert repo.ledger.read_bytes() == before


# -- crashes and atomicity -----------------------------------------------------------------------------


#: Runs ``docket migrate`` with the swap cut short: the process dies (exit 75, no cleanup) right
#: after the named step, as a power cut would leave it.
CRASH_AFTER = """
import os, sys
from docket_git.migrate import swap
names = [step.__name__ for step in swap.STEPS]
keep = swap.STEPS[: names.index(sys.argv[1]) + 1]
swap.STEPS = (*keep, lambda *args: os._exit(75))
from docket_git.entry import main
main(["migrate"])
"""
STEP_NAMES = {"tempfile": "write_temp", "backup": "keep_backup", "replace": "swap_in"}


def _crash(repo: Repo, step: str):
    return subprocess.run(
        [sys.executable, "-c", CRASH_AFTER, STEP_NAMES[step]],
        cwd=repo.path,
        env=repo.env,
        capture_output=True,
        timeout=60,
    )


@pytest.mark.parametrize("step", ["tempfile", "backup"])
def test_a_crash_before_the_swap_leaves_the_old_ledger(repo: Repo, step: str):
    before = put(repo, jsonl(every_shape()))
    crashed = _crash(repo, step)
    assert crashed.returncode == 75  # died at the hook point, no cleanup ran
    temp = repo.ledger.parent / "ledger.jsonl.migrating"
    assert temp.read_bytes() == convert.migrate_bytes(before).data  # the temp file was fully written
    assert repo.ledger.read_bytes() == before
    assert v1.schema_of(repo.ledger.read_bytes()) == 1
    refused = repo.docket("list")
    assert refused.code == 1 and "docket migrate" in refused.err  # still read as schema 1, never a mix
    if step == "backup":
        assert (repo.ledger.parent / "ledger.jsonl.schema1").read_bytes() == before
    # a rerun repeats the work and finishes
    repo.ok("migrate")
    assert repo.ledger.read_bytes() == convert.migrate_bytes(before).data
    assert (repo.ledger.parent / "ledger.jsonl.schema1").read_bytes() == before
    assert docket_files(repo) == ["ledger.jsonl", "ledger.jsonl.schema1"]


def test_a_crash_after_the_swap_leaves_the_new_ledger(repo: Repo):
    before = put(repo, jsonl(every_shape()))
    assert _crash(repo, "replace").returncode == 75
    assert repo.ledger.read_bytes() == convert.migrate_bytes(before).data
    assert repo.ok("migrate").out == "docket: already schema 2\n"


def test_the_backup_is_a_hard_link_to_the_original_inode(repo: Repo):
    put(repo, jsonl(every_shape()))
    inode = repo.ledger.stat().st_ino
    repo.ok("migrate")
    backup = repo.ledger.parent / "ledger.jsonl.schema1"
    assert backup.stat().st_ino == inode
    assert repo.ledger.stat().st_ino != inode


# -- progress ---------------------------------------------------------------------------------------


def _big(n: int) -> bytes:
    return jsonl([s1(f"d{i}", "settled" if i % 3 else "open", f"record {i}", f"answer {i}") for i in range(1, n + 1)])


def test_no_progress_bar_when_stderr_is_not_a_terminal(repo: Repo):
    put(repo, _big(5000))
    result = repo.ok("migrate")
    assert result.err == ""
    assert "migrating [" not in result.out


def test_progress_bar_on_a_terminal(repo: Repo):
    put(repo, _big(5000))
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [DOCKET, "migrate"], cwd=repo.path, env=repo.env, stdout=subprocess.PIPE, stderr=follower
        )
        os.close(follower)
        seen = b""
        while True:
            ready, _, _ = select.select([leader], [], [], 30)
            if not ready:
                break
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        out, _ = proc.communicate(timeout=60)
    finally:
        os.close(leader)
    assert proc.returncode == 0
    assert b"docket: migrating [" in seen
    assert b"100% 5000/5000" in seen
    assert b"migrating [" not in out  # the bar never goes to stdout


def test_the_backup_is_copied_where_hard_links_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Some filesystems (FAT, some network mounts) refuse os.link; the original is then copied."""
    ledger = tmp_path / "ledger.jsonl"
    before = jsonl(every_shape())
    ledger.write_bytes(before)
    inode = ledger.stat().st_ino

    def no_links(*_args, **_kw):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(swap.os, "link", no_links)
    new = convert.migrate_bytes(before).data
    backup = swap.replace_ledger(ledger, before, new)
    assert backup == tmp_path / "ledger.jsonl.schema1"
    assert backup.read_bytes() == before and backup.stat().st_ino != inode
    assert ledger.read_bytes() == new
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.jsonl", "ledger.jsonl.schema1"]
