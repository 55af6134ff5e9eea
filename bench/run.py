"""Time whole ``docket`` processes on generated ledgers: median of several runs, cold and warm.

Each size gets a real git repository under ``bench/out/`` (generated ledger
and a synthetic source tree, committed, then a second commit touching a few
files). *Cold* empties the cache directory before every run, so the ledger is
parsed and validated from scratch; *warm* times runs after one that filled
the cache, as a session hook meets it.

    python bench/run.py                          # every case at every size
    python bench/run.py context --sizes 10000    # one case, one size
    python bench/run.py --list

The table goes to standard output and the rows, with the machine they ran
on, to ``bench/out/results.json`` (``--json PATH`` for another file).

Add a benchmark by adding a ``Case`` to ``CASES``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen  # noqa: E402 - bench/gen.py, beside this file

OUT = HERE / "out"
SIZES = (1000, 10000, 100000)


@dataclass
class Case:
    """One benchmark: docket arguments run in a prepared repository of each size."""

    #: ``{first}`` and ``{last}`` stand for the ledger's first and last record IDs.
    args: list[str]
    note: str = ""
    sizes: tuple[int, ...] = SIZES
    #: Extra preparation inside a fresh copy of the size's repository (e.g. a dirty tree).
    prepare: Callable[[Path], None] | None = None
    #: Standard input (hook JSON); ``{cwd}`` stands for the repository's path.
    stdin: str | None = None
    #: docket arguments run, untimed, before each timed run (e.g. an append the run must take in).
    before: list[str] | None = None
    #: git arguments run, untimed, before each timed run (e.g. switching to the other branch).
    git_before: list[str] | None = None


def dirty_tree(repo: Path) -> None:
    """Modify two tracked files and add an untracked one, so auto-scope reads git status."""
    (repo / "src/billing/cache.py").write_text("# changed\n")
    (repo / "src/auth/models.py").write_text("# changed\n")
    (repo / "src/search/new_module.py").write_text("# new\n")


#: The untimed step of the *-after-append cases: another session records into the ledger.
APPEND = ["claim", "Appended between sessions", "--scope", "src/billing/cache.py", "--rationale", "bench"]


def session_start(source: str, note: str, *, appended: bool = False) -> Case:
    """``docket hook session-start`` fed Claude's hook JSON for source; optionally after an append."""
    stdin = f'{{"session_id": "bench", "source": "{source}", "cwd": "{{cwd}}"}}'
    if not appended:
        return Case(["hook", "session-start"], note, stdin=stdin)
    return Case(["hook", "session-start"], note, stdin=stdin, prepare=lambda repo: None, before=APPEND)


#: Records each side of the branch-switch case appended after the branches parted.
DIVERGED = 20


