"""A batch is all or nothing, even under SIGKILL: a writer killed mid-write never leaves half a batch.

``docket record`` writes a batch in one write; a process killed during that
write leaves some of its lines in the file. The lock file journals each batch
(``store._set_journal``), so readers ignore an unfinished batch and the next
writer cuts it off.

The kill lands at a fixed step, not after a guessed delay: ``DOCKET_FAULT=kill-mid-batch``
makes the writer SIGKILL itself once half its bytes are on disk (``ledger/store.py: fault_point``),
and each run proves the kill landed mid-write (the process died of SIGKILL and the file grew).
The runs cut a batch exactly on a line boundary (where the half batch would read as whole
records) and in the middle of a line; one writer is killed before it writes, one finishes.
``DOCKET_CRASH_RUNS=300`` runs the long profile (more batches, of growing sizes).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess

from .conftest import DOCKET, Repo

RUNS = int(os.environ.get("DOCKET_CRASH_RUNS", "6"))
PROSE = "x" * 200  # every line of a batch has the same length, so an even batch's half is a line boundary


def _batch(tag: int, size: int) -> bytes:
    record = {"kind": "claim", "rationale": PROSE}
    lines = [json.dumps({**record, "text": f"batch {tag:04d} record {n:04d}"}) for n in range(size)]
    return ("\n".join(lines) + "\n").encode()


def _count(repo: Repo) -> int:
    result = repo.ok("list", "--json")
    return len(json.loads(result.out)) if result.out.strip() else 0


def _killed_mid_write(repo: Repo, batch: bytes) -> None:
    """Run ``docket record -`` with the fault hook; assert it died of SIGKILL after writing part of the batch."""
    size = repo.ledger.stat().st_size
    env = {**repo.env, "DOCKET_FAULT": "kill-mid-batch"}
    proc = subprocess.run([DOCKET, "record", "-"], cwd=repo.path, env=env, input=batch, capture_output=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    grown = repo.ledger.stat().st_size - size
    assert grown > 0, "the kill landed before the write: the test proves nothing"  # mid-write, proven


def _killed_before_write(repo: Repo, batch: bytes) -> None:
    """SIGKILL a writer still waiting for its input: it has written nothing."""
    size = repo.ledger.stat().st_size
    proc = subprocess.Popen([DOCKET, "record", "-"], cwd=repo.path, env=repo.env, stdin=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(batch[: len(batch) // 2])  # no end of input yet: it cannot have started writing
    proc.stdin.flush()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdin.close()
    assert repo.ledger.stat().st_size == size


def _check_after(repo: Repo, run: int, expected: int, size: int) -> int:
    count = _count(repo)
    # Readers see the whole batch or none of it.
    assert count in (expected, expected + size), f"run {run}: {count - expected} records of a batch of {size}"
    expected = count
    repo.ok("check")
    # The next writer removes what a killed batch left and appends after the last whole batch.
    repo.ok("claim", f"after run {run}")
    expected += 1
    assert _count(repo) == expected
    records = repo.records()
    assert len(records) == expected  # no stray lines left in the file either
    assert not any(r["text"].startswith(f"batch {run:04d} ") for r in records)  # the killed batch left nothing
    return expected


def test_a_killed_batch_is_never_half_visible(repo: Repo) -> None:
    expected = 0
    # Even sizes: the half is exactly a line boundary; odd sizes: the half is inside a line.
    sizes = [2, 3, 4, 5, 8, 9][: max(2, RUNS // 2)] + [10 + n for n in range(max(0, RUNS - 6))]
    for run, size in enumerate(sizes):
        _killed_mid_write(repo, _batch(run, size))
        expected = _check_after(repo, run, expected, size)
    # A writer killed before it writes leaves nothing; one that finishes leaves its whole batch.
    _killed_before_write(repo, _batch(9998, 4))
    expected = _check_after(repo, 9998, expected, 4)
    repo.ok("record", "-", input=_batch(9999, 4))
    assert _count(repo) == expected + 4
    assert sum(r["text"].startswith("batch 9999 ") for r in repo.records()) == 4


def test_a_killed_single_append_leaves_at_most_a_torn_line(repo: Repo) -> None:
    """Single records keep the torn-tail rule: a cut line is skipped by readers and removed by the next append."""
    repo.ok("claim", "first")
    with repo.ledger.open("ab") as handle:
        handle.write(b'{"schema":2,"kind":"claim","id":"c2","te')  # what a killed single append can leave
    assert _count(repo) == 1
    repo.ok("claim", "second")
    assert [r["id"] for r in repo.records()] == ["c1", "c2"]
