#!/usr/bin/env python3
"""Time `docket migrate` on generated schema-1 ledgers (1k, 10k, 100k records); median of 3.

Standalone: generates each ledger itself in a temporary directory, runs the
installed `docket` console script as a separate process (stderr not a TTY,
as in CI), and prints a Markdown table. Usage:

    python bench/migrate.py [--sizes 1000,10000,100000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def docket_script() -> str:
    """The docket console script beside this Python, or on PATH."""
    local = Path(sys.executable).parent / "docket"
    found = str(local) if local.exists() else shutil.which("docket")
    if not found:
        sys.exit("bench/migrate.py: the docket console script is not installed; run: pip install -e .")
    return found


def schema1_ledger(n: int, seed: int = 7) -> bytes:
    """n schema-1 records: a quarter open questions, flat and OR `because`, supersession chains."""
    rng = random.Random(seed)
    lines = []
    questions: list[int] = []
    decisions: list[int] = []
    retired: set[int] = set()
    for i in range(1, n + 1):
        state = "open" if i % 4 == 0 else ("ruled-out" if i % 7 == 0 else "settled")
        record = {
            "id": f"d{i}",
            "ts": f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}T10:{i % 60:02d}:00Z",
            "state": state,
            "question": f"Record {i}: keep component {i % 97} behind interface {i % 13}",
            "answer": "" if state == "open" else f"option {i % 5} for component {i % 97}",
            "because": [],
            "supersedes": [],
            "cost_if_wrong": "a day of rework" if i % 3 == 0 else "",
            "session": f"s{i // 50}",
            "author": "bench",
            "branch": "main",
        }
        if decisions and i % 2 == 0:
            picks = [f"d{p}" for p in rng.sample(decisions[-200:], k=min(2, len(decisions[-200:])))]
            record["because"] = [[p] for p in picks] if i % 6 == 0 else picks  # OR sets or one AND set
        if state != "open" and decisions and i % 10 == 1 and decisions[-1] not in retired:
            record["supersedes"] = [f"d{decisions[-1]}"]
            retired.add(decisions[-1])
        if state != "open" and questions and i % 50 == 3:
            record["supersedes"] = [f"d{questions[-1]}"]  # edge fix: becomes an answers edge
        if state != "open" and questions and i % 50 == 5:
            record["because"] = [f"d{questions[-1]}"]  # edge fix: support edge dropped
        (questions if state == "open" else decisions).append(i)
        lines.append(json.dumps(record))
    return ("\n".join(lines) + "\n").encode()


def time_migrate(script: str, data: bytes, env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock and CPU (user + system) seconds of one `docket migrate` process on a fresh copy."""
    with tempfile.TemporaryDirectory() as tmp:
        ledger = Path(tmp) / ".docket" / "ledger.jsonl"
        ledger.parent.mkdir()
        ledger.write_bytes(data)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run([script, "migrate"], cwd=tmp, env=env, capture_output=True)
        elapsed = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if proc.returncode != 0:
            sys.exit(f"bench/migrate.py: docket migrate exited {proc.returncode}: {proc.stderr.decode()[-2000:]}")
        if (ledger.parent / "ledger.jsonl.schema1").read_bytes() != data:
            sys.exit("bench/migrate.py: the backup is not the original")
        return elapsed, cpu


def main() -> None:
    """Run the benchmark and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    script = docket_script()
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "XDG_CACHE_HOME": cache}
        print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        print()
        print(f"| records | schema-1 size | wall, median of {args.runs} | CPU, median | wall runs |")
        print("|---:|---:|---:|---:|---|")
        for n in (int(s) for s in args.sizes.split(",")):
            data = schema1_ledger(n)
            runs = [time_migrate(script, data, env) for _ in range(args.runs)]
            wall = statistics.median(w for w, _ in runs)
            cpu = statistics.median(c for _, c in runs)
            listed = ", ".join(f"{w:.2f}" for w, _ in runs)
            print(f"| {n:,} | {len(data) / 1e6:.1f} MB | {wall:.2f} s | {cpu:.2f} s | {listed} |", flush=True)


if __name__ == "__main__":
    main()
