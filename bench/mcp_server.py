#!/usr/bin/env python3
"""``docket mcp`` at scale: ready time, then per-call times in one session (median of several).

Runs in a copy of ``bench/run.py``'s generated repository of each size (the
writes must not touch the shared one), with a map ledger declared, and the
MCP SDK's own client over stdio:

- ready: from starting ``docket mcp`` to the answer to ``initialize`` (the index warm);
- then one case per tool, each a call in the same session: ``docket_context`` with a file (the
  session briefing), ``docket_record`` appending one decision, ``docket_show``, ``docket_list``
  (open questions), ``docket_sql`` (a count), and the seed's tools: ``ledger_map_put``,
  ``ledger_map_delete``, ``ledger_append`` (a counter increment), ``ledger_note_add`` (one
  citation), ``ledger_note_vote`` and ``ledger_query``.

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
        config.write('\n[ledgers.repos]\ntype = "map"\n\n[ledgers.runs]\ntype = "counter"\n')
        config.write('\n[ledgers.knowledge]\ntype = "notes"\n')
    return copy


#: (case, tool, arguments of call i): one per tool, in the order a session calls them.
TOOLS = (
    ("context", "docket_context", lambda i: {"files": ["src/billing/cache.py"]}),
    (
        "record",
        "docket_record",
        lambda i: {"records": [{"kind": "decision", "text": f"bench {i}", "choice": "x", "scope": ["src/"]}]},
    ),
    ("show", "docket_show", lambda i: {"id": "{last}"}),
    ("list", "docket_list", lambda i: {"kind": "question", "state": "open"}),
    ("sql", "docket_sql", lambda i: {"sql": "SELECT count(*) FROM records"}),
    ("map_put", "ledger_map_put", lambda i: {"ledger": "repos", "key": f"k{i}", "value": {"i": i}}),
    ("map_delete", "ledger_map_delete", lambda i: {"ledger": "repos", "key": f"k{i}"}),
    ("append", "ledger_append", lambda i: {"ledger": "runs", "operation": "increment", "name": "n", "amount": 1}),
    (
        "note_add",
        "ledger_note_add",
        lambda i: {
            "subject": f"cache {i}",
            "note": "the cache module is a stub",
            "reason": "read it",
            "citations": [{"type": "repository", "path": "src/billing/cache.py", "start_line": 1, "end_line": 1}],
        },
    ),
    ("note_vote", "ledger_note_vote", lambda i: {"note_id": "{note}", "vote": "up"}),
    ("query", "ledger_query", lambda i: {"ledger": "repos", "sql": "SELECT count(*) AS n FROM state"}),
)


async def session(repo: Path, env: dict[str, str], calls: int) -> dict[str, list[float]]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    times: dict[str, list[float]] = {"ready": [], **{case: [] for case, _, _ in TOOLS}}
    last = json.loads((repo / ".docket" / "ledger.jsonl").read_bytes().splitlines()[-1])["id"]
    params = StdioServerParameters(command=run.docket_command(), args=["mcp"], cwd=str(repo), env=env)
    start = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        times["ready"].append(time.perf_counter() - start)
        note = ""
        for i in range(calls + 1):
            for key, name, args in TOOLS:
                given = {k: v.replace("{note}", note).replace("{last}", last) if isinstance(v, str) else v
                         for k, v in args(i).items()}  # fmt: skip
                began = time.perf_counter()
                result = await client.call_tool(name, given)
                elapsed = time.perf_counter() - began
                if result.is_error:
                    sys.exit(f"bench: {name} failed: {result.content[0].text}")
                if name == "ledger_note_add":
                    note = result.structured_content["record_id"]
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
    columns = ["records", "ready"] + [case for case, _, _ in TOOLS]
    print("\nmedian ms per call; " + "  ".join(columns))
    for r in rows:
        print("  ".join(f"{r[c]:>{len(c)}}" for c in columns))


if __name__ == "__main__":
    main()
