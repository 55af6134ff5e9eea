"""The Typer-free path for claim/decision/question: same options, same records, same messages as Typer's."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from docket_git.cli import record as record_command

from .conftest import Repo

#: Runs the Typer app directly, bypassing entry.py's fast path.
TYPER = [sys.executable, "-c", "import sys; from docket_git.cli.main import run; run(sys.argv[1:])"]


def typer_params(kind: str) -> list[tuple[str, bool, bool, bool]]:
    """(flag, repeats, bare flag, required) of each option of the Typer command."""
    import typer.main

    from docket_git.cli.main import app

    command = typer.main.get_command(app).commands[kind]  # type: ignore[attr-defined]
    out = []
    for param in command.params:
        if param.param_type_name != "option" or param.opts[0] in ("-h", "--help"):
            continue
        out.append((param.opts[0], bool(param.multiple), bool(param.is_flag), bool(param.required)))
    return out


@pytest.mark.parametrize("kind", ["claim", "decision", "question"])
def test_the_typer_command_is_built_from_the_declaration(kind: str) -> None:
    table = [(o.flag, o.repeat, o.bare, o.required) for o in record_command.COMMANDS[kind].options]
    assert table == typer_params(kind)


CALLS = [
    ["claim", "Plain premise"],
    ["claim", "Accepted", "--state", "accepted", "--scope", "src/a.py", "--scope=src/b/", "--rationale", "r"],
    ["claim", "--state=disputed", "Text after options", "--cost", "breaks", "--pin", "--json"],
    ["claim", "Answer", "--answers", "q3", "--supports", "c1,c2", "--supports", "c2", "--evidence", "https://x/pr/1"],
    ["claim", "Dry", "--dry-run", "--json"],
    ["claim", "Bad state", "--state", "maybe"],
    ["claim", "Unknown ref", "--supports", "c99"],
    ["claim", "Last wins", "--rationale", "first", "--rationale", "second"],
    ["decision", "Use Redis", "--choice", "Redis", "--alternative", "Postgres", "--depends-on", "c1,c2"],
    ["decision", "Revoked", "--choice", "x", "--state", "revoked", "--decided-by", "ana", "--revisit", "Q3"],
    ["decision", "Missing choice"],
    ["question", "Where do keys live?", "--scope", "src/pay/", "--supersedes", "q3"],
    ["question", "Odd", "--answers", "q3"],
    ["claim", "Two", "texts"],
    ["claim", "-x is not an option"],
    ["claim", "x", "--rationale"],
    ["claim", "x", "--pin=yes"],
    ["claim", "x", "--", "y"],
]


def _ledger_lines(repo: Repo) -> list[dict]:
    out = []
    for line in repo.ledger.read_text().splitlines():
        record = json.loads(line)
        record.pop("ts")
        out.append(record)
    return out


@pytest.mark.parametrize("args", CALLS, ids=[" ".join(c)[:40] for c in CALLS])
def test_fast_path_and_typer_agree(repo: Repo, args: list[str]) -> None:
    """Each call runs twice on the same seed ledger: through the console script and through Typer."""
    for seed in (["claim", "c1", "--state", "accepted"], ["claim", "c2"], ["question", "q3"]):
        repo.ok(*seed)
    seed_bytes = repo.ledger.read_bytes()
    fast = repo.docket(*args)
    fast_ledger = _ledger_lines(repo)
    repo.ledger.write_bytes(seed_bytes)
    slow = subprocess.run([*TYPER, *args], cwd=repo.path, env=repo.env, capture_output=True, text=True)
    assert (fast.code, fast.err) == (slow.returncode, slow.stderr)
    assert _strip_ts(fast.out) == _strip_ts(slow.stdout)
    assert fast_ledger == _ledger_lines(repo)


def _strip_ts(out: str) -> str:
    return "\n".join(line for line in out.splitlines() if '"ts":' not in line)


def test_the_parser_takes_plain_calls_and_leaves_the_rest_to_typer() -> None:
    taken = {" ".join(c) for c in CALLS if record_command.COMMANDS[c[0]].parse(c[1:]) is not None}
    left = {" ".join(c) for c in CALLS} - taken
    assert left == {
        "decision Missing choice",
        "question Odd --answers q3",
        "claim Two texts",
        "claim -x is not an option",
        "claim x --rationale",
        "claim x --pin=yes",
        "claim x -- y",
    }
    opts = record_command.COMMANDS["claim"].parse(["--scope=a", "T", "--scope", "b", "--pin"])
    assert opts is not None
    assert (opts["text"], opts["scope"], opts["pin"], opts["state"]) == ("T", ["a", "b"], True, "unassessed")


def test_a_plain_claim_never_imports_typer(repo: Repo) -> None:
    proc, imported = repo.imports("claim", "Quick", "--scope", "a.py")
    assert proc.returncode == 0, proc.stderr
    assert "docket_git.cli.record" in imported
    assert not {"typer", "pydantic", "pygit2"} & imported


BATCH = (
    '{"kind":"claim","text":"Batch premise","scope":["src/a.py"],"state":"accepted"}\n'
    '{"kind":"decision","text":"Batch choice","choice":"x","depends_on":["@1"]}\n'
)


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        (["record"], BATCH),
        (["record", "-", "--json"], BATCH),
        (["record", "--dry-run"], BATCH),
        (["record", "batch.jsonl"], ""),
        (["record", "missing.jsonl"], ""),
        (["record"], '{"kind":"claim","text":"bad","depends_on":["c1"]}\n'),
        (["record", "a", "b"], ""),
    ],
)
def test_record_batches_fast_and_through_typer_agree(repo: Repo, args: list[str], stdin: str) -> None:
    (repo.path / "batch.jsonl").write_text(BATCH)
    seed = repo.ledger.read_bytes()
    fast = repo.docket(*args, input=stdin)
    fast_ledger = repo.ledger.read_bytes()
    repo.ledger.write_bytes(seed)
    slow = subprocess.run([*TYPER, *args], cwd=repo.path, env=repo.env, input=stdin, capture_output=True, text=True)
    assert (fast.code, fast.err) == (slow.returncode, slow.stderr)
    assert [_no_ts_text(line) for line in fast.out.splitlines()] == [
        _no_ts_text(line) for line in slow.stdout.splitlines()
    ]
    assert [_no_ts(line) for line in fast_ledger.splitlines()] == [
        _no_ts(line) for line in repo.ledger.read_bytes().splitlines()
    ]


def _no_ts_text(line: str) -> object:
    """A JSONL output line without its timestamp; any other line as it is."""
    return _no_ts(line.encode()) if line.startswith("{") else line


def _no_ts(line: bytes) -> dict:
    record = json.loads(line)
    record.pop("ts")
    return record


def test_record_batch_options_match_the_typer_command() -> None:
    assert typer_params("record") == [("--dry-run", False, True, False), ("--json", False, True, False)]
    batch = record_command.COMMANDS["record"]
    assert batch.parse(["--json", "-"]) == {"file": "-", "dry_run": False, "as_json": True}
    assert batch.parse(["--dry-run"]) == {"file": "-", "dry_run": True, "as_json": False}
    assert batch.parse(["-h"]) is None
