"""The other writers under SIGKILL: rebase, migrate, typed-ledger batches and session writes.

Each run starts the real command on a large input, kills it at a random
moment, then checks that every file still reads, that what was acknowledged
before is all there, and that the interrupted write is either wholly there or
not at all. Short profile here; ``DOCKET_CRASH_RUNS=300`` (shared with
tests/test_crash.py) runs the long one.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

from tests.conftest import DOCKET, Repo
from tests.migrate_fixtures import jsonl, s1

RUNS = max(1, int(os.environ.get("DOCKET_CRASH_RUNS", "12")) // 3)
PROSE = "y" * 20_000


def _kill_at_random(repo: Repo, args: list[str], stdin: bytes, rng: random.Random, span: float) -> int:
    """Run docket ARGS, SIGKILL it after a random delay in [0, span) seconds; its exit code (or -9)."""
    proc = subprocess.Popen(
        [DOCKET, *args],
        cwd=repo.path,
        env=repo.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None
    proc.stdin.write(stdin)
    proc.stdin.close()
    time.sleep(rng.random() * span)
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    return proc.wait()


def _timed(repo: Repo, args: list[str], stdin: bytes = b"") -> float:
    start = time.monotonic()
    subprocess.run([DOCKET, *args], cwd=repo.path, env=repo.env, input=stdin, capture_output=True, check=True)
    return time.monotonic() - start


def test_a_killed_rebase_leaves_the_old_ledger_or_the_whole_result(repo: Repo, tmp_path: Path) -> None:
    rng = random.Random(11)
    for n in range(30):
        repo.ok("claim", f"ours {n} {PROSE}")
    original = repo.ledger.read_bytes()
    other = tmp_path / "theirs.jsonl"
    shutil.copy(repo.ledger, other)
    base = other.read_bytes()
    lines = [json.loads(line) for line in base.splitlines()]
    extra = [dict(r, id=f"c{len(lines) + i + 1}", text=f"theirs {i} {PROSE}") for i, r in enumerate(lines)]
    other.write_bytes(base + b"".join(json.dumps(r, sort_keys=True).encode() + b"\n" for r in extra))
    # The whole result, from an uninterrupted run.
    span = _timed(repo, ["rebase", str(other)])
    merged = repo.ledger.read_bytes()
    assert merged != original
    for run in range(RUNS):
        repo.ledger.write_bytes(original)
        _kill_at_random(repo, ["rebase", str(other)], b"", rng, span)
        now = repo.ledger.read_bytes()
        assert now in (original, merged), f"run {run}: a partial rebase ({len(now)} bytes)"
        repo.ok("check")


def test_a_killed_migrate_leaves_schema_1_or_schema_2(repo: Repo) -> None:
    rng = random.Random(13)
    records = [s1(f"d{i}", "settled", f"Decision {i} {PROSE[:2000]}", "yes") for i in range(1, 1500)]
    original = jsonl(records)
    repo.ledger.write_bytes(original)
    span = _timed(repo, ["migrate"])
    migrated = repo.ledger.read_bytes()
    assert migrated != original
    for run in range(RUNS):
        for leftover in repo.ledger.parent.glob("ledger.jsonl.*"):
            if not leftover.name.endswith(".lock"):
                leftover.unlink()
        repo.ledger.write_bytes(original)
        _kill_at_random(repo, ["migrate"], b"", rng, span)
        now = repo.ledger.read_bytes()
        assert now in (original, migrated), f"run {run}: a partial migration ({len(now)} bytes)"
        repo.ok("migrate")  # a rerun finishes the job, whatever the crash left
        assert repo.ledger.read_bytes() == migrated
        repo.ok("check")


def _count(repo: Repo, name: str) -> int:
    out = repo.ok("ledger", "query", name, "SELECT count(*) FROM records").out
    return int("".join(ch for ch in out if ch.isdigit()) or "0")


def test_a_killed_typed_batch_is_never_half_visible(repo: Repo) -> None:
    rng = random.Random(17)
    (repo.path / ".docket" / "config.toml").write_text('[ledgers.events]\ntype = "log"\n')
    batch = 400
    expected = 0
    for run in range(RUNS):
        ops = b"".join(
            json.dumps({"operation": "append", "value": f"run {run} op {i} {PROSE[:3000]}"}).encode() + b"\n"
            for i in range(batch)
        )
        code = _kill_at_random(repo, ["ledger", "append", "events", "-"], ops, rng, 0.8)
        count = _count(repo, "events")
        assert count in (expected, expected + batch), f"run {run}: {count - expected} operations of a batch"
        if code == 0:
            assert count == expected + batch  # an acknowledged batch is all there
        expected = count
        repo.ok("ledger", "append", "events", json.dumps({"operation": "append", "value": f"after {run}"}))
        expected += 1
        assert _count(repo, "events") == expected
        repo.ok("ledger", "check", "events")  # nothing a killed batch left stays in the file


def test_a_killed_session_write_leaves_a_readable_file(repo: Repo) -> None:
    rng = random.Random(19)
    path = Path(
        repo.ok("session", "init", "--system", "s", "--workflow", "w", "--project", "p", "--create-dir").out.strip()
    )
    output = json.dumps({"text": PROSE * 20})
    step = ["--agent", "a", "--status", "completed", "--input", "in", "--output", "-"]
    span = _timed(repo, ["session", "write", "--step", "1", *step], output.encode())
    blocks = 1
    for run in range(RUNS):
        before = path.read_bytes()
        code = _kill_at_random(repo, ["session", "write", "--step", str(run + 2), *step], output.encode(), rng, span)
        now = path.read_bytes()
        assert now == before or now.startswith(before.split(b"last_updated", 1)[0]), f"run {run}"
        shown = repo.ok("session", "show", str(path)).out
        written = now != before
        if code == 0:
            assert written
        blocks += written
        assert shown.count("completed") == blocks, (run, shown)
