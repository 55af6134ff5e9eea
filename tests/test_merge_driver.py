"""The merge driver as git runs it: a process on three files, exit codes, markers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DOCKET, rec


def line(record: dict) -> bytes:
    return (json.dumps(record) + "\n").encode()


def ledger(*records: dict) -> bytes:
    return b"".join(line(r) for r in records)


class Driver:
    def __init__(self, directory: Path, env: dict[str, str]) -> None:
        self.dir = directory
        self.env = env

    def run(self, base: bytes, ours: bytes, theirs: bytes, target: str = ".docket/ledger.jsonl", names=("O", "A", "B")):
        paths = [self.dir / n for n in names]
        for path, data in zip(paths, (base, ours, theirs), strict=True):
            path.write_bytes(data)
        proc = subprocess.run(
            [DOCKET, "merge-driver", *map(str, paths), target],
            cwd=self.dir,
            env=self.env,
            capture_output=True,
            timeout=60,
        )
        return proc.returncode, paths[1].read_bytes(), proc.stderr.decode()


@pytest.fixture
def driver(tmp_path: Path, env: dict[str, str]) -> Driver:
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True, env=env)
    return Driver(work, env)


C1 = rec("c1", "Shared")


def records(data: bytes) -> list[dict]:
    return [json.loads(x) for x in data.splitlines() if x.strip()]


def test_two_sides_adding_a_claim_merge_with_ours_kept_as_a_prefix(driver: Driver):
    ours = ledger(C1, rec("c2", "Mine"))
    code, result, err = driver.run(ledger(C1), ours, ledger(C1, rec("c2", "Theirs")))
    assert code == 0, err
    assert result.startswith(ours)
    assert [(r["id"], r["text"]) for r in records(result)] == [("c1", "Shared"), ("c2", "Mine"), ("c3", "Theirs")]
    assert err == "docket: c2 -> c3\n"


def test_paths_with_spaces_and_shell_metacharacters(driver: Driver):
    names = ("base $(touch pwned) 'x'.jsonl", 'ours; rm -rf "y" &.jsonl', "theirs `id` | cat.jsonl")
    code, result, err = driver.run(ledger(C1), ledger(C1, rec("c2", "Mine")), ledger(C1, rec("c2", "B")), names=names)
    assert code == 0, err
    assert len(records(result)) == 3
    assert not (driver.dir / "pwned").exists()


def test_unreadable_theirs_leaves_conflict_markers_and_exits_1(driver: Driver):
    ours = ledger(C1, rec("c2", "Mine"))
    code, result, err = driver.run(ledger(C1), ours, ledger(C1) + b"{not json\n")
    assert code == 1
    assert err.startswith("docket: cannot merge the ledger: the other branch's ledger, line 2: invalid JSON")
    assert b"<<<<<<<" in result and b">>>>>>>" in result


def test_invalid_record_on_our_side_is_refused(driver: Driver):
    ours = ledger(C1, rec("d2", "Depends on nothing real", depends_on=["c9"]))
    code, result, err = driver.run(ledger(C1), ours, ledger(C1, rec("c2", "Theirs")))
    assert code == 1
    assert "this branch's ledger, line 2: d2: depends_on refers to unknown or later ID 'c9'" in err
    assert b"<<<<<<<" in result


def test_a_tail_citing_a_missing_prefix_record_is_refused(driver: Driver):
    # The prefix is trusted, but the IDs the tails cite are looked up in it.
    shared = ledger(C1, rec("c3", "Gap before me"))
    theirs = shared + line(rec("d4", "Cites a hole", depends_on=["c2"]))
    code, _, err = driver.run(shared, shared + line(rec("c4", "Mine")), theirs)
    assert code == 1
    assert "d4: depends_on refers to unknown or later ID 'c2'" in err


def test_supersede_of_a_prefix_record_retired_in_the_prefix_is_refused(driver: Driver):
    shared = ledger(C1, rec("c2", "Replaces c1", supersedes=["c1"]))
    theirs = shared + line(rec("c3", "Replaces c1 again", supersedes=["c1"]))
    code, _, err = driver.run(shared, shared + line(rec("c3", "Mine")), theirs)
    assert code == 1
    assert "supersedes target 'c1' is already retired" in err


def test_both_supersede_asks_a_question_by_default(driver: Driver):
    ours = ledger(C1, rec("c2", "Ours replaces c1", supersedes=["c1"]))
    theirs = ledger(C1, rec("c2", "Theirs replaces c1", supersedes=["c1"]))
    code, result, err = driver.run(ledger(C1), ours, theirs)
    assert code == 0, err
    merged = records(result)
    assert [r["id"] for r in merged] == ["c1", "c2", "c3", "q4"]
    assert merged[2]["supersedes"] == []
    assert merged[3]["text"].startswith("Both branches superseded c1: c2 here and c3 from the merged branch")
    assert "both histories supersede c1" in err


def test_both_supersede_with_strict_config_is_refused(driver: Driver):
    subprocess.run(["git", "config", "merge.docket.strict", "true"], cwd=driver.dir, env=driver.env, check=True)
    ours = ledger(C1, rec("c2", "Ours replaces c1", supersedes=["c1"]))
    theirs = ledger(C1, rec("c2", "Theirs replaces c1", supersedes=["c1"]))
    code, result, err = driver.run(ledger(C1), ours, theirs)
    assert code == 1
    assert "docket: cannot merge the ledger: both histories supersede c1" in err
    assert b"<<<<<<<" in result


def test_other_paths_are_refused_with_markers(driver: Driver):
    code, result, err = driver.run(b"a\n", b"a\nb\n", b"a\nc\n", target="notes/todo.txt")
    assert code == 1
    assert "notes/todo.txt is not a ledger this docket can merge" in err
    assert b"<<<<<<<" in result


def test_ledger_in_a_subdirectory_is_merged(driver: Driver):
    code, _, err = driver.run(
        ledger(C1), ledger(C1, rec("c2", "A")), ledger(C1, rec("c2", "B")), "svc/.docket/ledger.jsonl"
    )
    assert code == 0, err


def test_no_lock_files_or_caches_are_left(driver: Driver, env: dict[str, str]):
    before = set(driver.dir.iterdir())
    code, _, _ = driver.run(ledger(C1), ledger(C1, rec("c2", "A")), ledger(C1, rec("c2", "B")))
    assert code == 0
    assert {p.name for p in set(driver.dir.iterdir()) - before} == {"O", "A", "B"}
    cache = Path(env["XDG_CACHE_HOME"])
    assert not cache.exists() or not any(cache.rglob("*"))


def test_usage_error_exits_2(driver: Driver):
    proc = subprocess.run([DOCKET, "merge-driver", "only-one"], env=driver.env, capture_output=True, text=True)
    assert proc.returncode == 2
    assert "usage: docket merge-driver" in proc.stderr


def test_the_driver_path_imports_no_cli_framework(tmp_path: Path, driver: Driver):
    for name, data in (("O", ledger(C1)), ("A", ledger(C1, rec("c2", "A"))), ("B", ledger(C1, rec("c2", "B")))):
        (driver.dir / name).write_bytes(data)
    probe = (
        "import sys\n"
        "from docket_git.entry import main\n"
        "try:\n    main(['merge-driver', 'O', 'A', 'B', '.docket/ledger.jsonl'])\n"
        "except SystemExit as exc:\n    code = exc.code\n"
        "heavy = sorted(m for m in ('typer', 'click', 'rich', 'pygit2', 'pydantic', 'platformdirs') if m in sys.modules)\n"
        "print(code, heavy)\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], cwd=driver.dir, env=driver.env, capture_output=True, text=True)
    assert proc.stdout.strip() == "0 []", proc.stderr


def test_a_cherry_picked_record_citing_unpicked_history_is_refused(driver: Driver):
    base = ledger(C1, rec("c2", "Other branch premise"))
    theirs = base + line(rec("d3", "Relies on c2", depends_on=["c2"]))
    code, result, err = driver.run(base, ledger(C1, rec("c2", "Ours")), theirs)
    assert code == 1
    assert "d3 cites c2, which this side does not have" in err
    assert b"<<<<<<<" in result


def test_a_missing_input_file_is_refused_with_markers(driver: Driver):
    (driver.dir / "A").write_bytes(ledger(C1))
    proc = subprocess.run(
        [DOCKET, "merge-driver", "nope-O", "A", "nope-B", ".docket/ledger.jsonl"],
        cwd=driver.dir,
        env=driver.env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert "docket: cannot merge the ledger: cannot read nope-O: No such file or directory" in proc.stderr
    assert "<<<<<<<" in (driver.dir / "A").read_text()
