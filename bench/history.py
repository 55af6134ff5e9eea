#!/usr/bin/env python3
"""Time history queries (renumbered baselines, ``docket log``) on a large repository: median of 5.

Builds (once, cached under bench/out/) a repository whose ledger is touched by
2,000 commits and holds 10k records at HEAD: ``main`` records on every commit,
short topic branches fork, record and merge every 10 commits (so their records
are renumbered), and one long-lived topic forks early and merges near the end.
Merge commits carry exactly what the merge driver writes (``rebase.merge``).
Objects are written straight into a pack with ``git fast-import`` (writing
2,000 multi-megabyte blobs as loose objects would take minutes and gigabytes).
Then it times the real ``docket`` console script: one cold run (empty cache),
then the median of 5 warm runs, each in wall-clock and CPU seconds (user +
system of the process and its git children: steadier than wall-clock time
when other jobs share the cores), with the load average.

    python bench/history.py                 # 2,000 commits, 10k records
    python bench/history.py --cycles 20     # a small repository
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from docket_git.ledger import canonical, model
from docket_git.merging.rebase import RawLedger, merge

OUT = Path(__file__).resolve().parent / "out"
LEDGER = ".docket/ledger.jsonl"


class Branch:
    """One branch's ledger bytes, last fast-import mark and next free sequence number."""

    def __init__(self, data: bytes, mark: int, top: int) -> None:
        self.data = data
        self.mark = mark
        self.top = top
        self.last_claim = ""


def make(seq: int, kind: str, text: str, branch: str, ts: int, **fields) -> dict:
    record = {
        "schema": 2,
        "kind": kind,
        "id": model.make_id(kind, seq),
        "text": text,
        "state": {"claim": "accepted", "decision": "adopted", "question": "open"}[kind],
        "ts": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(ts)),
        "author": "bench",
        "session": "",
        "branch": branch,
        "scope": ["src/payments/"],
    }
    if kind == "decision":
        record.update(choice="Redis", alternatives=["Postgres"], decided_by="")
    record.update(fields)
    return model.ordered(record)


class Builder:
    """Writes a fast-import stream: commits on main and topics, merges as the driver does them."""

    def __init__(self, stream, start_ts: int) -> None:
        self.stream = stream
        self.mark = 0
        self.ts = start_ts
        self.commits = 0

    def _data(self, payload: bytes) -> None:
        self.stream.write(b"data %d\n" % len(payload) + payload + b"\n")

    def commit(self, ref: str, parents: list[int], message: str, ledger: bytes) -> int:
        self.mark += 1
        self.ts += 60
        self.commits += 1
        out = self.stream
        out.write(f"commit refs/heads/{ref}\nmark :{self.mark}\n".encode())
        out.write(f"author Bench <bench@example.com> {self.ts} +0000\n".encode())
        out.write(f"committer Bench <bench@example.com> {self.ts} +0000\n".encode())
        self._data(message.encode())
        if parents:
            out.write(f"from :{parents[0]}\n".encode())
        for other in parents[1:]:
            out.write(f"merge :{other}\n".encode())
        out.write(f"M 100644 inline {LEDGER}\n".encode())
        self._data(ledger)
        return self.mark

    def record(self, branch: Branch, name: str, count: int, *, supersede: bool) -> None:
        lines = []
        for n in range(count):
            branch.top += 1
            kind = ("claim", "decision", "question", "claim")[branch.top % 4]
            fields: dict = {"rationale": f"Measured on {name}; see the incident review of week {branch.top % 52}"}
            if kind == "claim" and supersede and n == 0 and branch.last_claim:
                fields["supersedes"] = [branch.last_claim]
            record = make(
                branch.top, kind, f"{name} record {branch.top}: retries and idempotency keys", name, self.ts, **fields
            )
            if kind == "claim" and n == 0:
                branch.last_claim = record["id"]
            lines.append(canonical.line(record))
        branch.data += b"".join(lines)
        branch.mark = self.commit(name, [branch.mark] if branch.mark else [], f"{name}: {count} records", branch.data)