def two_branches(repo: Path) -> None:
    """Branch ``other`` from main with the last DIVERGED records' texts rewritten and committed.

    Both branches share every earlier byte of the ledger (the shared prefix a
    switch keeps) and hold as many records, with the same IDs and relations.
    """
    env = base_env()
    ledger = repo / ".docket" / "ledger.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    tail = []
    for line in lines[-DIVERGED:]:
        record = json.loads(line)
        record["text"] = "On the other branch: " + record["text"]
        tail.append((json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode())
    git(repo, "checkout", "-q", "-b", "other", env=env)
    ledger.write_bytes(b"".join(lines[:-DIVERGED] + tail))
    git(repo, "commit", "-q", "-am", "the other branch's records", env=env)
    git(repo, "checkout", "-q", "main", env=env)


CASES: dict[str, Case] = {
    "context": Case(["context"], "bare, as a session hook runs it: auto-scope from the last commit"),
    "context-dirty": Case(["context"], "auto-scope from changed and untracked files", prepare=dirty_tree),
    "context-query": Case(["context", "--query", "cache invalidation zephyr"], "query, auto-scope off"),
    "context-all": Case(["context", "--all"], "--all, every current record ranked"),
    "context-since": Case(["context", "--since", "{first}"], "--since the first record: a delta of the whole ledger"),
    "hook-startup": session_start(
        "startup", "agent session start: auto-scoped briefing in Claude's JSON, baseline saved"
    ),
    "hook-after-append": session_start(
        "startup",
        "agent session start after another session appended a record (the cached outline grows)",
        appended=True,
    ),
    "hook-switch": Case(
        ["hook", "session-start"],
        f"agent session start right after a branch switch: the ledgers share all but the last {DIVERGED} records",
        stdin='{"session_id": "bench", "source": "startup", "cwd": "{cwd}"}',
        prepare=two_branches,
        git_before=["checkout", "-q", "-"],
    ),
    "hook-resume": session_start("resume", "agent resume: the delta since this session's baseline"),
    "hook-resume-after-append": session_start(
        "resume", "agent resume after another session appended a record: a one-record delta", appended=True
    ),
    "hook-guard": Case(
        ["hook", "pre-tool-use"],
        "guard on an agent's Edit of a scoped file (governing decisions)",
        stdin='{"session_id": "bench-{run}", "tool_name": "Edit", "tool_input": {"file_path": "src/billing/cache.py"}, "cwd": "{cwd}"}',
    ),
    "hook-guard-shell": Case(
        ["hook", "pre-tool-use", "--for", "codex"],
        "guard on a shell command that writes the ledger: tokenized, denied (Codex)",
        stdin='{"session_id": "bench-{run}", "tool_name": "Bash", "tool_input": {"command": '
        '"cd .docket && L=ledger.jsonl; sed -i -e s/a/b/ $L"}, "cwd": "{cwd}"}',
    ),
    "hook-guard-patch": Case(
        ["hook", "pre-tool-use", "--for", "codex"],
        "guard on Codex's apply_patch of a scoped file (patch headers parsed, governing decisions)",
        stdin='{"session_id": "bench-{run}", "tool_name": "apply_patch", "tool_input": {"command": '
        '"*** Begin Patch\\n*** Update File: src/billing/cache.py\\n@@\\n-a\\n+b\\n*** End Patch\\n"}, '
        '"cwd": "{cwd}"}',
    ),
    "sql-count": Case(["sql", "select count(*) from records"], "docket sql: prove the index current, one count"),
    "sql-after-append": Case(
        ["sql", "select count(*) from records"],
        "docket sql after another session appended a record: the index takes in one line",
        prepare=lambda repo: None,
        before=APPEND,
    ),
    "list-where": Case(
        ["list", "--where", "kind:decision scope:src/billing/cache.py -is:blocked cache", "--json"],
        "list --where: fields, scope coverage and a word compiled to SQL over the index",
    ),
    "list-json": Case(["list", "--json"], "every current record as indent-2 JSON, streamed"),
    "list-oneline": Case(
        ["list", "--oneline", "--superseded"], "every record, one line each: what shell completion runs for IDs"
    ),
    "check": Case(["check"], "docket check: every line valid against the index (issue 32 compares it with Docket's)"),
    "show": Case(["show", "{first}", "--json"], "one record by ID"),
    "show-human": Case(["show", "{last}"], "the newest record, as people read it (labels of the records it cites)"),
    "append": Case(
        ["claim", "A benchmark premise", "--scope", "src/bench.py", "--rationale", "timing", "--cost", "none"],
        "one append: lock, validate the new line against the cached index, fsync",
        prepare=lambda repo: None,
    ),
}


#: ``--docket PATH``: time this executable instead (e.g. a non-editable install, which skips the
#: editable install's import hook that every process of a ``pip install -e`` checkout pays).
DOCKET: str | None = None


def docket_command() -> str:
    """The installed console script, preferring the one beside this interpreter."""
    if DOCKET:
        return DOCKET
    local = Path(sys.executable).parent / "docket"
    found = str(local) if local.exists() else shutil.which("docket")
    if not found:
        sys.exit("bench: the docket console script is not installed; run: pip install -e .")
    return found


def git(repo: Path, *args: str, env: dict[str, str]) -> None:
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "DOCKET_"))}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_AUTHOR_NAME="bench",
        GIT_AUTHOR_EMAIL="bench@example.com",
        GIT_COMMITTER_NAME="bench",
        GIT_COMMITTER_EMAIL="bench@example.com",
        DOCKET_AUTHOR="bench",
        # Timed runs repeat one session's start event within seconds: measure the work, not the repeat no-op.
        DOCKET_HOOK_REPEAT_SECONDS="0",
    )
    return env


#: Files in the source tree scopes point into (``--files``): gen.FILES unless a run asks for a wider tree.
FILES = gen.FILES


