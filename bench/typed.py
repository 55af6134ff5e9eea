#!/usr/bin/env python3
"""Typed ledgers at scale: full replay into SQLite, one append, one query (median of several runs).

Generates a table ledger of N operations (inserts, updates, upserts and
deletes over a key space, written as one chain with a few concurrent forks
merged back) in a throwaway git repository, then measures:

- replay: rebuilding the projection from the file (the cache is deleted first);
- append: one ``api.append`` on the up-to-date projection (no replay), and the
  same through the ``docket ledger append`` console script;
- query: one read-only query on the up-to-date projection, in-process and
  through ``docket ledger query``.

    python bench/typed.py              # 100k operations
    python bench/typed.py --ops 10000
    python bench/typed.py --source branch   # the same ledger kept as gh-aw keeps it: shards on ledgers/findings
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFIG = """
[ledgers.findings]
type = "table"
key = "id"
schema = { type = "object", required = ["id", "severity"], properties = { id = { type = "string" }, severity = { type = "string" } } }
"""


def generate(path: Path, n: int) -> None:
    """n table operations as hashed records in gh-aw's format, chained, with a fork and merge every 1000 records."""
    from docket_git.typed import envelope

    heads: list[str] = []
    out = []
    for i in range(n):
        key = f"f{i % 5000}"
        if i < 5000:
            op = {"operation": "insert", "value": {"id": key, "severity": "low", "title": f"finding {i}"}}
        elif i % 4 == 0:
            op = {"operation": "update", "key": key, "patch": {"severity": "high", "seen": i}}
        elif i % 4 == 1:
            op = {"operation": "upsert", "value": {"id": key, "severity": "mid", "title": f"again {i}"}}
        elif i % 4 == 2:
            op = {"operation": "update", "key": key, "patch": {"title": f"retitled {i}"}}
        else:
            op = {"operation": "upsert", "value": {"id": key, "severity": "low"}}
        parents = heads if i % 1000 != 999 else heads[:-1] or heads  # an occasional fork from an older head
        # gh-aw's record format, as docket writes it: the record ID in the payload, the envelope id another
        # (random when docket writes; derived here so that runs compare), type ledger_append.
        payload = {**op, "id": envelope.record_id("bench", i)}
        record, raw = envelope.seal(envelope.record_id("env", i), "ledger_append", envelope.now(), parents, payload)
        out.append(raw)
        heads = sorted({*heads[-1:], record.sha}) if i % 1000 == 999 else [record.sha]
    path.write_bytes(b"".join(out))


def to_branch(repo: Path, ledger_path: Path) -> int:
    """Move the ledger file onto the branch ledgers/findings as gh-aw lays it out: shard files of at most
    100 KiB (gh-aw's default max_segment_kb) in one commit; the number of shards."""
    import uuid

    import pygit2

    git = pygit2.Repository(str(repo))
    index = pygit2.Index()
    chunk, shards = b"", 0
    lines = ledger_path.read_bytes().splitlines(keepends=True)
    for n, raw in enumerate(lines):
        chunk += raw
        if n + 1 == len(lines) or len(chunk) + len(lines[n + 1]) > 100 << 10:
            path = f"ledger/shards/{uuid.uuid4()}.jsonl"
            index.add(pygit2.IndexEntry(path, git.create_blob(chunk), pygit2.GIT_FILEMODE_BLOB))
            chunk, shards = b"", shards + 1
    sig = pygit2.Signature("bench", "bench@localhost")
    git.create_commit("refs/heads/ledgers/findings", sig, sig, "bench", index.write_tree(git), [])
    ledger_path.unlink()
    return shards


def _cpu() -> float:
    """CPU seconds used by this process and its finished children (the CLI cases run docket as a child)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def timed(fn, runs: int) -> tuple[float, float]:
    """Median (wall, CPU) seconds; CPU time is what this process used, which a loaded machine inflates less."""
    walls, cpus = [], []
    for _ in range(runs):
        start, cpu = time.perf_counter(), _cpu()
        fn()
        walls.append(time.perf_counter() - start)
        cpus.append(_cpu() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--source", choices=("file", "branch"), default="file", help="where the ledger is kept (its declaration)"
    )
    args = parser.parse_args()
    gc.disable()  # as the docket process does (entry.py): parsed records hold no cycles
    tmp = Path(tempfile.mkdtemp(prefix="docket-typed-bench-"))
    os.environ["XDG_CACHE_HOME"] = str(tmp / "cache")
    try:
        repo = tmp / "repo"
        (repo / ".docket" / "ledgers").mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        (repo / ".docket" / "config.toml").write_text(CONFIG)
        ledger_path = repo / ".docket" / "ledgers" / "findings.jsonl"
        generate(ledger_path, args.ops)
        size = ledger_path.stat().st_size
        where = "file"
        if args.source == "branch":
            where = f"branch, {to_branch(repo, ledger_path)} shards"
            (repo / ".docket" / "config.toml").write_text(CONFIG + 'source = "branch"\n')

        from docket_git.ledger import db
        from docket_git.typed import api

        ledger = api.resolve(repo, "findings")
        dbp = api.database(repo, ledger)

        def replay() -> None:
            dbp.unlink(missing_ok=True)
            api.projection(repo, ledger)

        replay_s = timed(replay, args.runs)
        diags = db.query(dbp, "SELECT count(*) FROM diagnostics")[1][0][0]
        counter = iter(range(10**9))

        def append() -> None:
            i = next(counter)
            api.append(repo, ledger, [{"operation": "upsert", "value": {"id": f"new{i}", "severity": "low"}}])

        append_s = timed(append, max(args.runs, 5))
        sql = "SELECT key, json_extract(value, '$.severity') FROM state WHERE key = 'f42'"
        query_s = timed(lambda: api.query(repo, ledger, sql), max(args.runs, 5))
        docket = shutil.which("docket") or str(Path(sys.executable).parent / "docket")
        env = dict(os.environ)
        cli_append_s = timed(
            lambda: subprocess.run(
                [docket, "ledger", "append", "findings", json.dumps({"operation": "delete", "key": "f1"})],
                cwd=repo, env=env, check=True, capture_output=True,
            ),
            max(args.runs, 5),
        )  # fmt: skip
        cli_query_s = timed(
            lambda: subprocess.run(
                [docket, "ledger", "query", "findings", sql], cwd=repo, env=env, check=True, capture_output=True
            ),
            max(args.runs, 5),
        )
        print(
            f"typed ledger ({where}): {args.ops} operations, {size / 1e6:.1f} MB, {diags} diagnostics; "
            f"load {os.getloadavg()[0]:.1f}"
        )
        print("                               wall s    CPU s")
        for label, (wall, cpu) in (
            ("full replay into SQLite", replay_s),
            ("append (api, no replay)", append_s),
            ("query (api, up to date)", query_s),
            ("docket ledger append (CLI)", cli_append_s),
            ("docket ledger query (CLI)", cli_query_s),
        ):
            print(f"  {label:<28} {wall:7.3f}  {cpu:7.3f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
