"""Time ``docket graph`` and ``docket export`` on generated ledgers, and open the page in headless Chromium.

Each size gets a git repository under ``bench/out/graph-<n>/`` holding a
ledger from ``bench/gen.py``. Times are whole processes, median of several
runs, warm cache (a run first fills the validated-prefix cache). With
Chromium on PATH, the page's time from navigation to its first drawing is
measured too (the page draws at most 400 records; see docs/graph.md).

    python bench/graph.py                  # 1k, 10k, 100k
    python bench/graph.py --sizes 10000 --runs 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import gen  # noqa: E402  (bench/ is on sys.path when run as a script)

COMMANDS = {
    "graph (page)": ["graph", "--out", "{out}/page.html"],
    "graph --json": ["graph", "--json"],
    "export json": ["export", "--format", "json"],
    "export csv": ["export", "--format", "csv", "--out", "{out}/csv"],
    "export mermaid": ["export", "--format", "mermaid"],
    "export dot": ["export", "--format", "dot"],
}


def docket() -> str:
    """The docket console script beside this Python, or on PATH."""
    local = Path(sys.executable).parent / "docket"
    return str(local) if local.exists() else (shutil.which("docket") or "docket")


def repository(n: int, seed: int) -> Path:
    """A git repository with a generated n-record ledger (kept between runs)."""
    repo = ROOT / "bench" / "out" / f"graph-{n}"
    ledger = repo / ".docket" / "ledger.jsonl"
    if not ledger.exists():
        ledger.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        gen.write(n, ledger, seed)
    return repo


def timed(args: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def page_open(page: Path) -> float | None:
    """Seconds from navigation to the page's first drawing, or None without Chromium."""
    from tests.cdp import Browser, find_chromium

    executable = find_chromium()
    if executable is None:
        return None
    with tempfile.TemporaryDirectory() as profile:
        browser = Browser(executable, Path(profile) / "p")
        try:
            started = time.perf_counter()
            browser.navigate(page.as_uri(), timeout=120)
            assert browser.evaluate("window.docketGraph.ready") is True
            return time.perf_counter() - started
        finally:
            browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    opts = parser.parse_args()
    env = {**os.environ, "NO_COLOR": "1"}
    print("| records | " + " | ".join(COMMANDS) + " | page size | page open |")
    print("|---:|" + "---:|" * (len(COMMANDS) + 2))
    for n in opts.sizes:
        repo = repository(n, opts.seed)
        with tempfile.TemporaryDirectory() as out:
            cells = []
            for args in COMMANDS.values():
                cmd = [docket(), *(a.format(out=out) for a in args)]
                timed(cmd, repo, env)  # fills the caches
                cells.append(statistics.median(timed(cmd, repo, env) for _ in range(opts.runs)))
            page = Path(out) / "page.html"
            opened = page_open(page)
            size = page.stat().st_size / 1e6
            shown = f"{opened:.2f} s" if opened is not None else "n/a"
            print(f"| {n:,} | " + " | ".join(f"{c:.2f} s" for c in cells) + f" | {size:.1f} MB | {shown} |")


if __name__ == "__main__":
    main()