def merged(base: bytes, ours: bytes, theirs: bytes) -> bytes:
    tail, _, _ = merge(RawLedger(base, lenient=True), RawLedger(ours), RawLedger(theirs))
    return ours + b"".join(canonical.line(r) for r in tail)


def build(path: Path, cycles: int, initial: int) -> dict:
    """Create the repository at path; return what the timed queries ask about."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    proc = subprocess.Popen(["git", "fast-import", "--quiet", "--depth=20"], cwd=path, stdin=subprocess.PIPE)
    b = Builder(proc.stdin, 1_700_000_000)
    main = Branch(b"", 0, 0)
    b.record(main, "main", initial, supersede=False)
    long_topic: Branch | None = None
    long_base = b""
    for cycle in range(cycles):
        fork = Branch(main.data, main.mark, main.top)
        for _ in range(3):
            b.record(main, "main", 5, supersede=True)
        topic = Branch(fork.data, fork.mark, fork.top)
        for _ in range(3):
            b.record(topic, f"topic-{cycle}", 2, supersede=False)
        for _ in range(3):
            b.record(main, "main", 5, supersede=True)
        if cycle == cycles // 10 and long_topic is None:
            long_topic = Branch(main.data, main.mark, main.top)
            long_base = main.data
            for _ in range(3):
                b.record(long_topic, "long-topic", 2, supersede=False)
            long_tip = long_topic.data
        if long_topic is not None and cycle == cycles - 3:
            data = merged(long_base, main.data, long_topic.data)
            main.mark = b.commit("main", [main.mark, long_topic.mark], "Merge branch 'long-topic'", data)
            main.data = data
            main.top = max(main.top, model.seq(RawLedger(data)[-1]["id"]))
            long_topic = None
        data = merged(fork.data, main.data, topic.data)
        main.mark = b.commit("main", [main.mark, topic.mark], f"Merge branch 'topic-{cycle}'", data)
        main.data = data
        main.top = model.seq(RawLedger(data)[-1]["id"])
    proc.stdin.close()
    if proc.wait() != 0:
        raise SystemExit("git fast-import failed")
    subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=path, check=True)
    tip = RawLedger(long_tip)
    last = tip[-1]["id"]
    digest = canonical.sha256(long_tip)[:12]
    head = RawLedger(main.data)
    superseded = next(r["id"] for r in head if r.get("supersedes"))
    return {
        "commits": b.commits,
        "records": len(head),
        "size": len(main.data),
        "baseline": f"{last}@{digest}",
        "renumbered": last,
        "superseded": superseded,
    }


def top_up(repo: Path, total: int) -> int:
    """Grow HEAD's ledger to total records in one more commit on main (a large ledger with a long history).

    Writing every one of 2,000 versions at 100k records would push some 60 GB
    through fast-import; history questions walk the commits and read the
    versions merges touched, so one large tip over the 2,000-commit history is
    what a large, long-lived repository looks like to them.
    """
    path = repo / LEDGER
    data = path.read_bytes()
    head = RawLedger(data)
    have = len(head)
    if have >= total:
        return have
    top = model.seq(head[-1]["id"])
    ts = 1_900_000_000
    lines = []
    for n in range(total - have):
        top += 1
        kind = ("claim", "decision", "question", "claim")[top % 4]
        fields = {"rationale": f"Bulk record {n}; see the incident review of week {top % 52}"}
        lines.append(
            canonical.line(make(top, kind, f"main record {top}: retries and idempotency keys", "main", ts, **fields))
        )
    path.write_bytes(data + b"".join(lines))
    env = {**os.environ, "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com"}
    env.update(GIT_COMMITTER_NAME="Bench", GIT_COMMITTER_EMAIL="bench@example.com")
    subprocess.run(["git", "add", LEDGER], cwd=repo, check=True, env=env)
    subprocess.run(
        ["git", "commit", "-q", "-m", f"main: grow the ledger to {total} records"], cwd=repo, check=True, env=env
    )
    return total


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(
    docket: str, cwd: Path, env: dict, args: list[str], runs: int, cpu: list[float] | None = None
) -> tuple[float, list[float], str]:
    """(cold seconds, warm timings, output of the first run); each run's CPU seconds go into cpu."""
    out = out_first = ""
    times = []
    for i in range(runs + 1):
        start, used = time.perf_counter(), _cpu()
        proc = subprocess.run([docket, *args], cwd=cwd, env=env, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if cpu is not None:
            cpu.append(_cpu() - used)
        unknown = proc.stdout.strip().endswith("-> ?") or proc.stderr.startswith("docket: no entry")
        if proc.returncode != 0 and not unknown:
            raise SystemExit(f"docket {' '.join(args)} failed: {proc.stderr}")
        out = proc.stdout + proc.stderr
        if i == 0:
            out_first = out
    return times[0], times[1:], out_first


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=200, help="10 commits each (default 200: 2,000 commits)")
    parser.add_argument("--initial", type=int, default=2_800, help="records in the first commit")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--top-up", type=int, default=0, metavar="N", help="grow HEAD's ledger to N records in one more commit"
    )
    parser.add_argument("--rebuild", action="store_true", help="build the repository again")
    parser.add_argument("--only", default="", metavar="TEXT", help="time only the rows whose label contains TEXT")
    args = parser.parse_args()
    docket = str(Path(shutil.which("docket") or Path(sys.executable).with_name("docket")).resolve())
    where = OUT / (f"history-{args.cycles}-{args.initial}" + (f"-top{args.top_up}" if args.top_up else ""))
    facts_file = where / "facts.json"
    if args.rebuild or not facts_file.exists():
        shutil.rmtree(where, ignore_errors=True)
        where.mkdir(parents=True)
        start = time.perf_counter()
        facts = build(where / "repo", args.cycles, args.initial)
        if args.top_up:
            facts["records"] = top_up(where / "repo", args.top_up)
            facts["commits"] += 1
            facts["size"] = (where / "repo" / LEDGER).stat().st_size
        facts_file.write_text(json.dumps(facts))
        print(f"built {where / 'repo'} in {time.perf_counter() - start:.1f} s")
    facts = json.loads(facts_file.read_text())
    repo = where / "repo"
    cache = Path(tempfile.mkdtemp(prefix="docket-bench-history-"))
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    print(
        f"repository: {facts['commits']} commits touching the ledger, {facts['records']} records "
        f"({facts['size'] / 1e6:.1f} MB) at HEAD"
    )
    try:
        baseline = facts["baseline"]
        old = facts["renumbered"]
        # The record the long topic's baseline names now, as docket resolves it.
        _, _, first = timed(docket, repo, {**env, "XDG_CACHE_HOME": str(cache / "probe")}, ["resolve", baseline], 0)
        current = first.split(" -> ")[1].split()[0]
        for label, argv in (
            (f"resolve {baseline} (renumbered baseline)", ["resolve", baseline]),
            (f"show {baseline}", ["show", baseline]),
            (f"log {current} (renumbered, was {old})", ["log", current]),
            (f"log {facts['superseded']} (superseded)", ["log", facts["superseded"]]),
            (f"resolve {old} (bare old ID: every merge recomputed)", ["resolve", old]),
            (f"resolve {old}@000000000000 (no version matches)", ["resolve", f"{old}@000000000000"]),
            ("resolve d999999 (an ID the ledger never held)", ["resolve", "d999999"]),
            ("show d999999 (an ID the ledger never held)", ["show", "d999999"]),
        ):
            if args.only not in label:
                continue
            # Each query starts from an empty history cache (cold), then runs warm.
            run_env = {**env, "XDG_CACHE_HOME": str(cache / str(len(label)) / argv[0])}
            cpu: list[float] = []
            cold, warm, out = timed(docket, repo, run_env, argv, args.runs, cpu)
            print(
                f"{label}: cold {cold:.3f} s, warm median {statistics.median(warm):.3f} s of {args.runs} "
                f"(min {min(warm):.3f}, max {max(warm):.3f}); CPU cold {cpu[0]:.3f} s, "
                f"warm median {statistics.median(cpu[1:]):.3f} s; load {os.getloadavg()[0]:.1f}"
            )
            print("    " + "\n    ".join(out.strip().splitlines()[:3]))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
