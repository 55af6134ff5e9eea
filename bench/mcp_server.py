#!/usr/bin/env python3
"""``docket mcp`` at scale: ready time, then per-call times in one session (median of several).

Runs in a copy of ``bench/run.py``'s generated repository of each size (the
writes must not touch the shared one), with a map ledger declared, and the
MCP SDK's own client over stdio:

- ready: from starting ``docket mcp`` to the answer to ``initialize`` (the index warm);
- context: a ``docket_context`` call with a file (the session briefing);
- record: a ``docket_record`` call appending one decision;
- map_put: a ``ledger_map_put`` call (the seed's write tool);
- sql: a ``docket_sql`` count.

    python bench/mcp_server.py                    # 10k records
    python bench/mcp_server.py --sizes 1000 100000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run  # noqa: E402 - bench/run.py, beside this file


def prepared(n: int, seed: int) -> Path:
    copy = run.OUT / f"mcp-{n}-s{seed}"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(run.repository(n, seed), copy, symlinks=True)
    with (copy / ".docket" / "config.toml").open("a") as config:
        config.write('\n[ledgers.repos]\ntype = "map"\n')
    return copy


async def session(repo: Path, env: dict[str, str], calls: int) -> dict[str, list[float]]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    times: dict[str, list[float]] = {"ready": [], "context": [], "record": [], "map_put": [], "sql": []}
    params = StdioServerParameters(command=run.docket_command(), args=["mcp"], cwd=str(repo), env=env)
    start = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        times["ready"].append(time.perf_counter() - start)
        tools = {
            "context": ("docket_context", lambda i: {"files": ["src/billing/cache.py"]}),
            "record": (
                "docket_record",
                lambda i: {"records": [{"kind": "decision", "text": f"bench {i}", "choice": "x", "scope": ["src/"]}]},
            ),
            "map_put": ("ledger_map_put", lambda i: {"key": f"k{i}", "value": {"i": i}}),
            "sql": ("docket_sql", lambda i: {"sql": "SELECT count(*) FROM records"}),
        }
        for i in range(calls + 1):
            for key, (name, args) in tools.items():
                began = time.perf_counter()
                result = await client.call_tool(name, args(i))
                elapsed = time.perf_counter() - began
                if result.is_error:
                    sys.exit(f"bench: {name} failed: {result.content[0].text}")
                if i:  # the first call of each tool warms the projection and imports
                    times[key].append(elapsed)
    return times


def main() -> None:
    import anyio

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--starts", type=int, default=3, help="server starts measured (ready time)")
    parser.add_argument("--calls", type=int, default=5, help="calls of each tool measured per start")
    ns = parser.parse_args()
    rows = []
    for n in ns.sizes:
        repo = prepared(n, ns.seed)
        env = {**run.base_env(), "XDG_CACHE_HOME": str(run.OUT / f"mcp-cache-{n}")}
        os.environ.update(env)
        run.run_once([run.docket_command(), "list", "--kind", "question"], repo, env)  # warm the index
        merged: dict[str, list[float]] = {}
        for _ in range(ns.starts):
            for key, values in anyio.run(session, repo, env, ns.calls).items():
                merged.setdefault(key, []).extend(values)
        row = {"records": n, **{k: round(statistics.median(v) * 1000, 1) for k, v in merged.items()}}
        rows.append(row)
        print(json.dumps(row), flush=True)
    print("\nrecords  ready ms  context ms  record ms  map_put ms  sql ms")
    for r in rows:
        print(
            f"{r['records']:>7}  {r['ready']:>8}  {r['context']:>10}  {r['record']:>9}  {r['map_put']:>10}  {r['sql']:>6}"
        )


if __name__ == "__main__":
    main()
