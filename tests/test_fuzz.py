"""Fuzzing every reader: random and mutated bytes get a ``docket: ...`` line, never a traceback.

Each target writes one fuzzed input (a ledger, a staged ledger, merge-driver
sides, a schema-1 ledger, ``config.toml``, a batch file, a typed ledger, a
session log, a hook payload, a command-line argument as bytes, a SQL statement)
into a real repository and runs the commands that read it. Invariants: no ``Traceback`` and no ``internal error`` on stderr; a
non-zero exit is 1 or 2 and says ``docket: ...``; hooks always exit 0; every
file in the repository is byte-identical afterwards (merge-driver: base and
theirs).

Most examples run ``docket_git.entry.main`` in a forked child of the test
process (the imports are already done, so an example costs milliseconds, and
``os._exit``/``sys.exit`` end only the child); ``test_real_processes`` runs a
few of the nastiest inputs through the real console script.

Profiles: the normal suite runs a short one; ``DOCKET_FUZZ_PROFILE=long``
runs 40 times as many examples per target::

    DOCKET_FUZZ_PROFILE=long nice pytest -n 2 -q tests/test_fuzz.py
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import docket_git.cli.main  # noqa: F401  (imported before forking: children start warm)
from docket_git import entry
from tests.conftest import DOCKET

LONG = os.environ.get("DOCKET_FUZZ_PROFILE") == "long"
EXAMPLES = 200 if LONG else 5
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=not LONG,
)
AGENTS = ("claude", "codex", "copilot", "gemini", "cursor")
AGENT_DIR = Path(__file__).parent / "agents"


# -- running docket -------------------------------------------------------------------------


def forked(args: list[str], cwd: Path, stdin: bytes = b"") -> tuple[int, bytes, bytes]:
    """(exit code, stdout, stderr) of ``docket ARGS`` run by entry.main in a forked child."""
    with tempfile.TemporaryFile() as inp, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        inp.write(stdin)
        inp.seek(0)
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 70
            try:
                os.chdir(cwd)
                for fd, handle in ((0, inp), (1, out), (2, err)):
                    os.dup2(handle.fileno(), fd)
                sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
                sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8")
                sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8")
                sys.argv = ["docket", *args]
                try:
                    entry.main(args)
                    code = 0
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                except BaseException:
                    traceback.print_exc()
                    code = 71
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return code, out.read(), err.read()


def real(args: list[str], cwd: Path, stdin: bytes = b"") -> tuple[int, bytes, bytes]:
    proc = subprocess.run([DOCKET, *args], cwd=cwd, input=stdin, capture_output=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def tree(root: Path) -> dict[str, str]:
    """Digest of every file docket might touch in the repository (lock files and .git excepted)."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(".git/") or rel == ".git" or rel.endswith(".lock") or path.is_dir():
            continue
        out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def check_outcome(args: list[str], result: tuple[int, bytes, bytes], *, hook: bool = False) -> None:
    code, _out, err = result
    text = err.decode("utf-8", errors="replace")
    assert "Traceback" not in text and "internal error" not in text, (args, text[-2000:])
    if hook:
        assert code == 0, (args, code, text)
        return
    assert code in (0, 1, 2), (args, code, text[-2000:])
    if code != 0 and args[0] not in ("check", "doctor") and args[:2] != ["ledger", "check"]:  # reports on stdout
        assert text.startswith("docket: ") or "\ndocket: " in text, (args, code, text[-2000:])


def run_all(root: Path, commands: list[tuple[list[str], bytes]], *, runner=forked, hook: bool = False) -> None:
    before = tree(root)
    for args, stdin in commands:
        check_outcome(args, runner(args, root, stdin), hook=hook)
        assert tree(root) == before, f"{args} changed a file"


# -- inputs ---------------------------------------------------------------------------------


