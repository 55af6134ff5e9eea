#!/usr/bin/env python3
"""Time the `docket merge-driver` process on a large fork: median of 5 runs.

Generates its own ledgers (a shared prefix plus new records on each side,
with relations into the prefix and inside each tail), then runs the real
console script the way git does and prints the median wall time.

    python bench/merge.py                     # 100k shared, 1k per side
    python bench/merge.py --prefix 10000 --tail 100
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KINDS = (("claim", "c"), ("decision", "d"), ("question", "q"))


def record(seq: int, text: str, refs: list[str]) -> dict:
    kind, prefix = KINDS[seq % 3]
    out = {
        "schema": 2,
        "kind": kind,
        "id": f"{prefix}{seq}",
        "text": f"{text} (record {seq}) about the payment service retries and idempotency keys",
        "state": {"claim": "accepted", "decision": "adopted", "question": "open"}[kind],
        "ts": "2026-01-01T00:00:00+00:00",
        "author": "bench",
        "session": "",
        "branch": "main",
        "scope": ["src/payments/"],
        "rationale": "Measured in production; see the incident review",
        "supports": [],
        "depends_on": [],
        "answers": [],
        "supersedes": [],
        "evidence": [],
        "revisit": "",
        "cost_if_wrong": "",
        "pinned": False,
    }
    if kind == "decision":
        out.update(choice="Redis", alternatives=["Postgres"], decided_by="")
        out["depends_on"] = [r for r in refs if r[0] in "cd"][:1]
    if kind == "claim":
        out["supports"] = [[r] for r in refs if r[0] in "cd"][:1]
    return out


def ledger(start: int, count: int, label: str, cite: list[str]) -> tuple[bytes, list[str]]:
    ids = list(cite)
    lines = []
    for seq in range(start, start + count):
        rec = record(seq, f"{label} {seq}", ids[-3:])
        ids.append(rec["id"])
        lines.append(json.dumps(rec, separators=(",", ":")) + "\n")
    return "".join(lines).encode(), ids


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", type=int, default=100_000)
    parser.add_argument("--tail", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    docket = str(Path(shutil.which("docket") or Path(sys.executable).with_name("docket")).resolve())
    work = Path(tempfile.mkdtemp(prefix="docket-bench-merge-"))
    try:
        prefix, ids = ledger(1, args.prefix, "shared", [])
        ours_tail, _ = ledger(args.prefix + 1, args.tail, "ours", ids[-3:])
        theirs_tail, _ = ledger(args.prefix + 1, args.tail, "theirs", ids[-3:])
        (work / "base").write_bytes(prefix)
        (work / "theirs").write_bytes(prefix + theirs_tail)
        times = []
        for _ in range(args.runs):
            (work / "ours").write_bytes(prefix + ours_tail)
            start = time.perf_counter()
            proc = subprocess.run(
                [docket, "merge-driver", "base", "ours", "theirs", ".docket/ledger.jsonl"],
                cwd=work,
                capture_output=True,
            )
            times.append(time.perf_counter() - start)
            if proc.returncode != 0:
                print(proc.stderr.decode(), file=sys.stderr)
                return 1
        merged = (work / "ours").read_bytes()
        assert merged.startswith(prefix + ours_tail) and merged.count(b"\n") == args.prefix + 2 * args.tail
        size = len(prefix + ours_tail) / 1e6
        print(
            f"merge-driver: {args.prefix} shared + {args.tail} per side ({size:.1f} MB per side): "
            f"median {statistics.median(times):.3f} s of {args.runs} (min {min(times):.3f}, max {max(times):.3f})"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
