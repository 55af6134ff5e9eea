"""The Typer-free ``docket list`` equals Typer's, byte for byte, and never imports Typer.

Each call runs twice on the same ledger: through the console script
(``entry.py`` routes a plain ``list`` to ``cli/listing``) and through the
Typer app directly, which runs the same executor. Output, stderr and exit
code must be identical.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from docket_git.cli import listing

from .conftest import Repo, rec

TYPER = [sys.executable, "-c", "import sys; from docket_git.cli.main import run; run(sys.argv[1:])"]


def seed(repo: Repo) -> None:
    """Every shape the listing prints: choices, rationales, OR supports, retired, blocked, resolved, line breaks."""
    repo.write_ledger(
        [
            rec("c1", "Cache hits are cheap", state="accepted", scope=["src/cache.py"], rationale="measured"),
            rec("c2", "Line one\nline two\r\nthree", state="disputed", pinned=True),
            rec("q3", "Where do keys live? ünïcødé ⏎", scope=["src/keys/"]),
            rec("d4", "Use Redis", choice="Redis\nor not", depends_on=["c1"], supports=[["c1"], ["c2", "c1"]]),
            rec("c5", "Keys live in the vault on Straße 1", state="accepted", answers=["q3"]),
            rec("c6", "Cache hits are not cheap", state="accepted", supersedes=["c1"], rationale="re-measured"),
            rec("d7", "Revoked choice", choice="x", state="revoked", author="ana", branch="feature/x"),
            rec("q8", "Still open " + "long " * 40),
        ]
    )
    listed = {v["id"]: v for v in repo.ok("list", "--superseded", "--json").json()}
    assert len(listed) == 8
    assert (listed["c1"]["retired_by"], listed["q3"]["state"], listed["d4"]["applicable"]) == ("c6", "resolved", False)


CALLS = [
    [],
    ["--json"],
    ["--oneline"],
    ["--oneline", "--superseded"],
    ["--superseded", "--json"],
    ["--kind", "decision"],
    ["--kind=claim", "--json"],
    ["--state", "resolved", "--json"],
    ["--state", "accepted", "--kind", "claim", "--oneline"],
    ["--find", "CACHE"],
    ["--find", "nothing-matches-this"],
    ["--find", "nothing-matches-this", "--json"],
    ["--where", "kind:decision -is:blocked", "--json"],
    ["--where", "is:retired"],
    ["--where=scope:src/cache.py cache", "--superseded", "--json"],
    ["--where", "author:ana", "--kind", "decision", "--kind", "claim"],
    ["--kind", "bogus"],
    ["--state", "maybe", "--json"],
    ["--where", "nosuchfield:x"],
    ["--where", '"unclosed'],
    ["positional"],
    ["--jsn"],
    ["--json=yes"],
    ["--kind"],
    ["--where", "-kind:claim"],
    ["--help"],
]


def both(repo: Repo, args: list[str], env: dict[str, str] | None = None) -> tuple[tuple, tuple]:
    env = env or repo.env
    fast = subprocess.run(["docket", "list", *args], cwd=repo.path, env=env, capture_output=True)
    slow = subprocess.run([*TYPER, "list", *args], cwd=repo.path, env=env, capture_output=True)
    return (fast.returncode, fast.stdout, fast.stderr), (slow.returncode, slow.stdout, slow.stderr)


@pytest.mark.parametrize("args", CALLS, ids=[" ".join(c) or "(bare)" for c in CALLS])
def test_light_route_and_typer_agree(repo: Repo, args: list[str]) -> None:
    seed(repo)
    fast, slow = both(repo, args)
    assert fast == slow
    if "--json" in args and fast[0] == 0:
        listed = json.loads(fast[1])
        assert fast[1].decode() == json.dumps(listed, indent=2, ensure_ascii=False) + "\n"


def test_find_without_where_matches_as_the_query_path_does(repo: Repo) -> None:
    """A plain ``--find`` skips the query language; its matching equals the ``--where`` path's."""
    seed(repo)
    found = {}
    for needle in ("CACHE", "strasse", "ÜNÏ", "line TWO", "nowhere"):
        plain = repo.ok("list", "--find", needle, "--superseded", "--json").out
        assert plain == repo.ok("list", "--find", needle, "--where", "", "--superseded", "--json").out, needle
        found[needle] = [v["id"] for v in json.loads(plain)]
    assert found == {"CACHE": ["c1", "c6"], "strasse": ["c5"], "ÜNÏ": ["q3"], "line TWO": ["c2"], "nowhere": []}


def test_oneline_truncates_to_the_terminal_width_both_ways(repo: Repo) -> None:
    seed(repo)
    fast, slow = both(repo, ["--oneline"], {**repo.env, "COLUMNS": "40"})
    assert fast == slow
    assert max(len(line) for line in fast[1].decode().splitlines()) == 40


def test_no_ledger_both_ways(bare_repo: Repo) -> None:
    for args in ([], ["--json"], ["--where", "kind:claim", "--json"], ["--where", "bad:x"]):
        fast, slow = both(bare_repo, args)
        assert fast == slow
    assert both(bare_repo, ["--json"])[0][1] == b"[]\n"


def test_the_parser_takes_plain_calls_and_leaves_the_rest_to_typer() -> None:
    taken = {" ".join(c) for c in CALLS if listing.COMMAND.parse(c) is not None}
    assert {" ".join(c) for c in CALLS} - taken == {
        "positional",
        "--jsn",
        "--json=yes",
        "--kind",
        "--where -kind:claim",
        "--help",
    }
    assert listing.COMMAND.parse(["--kind=claim", "--json", "--where", "x y"]) == {
        "kind": "claim",
        "state": None,
        "find": None,
        "where": "x y",
        "superseded": False,
        "oneline": False,
        "as_json": True,
    }


def test_the_typer_command_is_built_from_the_declaration() -> None:
    import typer.main

    from docket_git.cli.main import app

    command = typer.main.get_command(app).commands["list"]  # type: ignore[attr-defined]
    flags = [p.opts[0] for p in command.params if p.opts[0] not in ("-h", "--help")]
    assert flags == [opt.flag for opt in listing.COMMAND.options]
    assert command.help == listing.COMMAND.help


@pytest.mark.parametrize("args", [["--json"], ["--oneline", "--superseded"], ["--where", "kind:claim"]])
def test_a_plain_list_never_imports_typer(repo: Repo, args: list[str]) -> None:
    seed(repo)
    proc, imported = repo.imports("list", *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout
    assert "docket_git.cli.listing" in imported
    assert not {"typer", "click", "rich", "pydantic", "pygit2", "docket_git.cli.main"} & imported
