"""The Typer-free route of ``docket ledger append|query`` and ``docket session write`` equals Typer's.

Each call runs twice on the same repository state: through the console
script (``entry.py`` takes the light route when its parser takes the
arguments) and through the Typer app directly. Output, stderr, exit code and
every file under ``.docket`` and ``context-ledger`` must agree, once
timestamps (and, without ``--txn``, the random record IDs) are set aside.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from docket_git.cli import ledger_fast, session_fast

from .conftest import Repo
from .typed_helpers import declare

TYPER = [sys.executable, "-c", "import sys; from docket_git.cli.main import run; run(sys.argv[1:])"]
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?(Z|\+00:00)")
RANDOM_ID = re.compile(
    r"ldg-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}|local:[0-9a-f]{32}"
)  # a record ID, and the random transaction ID a write without --txn prints in its result
NOTE_OP = {"operation": "note", "subject": "s", "note": "n", "reason": "r",
           "citations": [{"type": "repository", "path": "a.txt", "start_line": 1}]}  # fmt: skip


@pytest.fixture
def typed(repo: Repo) -> Repo:
    declare(repo)
    (repo.path / "a.txt").write_text("one\ntwo\n")
    repo.git("add", "a.txt")
    repo.git("commit", "-q", "-m", "a")
    for name, operation in (
        ("findings", {"operation": "insert", "value": {"id": "f1", "severity": "low"}}),
        ("metrics", {"operation": "increment", "name": "runs", "amount": 2}),
        ("knowledge", NOTE_OP),
    ):
        repo.ok("ledger", "append", name, json.dumps(operation), "--txn", f"seed-{name}")
    repo.ok("session", "init", "--system", "s", "--workflow", "w", "--project", "p", "--create-dir")
    repo.ok("session", "write", "--step", "1", "--agent", "a", "--status", "completed", "--input", "i", "--output", "o")
    (repo.path / "in.txt").write_text("input from a file\n")
    return repo


def files(repo: Repo) -> dict[str, bytes]:
    out = {}
    for base in (repo.path / ".docket", repo.path / "context-ledger"):
        for path in sorted(base.rglob("*")):
            if path.is_file() and not path.name.endswith(".lock"):
                out[str(path.relative_to(repo.path))] = path.read_bytes()
    return out


def restore(repo: Repo, saved: dict[str, bytes]) -> None:
    for base in (repo.path / ".docket", repo.path / "context-ledger"):
        for path in base.rglob("*"):
            if path.is_file() and not path.name.endswith(".lock") and str(path.relative_to(repo.path)) not in saved:
                path.unlink()
    for name, data in saved.items():
        (repo.path / name).write_bytes(data)


def comparable(text: str, *, random_ids: bool) -> str:
    """Text without timestamps; typed records without their sha (it hashes the timestamp)."""
    lines = []
    for line in text.splitlines():
        if line.startswith('{"id":"ldg-'):
            record = json.loads(line)
            del record["sha"], record["timestamp"]
            record["parents"] = len(record["parents"])  # the heads' shas hash timestamps too
            if isinstance(record["payload"], dict) and "id" in record["payload"]:
                record["id"] = "<random>"  # gh-aw's format: a random envelope ID, the record ID in the payload
            line = json.dumps(record, sort_keys=True)
        elif line.startswith("{") and '"ts":' in line:
            record = json.loads(line)
            del record["ts"]
            line = json.dumps(record, sort_keys=True)
        line = STAMP.sub("<time>", line)
        lines.append(RANDOM_ID.sub("<id>", line) if random_ids else line)
    return "\n".join(lines)


def both_ways(repo: Repo, args: list[str], stdin: str = "") -> None:
    random_ids = args[:2] == ["ledger", "append"] and not any(a.startswith("--txn") for a in args)
    before = files(repo)
    fast = repo.docket(*args, input=stdin)
    fast_files = files(repo)
    restore(repo, before)
    slow = subprocess.run([*TYPER, *args], cwd=repo.path, env=repo.env, input=stdin, capture_output=True, text=True)
    slow_files = files(repo)
    assert (fast.code, comparable(fast.err, random_ids=random_ids)) == (
        slow.returncode,
        comparable(slow.stderr, random_ids=random_ids),
    )
    assert comparable(fast.out, random_ids=random_ids) == comparable(slow.stdout, random_ids=random_ids)
    assert sorted(fast_files) == sorted(slow_files)
    for name in fast_files:
        assert comparable(fast_files[name].decode(), random_ids=random_ids) == comparable(
            slow_files[name].decode(), random_ids=random_ids
        ), name
    restore(repo, before)


def write(step: str, agent: str, status: str, *extra: str, input: str = "i", output: str = "o") -> list[str]:
    """``docket session write`` with the required options first."""
    head = ["session", "write", "--step", step, "--agent", agent, "--status", status]
    return [*head, "--input", input, "--output", output, *extra]


OP = json.dumps({"operation": "upsert", "value": {"id": "f2", "severity": "high"}})
CALLS: list[tuple[list[str], str]] = [
    (["ledger", "append", "findings", OP, "--txn", "t1"], ""),
    (["ledger", "append", "findings", OP, "--txn=t2"], ""),
    (["ledger", "append", "findings", OP], ""),
    (["ledger", "append", "findings", OP, "--json", "--txn", "t4"], ""),
    (["ledger", "append", "--json", "findings", OP], ""),
    (["ledger", "append", "--txn", "t3", "metrics", '{"operation": "decrement", "name": "runs", "amount": 1}'], ""),
    (["ledger", "append", "findings", '{"operation": "insert", "value": {"id": "f1", "severity": "x"}}'], ""),
    (
        [
            "ledger",
            "append",
            "findings",
            json.dumps({"operation": "insert", "value": {"id": "f1", "severity": "low"}}),
            "--txn",
            "seed-findings",
        ],
        "",
    ),
    (["ledger", "append", "findings", '{"operation": "insert", "value": {"id": 3}}'], ""),
    (["ledger", "append", "findings", "{not json"], ""),
    (["ledger", "append", "findings", '{"operation": "append", "value": NaN}'], ""),
    (["ledger", "append", "nosuch", OP], ""),
    (["ledger", "append", "findings", "-", "--txn", "batch"], OP + "\n\n" + OP.replace("f2", "f3") + "\n"),
    (["ledger", "append", "findings", "-"], OP + "\n{bad\n"),
    (["ledger", "append", "findings", "-"], "\n"),
    (["ledger", "append", "findings"], ""),
    (["ledger", "append", "findings", OP, "extra"], ""),
    (["ledger", "append", "findings", OP, "--txn"], ""),
    (["ledger", "append", "--help"], ""),
    (["ledger", "query", "findings", "SELECT key, json_extract(value, '$.severity') AS s FROM state"], ""),
    (["ledger", "query", "findings", "SELECT * FROM records", "--json"], ""),
    (["ledger", "query", "metrics", "SELECT name, value, NULL AS nothing FROM state"], ""),
    (["ledger", "query", "knowledge", "SELECT note_id, net_votes FROM note_state"], ""),
    (["ledger", "query", "knowledge", "SELECT subject FROM notes", "--json"], ""),
    (["ledger", "query", "findings", "DELETE FROM state"], ""),
    (["ledger", "query", "findings", "SELECT nope FROM"], ""),
    (["ledger", "query", "nosuch", "SELECT 1"], ""),
    (["ledger", "query", "findings"], ""),
    (["ledger", "query", "findings", "SELECT 1", "--json=yes"], ""),
    (write("2", "b", "completed", "--total", "3", "--metrics", '{"tokens": 5}', output='{"answer": 42}'), ""),
    (write("1", "a", "completed", output="o2"), ""),
    (write("2", "b", "pending", "--reasoning-trace", "thought", input="@in.txt", output="-"), "from stdin\n"),
    (write("2", "b", "done", input="-", output="-"), "x"),
    (write("2", "b", "completed", input="@missing.txt"), ""),
    (write("3", "c", "completed", "--record"), ""),
    (write("3", "c", "completed", "--file", "context-ledger/nope.md"), ""),
    (["session", "write", "--step", "3", "--agent", "c", "--input", "i", "--output", "o"], ""),
    (write("3", "c", "completed", "--record=yes"), ""),
]


@pytest.mark.parametrize(("args", "stdin"), CALLS, ids=[" ".join(c[0])[:60] for c in CALLS])
def test_light_route_and_typer_agree(typed: Repo, args: list[str], stdin: str) -> None:
    both_ways(typed, args, stdin)


def test_the_parser_takes_plain_calls_and_leaves_the_rest_to_typer() -> None:
    parsers = {"append": ledger_fast.APPEND, "query": ledger_fast.QUERY, "write": session_fast.WRITE}
    left = {" ".join(args) for args, _ in CALLS if parsers[args[1]].parse(args[2:]) is None}
    assert left == {
        "ledger append findings",
        f"ledger append findings {OP} extra",
        f"ledger append findings {OP} --txn",
        "ledger append --help",
        "ledger query findings",
        "ledger query findings SELECT 1 --json=yes",
        "session write --step 3 --agent c --input i --output o",
        "session write --step 3 --agent c --status completed --input i --output o --record=yes",
    }


@pytest.mark.parametrize(
    "args",
    [
        ["ledger", "append", "findings", OP, "--txn", "imports"],
        ["ledger", "query", "findings", "SELECT count(*) FROM state"],
        ["session", "write", "--step", "9", "--agent", "a", "--status", "completed", "--input", "i", "--output", "o"],
    ],
)
def test_the_light_route_never_imports_typer(typed: Repo, args: list[str]) -> None:
    proc, imported = typed.imports(*args)
    assert proc.returncode == 0, proc.stderr
    light = "docket_git.cli.session_fast" if args[0] == "session" else "docket_git.cli.ledger_fast"
    assert light in imported
    assert not {"typer", "click", "pydantic", "rich", "pygit2", "docket_git.cli.main"} & imported


def test_the_typer_commands_are_built_from_the_declarations() -> None:
    import typer.main

    from docket_git.cli.main import app

    group = typer.main.get_command(app)
    for path, command in (
        (("ledger", "append"), ledger_fast.APPEND),
        (("ledger", "query"), ledger_fast.QUERY),
        (("session", "write"), session_fast.WRITE),
    ):
        built = group.commands[path[0]].commands[path[1]]  # type: ignore[attr-defined]
        options = [
            (p.opts[0], bool(p.is_flag), bool(p.required)) for p in built.params if p.param_type_name == "option"
        ]
        assert options == [(o.flag, o.bare, o.required) for o in command.options]
        arguments = [p.name for p in built.params if p.param_type_name == "argument"]
        assert arguments == [a.dest for a in command.args]


def test_session_write_fast_output_names_the_block(typed: Repo) -> None:
    result = typed.docket(
        "session", "write", "--step", "4", "--agent", "d", "--status", "completed", "--input", "i", "--output", "o"
    )
    assert result.code == 0, result.err
    path, _, rest = result.out.strip().split(":", 2)
    assert Path(typed.path, path).is_file() or Path(path).is_file()
    assert rest == " Step 4 block"
    assert "## [Step 4]" in Path(path if Path(path).is_absolute() else typed.path / path).read_text()