@st.composite
def mutated(draw, seed: bytes) -> bytes:
    """seed (a valid file) with 1-3 of: truncation, flipped bytes, '['*N, a duplicated key, CR, NUL, huge numbers."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, max(len(data), 0)))
        kind = draw(st.sampled_from(["truncate", "flip", "nest", "dupkey", "cr", "nul", "huge", "insert", "splice"]))
        if kind == "truncate":
            del data[at:]
        elif kind == "flip" and data:
            i = min(at, len(data) - 1)
            data[i] ^= draw(st.integers(1, 255))
        elif kind == "nest":
            n = draw(st.sampled_from([33, 1000, 100_000]))
            data[at:at] = b"[" * n
        elif kind == "dupkey":
            start = data.find(b'{"', at) if data.find(b'{"', at) >= 0 else data.find(b'{"')
            if start >= 0:
                end = data.find(b",", start)
                if end > start:
                    data[end + 1 : end + 1] = data[start + 1 : end + 1]
        elif kind == "cr":
            nl = data.find(b"\n", at)
            data[nl if nl >= 0 else len(data) : nl if nl >= 0 else len(data)] = b"\r"
        elif kind == "nul":
            data[at:at] = b"\0"
        elif kind == "huge":
            data[at:at] = draw(st.sampled_from([b"9" * 5000, b"1e999", b"-0", b"18446744073709551617"]))
        elif kind == "insert":
            data[at:at] = draw(st.binary(max_size=20))
        elif kind == "splice" and data:
            a, b = sorted((at, draw(st.integers(0, len(data)))))
            data[at:at] = data[a:b]
    return bytes(data)


def fuzzed(seed: bytes):
    return st.one_of(st.binary(max_size=300), mutated(seed), mutated(seed))


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    """A repository with one of everything, made once by the real docket, and the valid bytes of each file."""
    tmp = tmp_path_factory.mktemp("fuzz-template")
    home = tmp / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCKET_", "GIT_", "CLAUDE_", "CODEX_"))}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(tmp / "cache"), XDG_STATE_HOME=str(tmp / "state"))
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(home / ".gitconfig"), DOCKET_AUTHOR="tester")
    env["PATH"] = str(Path(DOCKET).parent) + os.pathsep + env.get("PATH", "")
    (home / ".gitconfig").write_text("[user]\n\tname = Test\n\temail = t@example.com\n")
    root = tmp / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True, env=env)

    def run(*args: str, stdin: bytes = b"") -> None:
        proc = subprocess.run([DOCKET, *args], cwd=root, input=stdin, capture_output=True, timeout=120, env=env)
        assert proc.returncode == 0, (args, proc.stderr)

    run("init", "--no-git-hooks")
    run("claim", "The cache is per user", "--scope", "src/cache.py")
    run("decision", "Keep retries in Redis", "--choice", "Redis", "--rationale", "fast", "--depends-on", "c1")
    run("question", "How long do keys live?")
    (root / ".docket" / "config.toml").write_bytes(
        b'[context]\nmax_chars = 4000\n\n[ledgers.events]\ntype = "log"\n\n[ledgers.rows]\ntype = "table"\nkey = "id"\n'
    )
    run("ledger", "append", "events", "-", stdin=b'{"operation": "append", "value": "a"}\n' * 3)
    run("ledger", "append", "rows", '{"operation": "insert", "value": {"id": "r1", "n": 1}}')
    run("session", "init", "--system", "s", "--workflow", "w", "--project", "p", "--create-dir")
    run(
        "session",
        "write",
        "--step",
        "1",
        "--agent",
        "a",
        "--status",
        "completed",
        "--input",
        "i",
        "--output",
        '{"x": 1}',
    )
    session = next((root / "context-ledger").glob("*.md"))
    seeds = {
        "ledger": (root / ".docket" / "ledger.jsonl").read_bytes(),
        "config": (root / ".docket" / "config.toml").read_bytes(),
        "typed": (root / ".docket" / "ledgers" / "events.jsonl").read_bytes(),
        "rows": (root / ".docket" / "ledgers" / "rows.jsonl").read_bytes(),
        "session": session.read_bytes(),
        "session_name": session.name.encode(),
        "schema1": b"".join(
            json.dumps(r).encode() + b"\n"
            for r in (
                {"id": "d1", "ts": "2025-03-01T10:00:00Z", "state": "open", "question": "Where?", "answer": ""},
                {"id": "d2", "ts": "2025-03-02T10:00:00Z", "state": "settled", "question": "Redis", "answer": "yes"},
            )
        ),
        "batch": b'{"kind": "claim", "text": "one"}\n{"kind": "decision", "text": "two", "choice": "c", '
        b'"rationale": "r", "depends_on": ["@1"]}\n',
    }
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", "seed"], cwd=root, check=True, env=env)
    return root, seeds


@pytest.fixture
def seeded(template, tmp_path: Path, env: dict[str, str]) -> tuple[Path, dict[str, bytes]]:
    """A fresh copy of the template repository for one test."""
    source, seeds = template
    root = tmp_path / "repo"
    shutil.copytree(source, root, symlinks=True)
    return root, seeds


# -- targets --------------------------------------------------------------------------------


def test_ledger_readers(seeded) -> None:
    root, seeds = seeded
    ledger = root / ".docket" / "ledger.jsonl"
    commands = [(["list"], b""), (["check"], b""), (["context"], b""), (["show", "c1"], b""), (["list", "--json"], b"")]

    @FUZZ
    @given(fuzzed(seeds["ledger"]))
    def each(data: bytes) -> None:
        ledger.write_bytes(data)
        run_all(root, commands)

    each()


def test_check_staged(seeded) -> None:
    root, seeds = seeded
    ledger = root / ".docket" / "ledger.jsonl"

    @FUZZ
    @given(fuzzed(seeds["ledger"]))
    def each(data: bytes) -> None:
        ledger.write_bytes(data)
        subprocess.run(["git", "add", ".docket/ledger.jsonl"], cwd=root, check=True)
        run_all(root, [(["check", "--staged"], b"")])

    each()


def test_merge_driver(seeded, tmp_path: Path) -> None:
    root, seeds = seeded
    sides = tmp_path / "sides"
    sides.mkdir()

    @FUZZ
    @given(fuzzed(seeds["ledger"]), fuzzed(seeds["ledger"]), fuzzed(seeds["ledger"]))
    def each(base: bytes, ours: bytes, theirs: bytes) -> None:
        for name, data in (("O", base), ("A", ours), ("B", theirs)):
            (sides / name).write_bytes(data)
        args = ["merge-driver", str(sides / "O"), str(sides / "A"), str(sides / "B"), ".docket/ledger.jsonl"]
        code, _out, err = forked(args, root)
        text = err.decode(errors="replace")
        assert "Traceback" not in text and "internal error" not in text, text[-2000:]
        assert code in (0, 1), (code, text)
        assert (sides / "O").read_bytes() == base and (sides / "B").read_bytes() == theirs

    each()


def test_migrate_dry_run(seeded) -> None:
    root, seeds = seeded
    ledger = root / ".docket" / "ledger.jsonl"

    @FUZZ
    @given(fuzzed(seeds["schema1"]))
    def each(data: bytes) -> None:
        ledger.write_bytes(data)
        run_all(root, [(["migrate", "--dry-run"], b"")])

    each()


def test_config(seeded) -> None:
    root, seeds = seeded
    config = root / ".docket" / "config.toml"
    commands = [(["context"], b""), (["ledger", "list"], b""), (["list"], b"")]

    @FUZZ
    @given(st.one_of(fuzzed(seeds["config"]), st.just(b"a = " + b"[" * 5000), st.just(b"a = { b = " * 800)))
    def each(data: bytes) -> None:
        config.write_bytes(data)
        run_all(root, commands)

    each()


def test_batch_files(seeded, tmp_path: Path) -> None:
    root, seeds = seeded
    batch = tmp_path / "batch.jsonl"

    @FUZZ
    @given(fuzzed(seeds["batch"]))
    def each(data: bytes) -> None:
        batch.write_bytes(data)
        run_all(root, [(["record", "--dry-run", str(batch)], b""), (["record", "--dry-run", "-"], data)])

    each()


def test_typed_replay(seeded) -> None:
    root, seeds = seeded
    events = root / ".docket" / "ledgers" / "events.jsonl"
    rows = root / ".docket" / "ledgers" / "rows.jsonl"
    commands = [
        (["ledger", "check", "events"], b""),
        (["ledger", "query", "events", "SELECT count(*) FROM records"], b""),
        (["ledger", "check", "rows"], b""),
        (["ledger", "query", "rows", "SELECT count(*) FROM records"], b""),
    ]

    @FUZZ
    @given(fuzzed(seeds["typed"]), fuzzed(seeds["rows"]))
    def each(one: bytes, two: bytes) -> None:
        events.write_bytes(one)
        rows.write_bytes(two)
        run_all(root, commands)

    each()


def test_session_log_parser(seeded) -> None:
    root, seeds = seeded
    session = root / "context-ledger" / seeds["session_name"].decode()
    rules = '[{"from_step": 1, "fields": ["x"], "mode": "complete"}]'
    commands = [
        (["session", "show", str(session)], b""),
        (["session", "show", str(session), "--step", "1"], b""),
        (["session", "read", "--file", str(session), "--step-destination", "2", "--context-map", rules], b""),
        (["check"], b""),
    ]

    @FUZZ
    @given(fuzzed(seeds["session"]))
    def each(data: bytes) -> None:
        session.write_bytes(data)
        run_all(root, commands)

    each()


def _payloads(agent: str, root: Path) -> list[bytes]:
    out = []
    for path in sorted((AGENT_DIR / agent).glob("*-*.json")):
        body = "\n".join(line for line in path.read_text().splitlines() if not line.startswith("//"))
        out.append(body.replace("$CWD", str(root)).encode())
    return out


@pytest.mark.parametrize("agent", AGENTS)
def test_hook_stdin(seeded, agent: str) -> None:
    root, _ = seeded
    payloads = _payloads(agent, root)

    @FUZZ
    @given(st.one_of(st.binary(max_size=200), st.sampled_from(payloads).flatmap(mutated)))
    def each(data: bytes) -> None:
        commands = [(["hook", "session-start", "--for", agent], data), (["hook", "pre-tool-use", "--for", agent], data)]
        run_all(root, commands, hook=True)

    each()


#: Commands that take a value a user types; "{}" is where the fuzzed argument goes (issue 28: bytes argv,
#: 5,000-digit integers).
ARGUMENT_SLOTS = [
    ["claim", "{}", "--scope", "a"],
    ["list", "--where", "{}"],
    ["show", "{}"],
    ["context", "--max-chars", "{}"],
    ["context", "--query", "{}"],
    ["sql", "SELECT 1", "--max-rows", "{}"],
    ["sql", "SELECT 1", "--timeout", "{}"],
    ["ledger", "append", "events", '{"operation": "append", "value": 1}', "--txn", "{}"],
    ["ledger", "query", "events", "{}"],
    ["session", "init", "--system", "s", "--workflow", "w", "--project", "{}"],
    ["session", "write", "--step", "2", "--agent", "a", "--status", "completed", "--input", "{}", "--output", "o"],
]
HOSTILE_ARGUMENTS = [b"\xff", b"bad \xfe\xff byte", b"\xed\xa0\x80", b"9" * 5000, b"\0"]


def test_hostile_arguments(seeded) -> None:
    """Arguments as bytes (not UTF-8, lone surrogates, NUL, 5,000 digits) in every slot: a message, files kept."""
    root, _ = seeded

    def one(slot: list[str], value: bytes) -> None:
        args = [os.fsdecode(value) if a == "{}" else a for a in slot]  # as Python decodes a process's argv
        before = tree(root)
        result = forked(args, root)
        check_outcome(args, result)
        if result[0] != 0 or slot[0] not in ("claim", "ledger", "session"):  # a write may succeed
            assert tree(root) == before, f"{slot} changed a file"

    for slot in ARGUMENT_SLOTS:  # every slot with every listed value, then random bytes
        for value in HOSTILE_ARGUMENTS:
            one(slot, value)

    @FUZZ
    @given(st.sampled_from(ARGUMENT_SLOTS), st.binary(max_size=40))
    def each(slot: list[str], value: bytes) -> None:
        one(slot, value)

    each()


#: Statements that reach for a file, run forever or return without bound; {out} is a directory that must
#: stay empty.
HOSTILE_SQL = [
    "ATTACH '{out}/a.db' AS a",
    "VACUUM INTO '{out}/v.db'",
    "VACUUM",
    "DETACH main",
    "PRAGMA query_only = OFF",
    "PRAGMA writable_schema = ON",
    "CREATE TEMP TABLE t (x)",
    "SELECT load_extension('{out}/x')",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT x FROM c",
    "SELECT printf('%.*c', 900000000, 'x')",
    "SELECT zeroblob(2000000000)",
]


def test_hostile_sql(seeded, tmp_path: Path) -> None:
    """Every statement, and mutations of it, through docket sql and ledger query: no file anywhere, bounded."""
    root, _ = seeded
    out = tmp_path / "out"
    out.mkdir()
    statements = [s.format(out=out) for s in HOSTILE_SQL]

    def one(sql: str) -> None:
        bound = ["--timeout", "0.5"] if "RECURSIVE" in sql else []  # the others must be refused as they are
        run_all(root, [(["sql", sql, *bound], b""), (["ledger", "query", "events", sql, *bound], b"")])
        assert list(out.iterdir()) == []

    for statement in statements:  # every listed statement as it is, then mutations
        one(statement)

    @FUZZ
    @given(st.sampled_from(statements).map(str.encode).flatmap(mutated))
    def each(statement: bytes) -> None:
        one(os.fsdecode(statement))

    each()


NASTY = [b"[" * 100_000 + b"\n", b'{"id": "c1", "id": "c1"}\n', b"\0" * 64, b"\xff\xfe" * 50, b"9" * 5000 + b"\n"]


@pytest.mark.parametrize("data", NASTY, ids=["deep", "dupkey", "nul", "notutf8", "huge"])
def test_real_processes(seeded, data: bytes) -> None:
    """The same invariants through the real console script, for a few of the worst inputs."""
    root, _ = seeded
    (root / ".docket" / "ledger.jsonl").write_bytes(data)
    commands = [(["list"], b""), (["context"], b""), (["check"], b""), (["record", "--dry-run", "-"], data)]
    commands += [(["hook", "session-start", "--for", a], data) for a in ("claude", "codex")]
    before = tree(root)
    for args, stdin in commands:
        check_outcome(args, real(args, root, stdin), hook=args[0] == "hook")
        assert tree(root) == before