def repository(n: int, seed: int) -> Path:
    """The size-n benchmark repository, built once per (n, seed, FILES) and reused."""
    repo = OUT / (f"repo-{n}-s{seed}" + (f"-f{FILES}" if FILES != gen.FILES else ""))
    marker = repo / ".git" / "bench-ready"
    if marker.exists():
        return repo
    if repo.exists():
        shutil.rmtree(repo)
    env = base_env()
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main", env=env)
    for path in gen.source_files(FILES):
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"# {path}\n")
    # In a process of its own: this one stays small, and a child's peak memory (``run_once``) starts from
    # this process's, since the kernel carries the high-water mark across fork and exec.
    ledger = repo / ".docket" / "ledger.jsonl"
    generate = [sys.executable, str(HERE / "gen.py"), str(n), "-o", str(ledger), "--seed", str(seed)]
    subprocess.run([*generate, "--files", str(FILES)], check=True, stdout=subprocess.DEVNULL)
    (repo / ".docket" / ".gitignore").write_text("*.lock\n")
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-q", "-m", "sources and ledger", env=env)
    for path in ("src/billing/cache.py", "src/api/handlers.py", "docs/notes.md"):
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"# {path}, edited\n")
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-q", "-m", "touch a few files", env=env)
    marker.write_text("ok\n")
    return repo


def workdir(name: str, case: Case, n: int, seed: int) -> Path:
    """Where the case runs: the shared repository, or a prepared copy of it."""
    repo = repository(n, seed)
    if case.prepare is None:
        return repo
    copy = OUT / (f"{name}-{n}-s{seed}" + (f"-f{FILES}" if FILES != gen.FILES else ""))
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(repo, copy, symlinks=True)
    case.prepare(copy)
    return copy


def end_lines(path: Path) -> tuple[bytes, bytes]:
    """The first and last lines of a file, read without holding the rest (see ``repository``)."""
    with path.open("rb") as f:
        first = f.readline()
        f.seek(max(0, path.stat().st_size - (1 << 16)))
        return first, f.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]


RUNS = iter(range(10**9))


def run_once(cmd: list[str], cwd: Path, env: dict[str, str], stdin: str | None = None) -> tuple[float, int, int]:
    """Seconds for one whole process, the characters it printed, and its peak memory (MB, RSS).

    The kernel carries a process's high-water mark into the children it starts, so after this process
    has held a large output or a case's prepared ledger, every later child would seem at least as large.
    The command is therefore started by a worker forked from a small forkserver (``_spawner``) that
    never holds either; it reaps the command with ``os.wait4`` for the command's own usage.
    """
    data = stdin.replace("{cwd}", str(cwd)).replace("{run}", str(next(RUNS))).encode() if stdin else None
    code, text, elapsed, chars, peak = _spawner().apply(_spawn, (cmd, str(cwd), env, data))
    if code != 0:
        sys.exit(f"bench: {' '.join(cmd[1:])} exited {code}: {text}")
    return elapsed, chars, peak


_POOL = None


def _spawner():  # type: ignore[no-untyped-def]
    """One worker process at a time, each forked from a forkserver started as a fresh, small interpreter."""
    global _POOL
    if _POOL is None:
        import multiprocessing

        _POOL = multiprocessing.get_context("forkserver").Pool(1, maxtasksperchild=1)
    return _POOL


def _spawn(cmd: list[str], cwd: str, env: dict[str, str], data: bytes | None) -> tuple[int, str, float, int, int]:
    """(exit code, stderr's start, seconds, characters printed, peak MB) of one run, in a worker."""
    import codecs

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL if data is None else subprocess.PIPE, stdout=out, stderr=err
        )
        if proc.stdin is not None:
            proc.stdin.write(data or b"")  # a hook's JSON: far less than a pipe holds
            proc.stdin.close()
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        decoder, chars = codecs.getincrementaldecoder("utf-8")(), 0
        while chunk := out.read(1 << 20):  # counted a megabyte at a time: the worker stays small
            chars += len(decoder.decode(chunk))
        chars += len(decoder.decode(b"", final=True))
        text = err.read(2000).decode(errors="replace")[:500]
        return os.waitstatus_to_exitcode(status), text, elapsed, chars, usage.ru_maxrss >> 10


