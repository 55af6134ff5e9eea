"""A batch is all or nothing, even under SIGKILL: writers killed at random points never leave half a batch.

``docket record`` writes a batch in one write; a process killed during that
write leaves some of its lines in the file. The lock file journals each batch
(``store._set_journal``), so readers ignore an unfinished batch and the next
writer cuts it off. Short profile here; ``DOCKET_CRASH_RUNS=300`` runs the long one.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time

from .conftest import DOCKET, Repo

RUNS = int(os.environ.get("DOCKET_CRASH_RUNS", "12"))
BATCH = 120
PROSE = "x" * 60_000  # large records make the one write long enough to be cut


def _batch(tag: int) -> bytes:
    lines = [json.dumps({"kind": "claim", "text": f"batch {tag} record {n}", "rationale": PROSE}) for n in range(BATCH)]
    return ("\n".join(lines) + "\n").encode()


def _count(repo: Repo) -> int:
    result = repo.ok("list", "--json")
    return len(json.loads(result.out)) if result.out.strip() else 0


def _kill_during_write(repo: Repo, batch: bytes, rng: random.Random) -> str:
    """Start a batch, SIGKILL it at a random moment (mostly while the ledger grows); say when it died."""
    size = repo.ledger.stat().st_size if repo.ledger.exists() else 0
    proc = subprocess.Popen([DOCKET, "record", "-"], cwd=repo.path, env=repo.env, stdin=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(batch)
    proc.stdin.close()
    wait_for_growth = rng.random() < 0.8
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and proc.poll() is None:
        grown = repo.ledger.exists() and repo.ledger.stat().st_size > size
        if not wait_for_growth or grown:
            time.sleep(rng.random() * 0.002)
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    now = repo.ledger.stat().st_size if repo.ledger.exists() else 0
    return "finished" if proc.returncode == 0 else ("mid-write" if now > size else "before-write")


def test_a_killed_batch_is_never_half_visible(repo: Repo) -> None:
    rng = random.Random(int(os.environ.get("DOCKET_CRASH_SEED", "7")))
    expected = 0
    seen: dict[str, int] = {}
    for run in range(RUNS):
        when = _kill_during_write(repo, _batch(run), rng)
        seen[when] = seen.get(when, 0) + 1
        count = _count(repo)
        # Readers see the whole batch or none of it.
        assert count in (expected, expected + BATCH), f"run {run} ({when}): {count - expected} records of a batch"
        expected = count
        repo.ok("check")
        # The next writer removes what a killed batch left and appends after the last whole batch.
        repo.ok("claim", f"after run {run}")
        expected += 1
        assert _count(repo) == expected
        records = repo.records()
        assert len(records) == expected  # no stray lines left in the file either
        texts = [r["text"] for r in records if r["text"].startswith("batch ")]
        batches = {t.split()[1] for t in texts}
        assert all(sum(t.split()[1] == b for t in texts) == BATCH for b in batches)
    print(f"crash runs: {seen}")


def test_a_killed_single_append_leaves_at_most_a_torn_line(repo: Repo) -> None:
    """Single records keep the torn-tail rule: a cut line is skipped by readers and removed by the next append."""
    repo.ok("claim", "first")
    with repo.ledger.open("ab") as handle:
        handle.write(b'{"schema":2,"kind":"claim","id":"c2","te')  # what a killed single append can leave
    assert _count(repo) == 1
    repo.ok("claim", "second")
    assert [r["id"] for r in repo.records()] == ["c1", "c2"]