def landed(cache: Path) -> None:
    """Wait until no index build holds a lock in the cache.

    A session hook in a fresh clone answers from memory and leaves the index
    to a child it forks, holding the index's lock from before the fork until
    the build is done (``index.finish_later``): the next cold run must not
    start until then, or it would race that child for the cache.
    """
    import fcntl

    folder = cache / "docket-git" / "index"
    for lock in folder.glob("*.lock") if folder.is_dir() else ():
        with open(lock, "rb") as f:
            fcntl.flock(f, fcntl.LOCK_EX)


def measure(name: str, case: Case, n: int, *, runs: int, seed: int) -> dict:
    """Median cold and warm seconds for one case at one size."""
    cwd = workdir(name, case, n, seed)
    cache = OUT / "cache" / (f"{name}-{n}" + (f"-f{FILES}" if FILES != gen.FILES else ""))
    env = base_env()
    env["XDG_CACHE_HOME"] = str(cache)
    state = OUT / "state" / f"{name}-{n}"
    shutil.rmtree(state, ignore_errors=True)  # session memory from an earlier bench run would change the case
    env["XDG_STATE_HOME"] = str(state)
    first, last = (json.loads(line)["id"] for line in end_lines(cwd / ".docket" / "ledger.jsonl"))
    cmd = [docket_command(), *(arg.replace("{first}", first).replace("{last}", last) for arg in case.args)]
    before = [docket_command(), *case.before] if case.before else None
    cold: list[float] = []
    cold_peak = warm_peak = 0

    def prepare_run() -> None:
        if case.git_before:
            git(cwd, *case.git_before, env=env)
        if before:
            run_once(before, cwd, env)

    for _ in range(runs):
        shutil.rmtree(cache, ignore_errors=True)
        prepare_run()
        seconds, chars, peak = run_once(cmd, cwd, env, case.stdin)
        cold.append(seconds)
        cold_peak = max(cold_peak, peak)
        landed(cache)
    run_once(cmd, cwd, env, case.stdin)  # fill the cache
    warm = []
    for _ in range(runs):
        prepare_run()
        seconds, _, peak = run_once(cmd, cwd, env, case.stdin)
        warm.append(seconds)
        warm_peak = max(warm_peak, peak)
    return {
        "case": name,
        "records": n,
        "cold": statistics.median(cold),
        "warm": statistics.median(warm),
        "warm_min": min(warm),
        "chars": chars,
        "cold_peak_mb": cold_peak,
        "warm_peak_mb": warm_peak,
    }


def table(rows: list[dict]) -> str:
    """A Markdown table of results."""
    out = [
        "| case | records | cold median (s) | warm median (s) | warm best (s) | output chars | peak MB cold / warm |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r['case']} | {r['records']:,} | {r['cold']:.3f} | {r['warm']:.3f} | {r['warm_min']:.3f} | {r['chars']:,} |"
            f" {r['cold_peak_mb']} / {r['warm_peak_mb']} |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help="case names (default: all)")
    parser.add_argument("--sizes", type=int, nargs="+", help="ledger sizes (default: each case's own)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per measurement (default 5)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--docket", help="the docket executable to time (default: the one beside this Python)")
    parser.add_argument(
        "--files", type=int, default=gen.FILES, help=f"source files scopes point into (default {gen.FILES})"
    )
    parser.add_argument("--json", type=Path, default=OUT / "results.json", help="where to write the rows as JSON")
    args = parser.parse_args()
    global DOCKET, FILES
    DOCKET, FILES = args.docket, args.files
    if args.list:
        for name, case in CASES.items():
            print(f"{name:16} docket {' '.join(case.args):40} {case.note}")
        return
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        sys.exit(f"bench: unknown case(s) {', '.join(unknown)}; --list shows them")
    # A normal install has bytecode; this environment may forbid writing it (PYTHONDONTWRITEBYTECODE).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(HERE.parent / "docket_git")], check=True)
    rows = []
    for name in args.cases or list(CASES):
        case = CASES[name]
        for n in args.sizes or case.sizes:
            row = measure(name, case, n, runs=args.runs, seed=args.seed)
            rows.append(row)
            print(f"{name} {n}: cold {row['cold']:.3f} s, warm {row['warm']:.3f} s", file=sys.stderr, flush=True)
    machine = f"{os.cpu_count()} cores, Python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.2f}"
    if DOCKET:
        machine += f", {DOCKET}"
    print(f"\n{machine}; median of {args.runs} runs\n")
    print(table(rows))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine,
        "runs": args.runs,
        "docket": DOCKET or "beside this Python",
        "rows": rows,
    }
    args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
