"""Bad ledgers: a clear `docket: line N: ...`, a non-zero exit, and every byte left alone."""

from __future__ import annotations

import json

import pytest

from .conftest import Repo, rec

CASES = [
    ("invalid_json", [rec("c1"), rec("c2"), "{oops"], "line 3: invalid JSON: "),
    ("duplicate", [rec("c2"), rec("c2")], "line 2: c2: duplicate ID"),
    ("out_of_order", [rec("c5"), rec("c3")], "line 2: c3: global sequence must increase monotonically"),
    (
        "forward_ref",
        [rec("d1", depends_on=["c2"]), rec("c2")],
        "line 1: d1: depends_on refers to unknown or later ID 'c2'",
    ),
    ("cross_kind", [rec("d1"), rec("c2", supersedes=["d1"])], "line 2: c2: supersedes target 'd1' is a different kind"),
    (
        "already_retired",
        [rec("c1"), rec("c2", supersedes=["c1"]), rec("c3", supersedes=["c1"])],
        "line 3: c3: supersedes target 'c1' is already retired",
    ),
    (
        "answers_non_question",
        [rec("c1"), rec("c2", answers=["c1"])],
        "line 2: c2: answers target 'c1' is not a question",
    ),
    ("schema1", [{"id": "d1", "state": "settled", "question": "q", "answer": "a"}], "line 1: schema: legacy format"),
    ("unknown_field", [rec("c1", mood="sunny")], "line 1: record: unknown field(s): mood"),
    ("question_state", [rec("q1", state="resolved")], "line 1: q1: questions have recorded state open"),
    (
        "deleted_line",
        [rec("c2"), rec("d3", depends_on=["c1"])],
        "line 2: d3: depends_on refers to unknown or later ID 'c1'; no earlier line records c1: if its line was"
        " deleted by hand, restore it",
    ),
    (
        "missing_state",
        [{k: v for k, v in rec("c1").items() if k != "state"}],
        "line 1: c1: state is missing; a claim records one of: unassessed, accepted, disputed, rejected",
    ),
    (
        "lone_surrogate",
        [rec("c1"), rec("c2", "half \ud800 a pair")],
        "line 2: c2: text holds U+D800, half of a UTF-16 surrogate pair, which is not text and cannot be stored",
    ),
    ("lone_surrogate_scope", [rec("c1", scope=["src/\udcff.py"])], "line 1: c1: scope holds U+DCFF"),
    (
        "conflict_markers",
        [rec("c1"), "<<<<<<< HEAD", rec("c2"), "=======", rec("c3"), ">>>>>>> topic"],
        "line 2: git conflict marker",
    ),
]


@pytest.mark.parametrize(("name", "lines", "message"), CASES, ids=[c[0] for c in CASES])
def test_reads_and_writes_refuse_with_the_line(repo: Repo, name: str, lines: list, message: str) -> None:
    before = repo.write_ledger(lines)
    for args in (("list",), ("show", "c1"), ("claim", "new"), ("list", "--json")):
        result = repo.docket(*args)
        assert result.code == 1, (args, result.err)
        assert result.err.startswith(f"docket: {message}"), result.err
        assert repo.ledger.read_bytes() == before
    check = repo.docket("check")
    assert check.code == 1
    assert "fault(s)" in check.out
    assert repo.ledger.read_bytes() == before


def test_schema1_message_names_migrate(repo: Repo) -> None:
    repo.write_ledger([{"id": "d1", "state": "open", "question": "Which?"}])
    assert "run 'docket migrate' to convert it to schema 2" in repo.docket("list").err


def test_check_lists_every_fault_then_advice(repo: Repo) -> None:
    repo.write_ledger([rec("c2"), "not json", rec("c2"), rec("c1"), rec("c6", answers=["c2"])])
    result = repo.docket("check")
    assert result.code == 1
    assert result.out.splitlines() == [
        f"docket: {repo.ledger} has 4 fault(s)",
        "  line 2: invalid JSON: Expecting value (column 1)",
        "  line 3: duplicate id c2, first seen on line 1",
        "  line 4: id c1 does not increase past c2",
        "  line 6: c6: answers target 'c2' is not a question".replace("line 6", "line 5"),
        "Duplicate or out-of-order IDs usually mean two branches recorded separately. "
        "Recover the other branch's ledger and run:",
        "  docket rebase OTHER_LEDGER",
    ]


def test_check_clean_and_missing(repo: Repo, bare_repo: Repo) -> None:
    repo.ok("claim", "one")
    assert repo.ok("check").out == f"docket: {repo.ledger} reads cleanly, 1 record\n"
    result = bare_repo.ok("check")
    assert (
        result.out
        == f"docket: no ledger at {bare_repo.ledger} yet; run 'docket init' to start one (or record with 'docket claim ...')\n"
    )


def test_torn_final_line_is_skipped_reported_and_removed(repo: Repo) -> None:
    repo.ok("claim", "kept")
    good = repo.ledger.read_bytes()
    repo.ledger.write_bytes(good + b'{"schema":2,"kind":"cla')
    listed = repo.docket("list")
    assert listed.code == 0
    assert "c1  unassessed  kept" in listed.out
    assert "line 2: skipped a torn final line" in listed.err
    check = repo.docket("check")
    assert check.code == 1
    assert "line 2: invalid JSON" in check.out and "torn final line" in check.out
    repo.ok("claim", "after")
    assert repo.ledger.read_bytes() == good + repo.ledger.read_bytes()[len(good) :]
    assert [r["text"] for r in repo.records()] == ["kept", "after"]


def test_missing_final_newline_is_repaired(repo: Repo) -> None:
    repo.ledger.write_text(json.dumps(rec("c1")))
    repo.ok("claim", "second")
    assert repo.ledger.read_text().count("\n") == 2
    assert [r["id"] for r in repo.records()] == ["c1", "c2"]


def test_blank_lines_are_ignored(repo: Repo) -> None:
    repo.ledger.write_text("\n" + json.dumps(rec("c1")) + "\n\n" + json.dumps(rec("c4")) + "\n")
    assert repo.ok("list", "--json").json()[1]["id"] == "c4"
    assert repo.ok("claim", "next").out.startswith("c5 ")


def test_non_utf8_line(repo: Repo) -> None:
    repo.ledger.write_bytes(json.dumps(rec("c1")).encode() + b"\n\xff\xfe{}\n")
    result = repo.docket("list")
    assert result.code == 1
    assert result.err.startswith("docket: line 2: invalid JSON: not UTF-8")


@pytest.mark.parametrize(
    ("args", "first_line"),
    [
        (["claim"], "docket: claim: missing argument 'TEXT'"),
        (["claim", "x", "--bogus"], "docket: claim: no such option: --bogus"),
        (["list", "--limit", "3"], "docket: list: no such option: --limit"),
        (["lst"], "docket: no such command 'lst'"),
        (["decision", "x", "--choice", "y", "--pin", "extra"], "docket: decision: got unexpected extra argument"),
        (
            ["claim", "x", "--scope", "a.py", "b.py"],
            "docket: claim: got unexpected extra argument(s) (b.py); an option takes one value (repeat it: --scope a",
        ),
    ],
)
def test_usage_errors_speak_docket_and_point_to_help(repo: Repo, args: list[str], first_line: str) -> None:
    repo.ok("claim", "Existing premise")
    before = repo.ledger.read_bytes()
    result = repo.docket(*args)
    assert result.code == 2
    lines = result.err.splitlines()
    assert lines[0].startswith(first_line), result.err
    assert lines[1].startswith("usage: docket") and "-h' explains every option" in lines[1]
    assert result.out == ""
    assert repo.ledger.read_bytes() == before


def test_every_reading_command_says_the_same_where_there_is_no_ledger(bare_repo: Repo, tmp_path) -> None:
    """In git, list, context and check exit 0 (nothing is wrong) and say how to start one; outside, exit 1."""
    said = f"docket: no ledger at {bare_repo.ledger} yet; run 'docket init' to start one"
    for args in (["list"], ["context"]):
        result = bare_repo.ok(*args)
        assert result.out == "" and result.err.startswith(said), (args, result.err)
    assert bare_repo.ok("list", "--json").out == "[]\n"
    assert bare_repo.ok("check").out.startswith(said)
    outside = tmp_path / "outside"
    outside.mkdir()
    result = bare_repo.docket("list", cwd=outside)
    assert (result.code, result.out, result.err) == (
        1,
        "",
        "docket: no ledger here; run 'docket init' in a git repository\n",
    )


def _everything(repo: Repo) -> dict[str, bytes]:
    """Every file in the clone (git's own aside), with its bytes: what a refused argument must leave alone."""
    return {str(p): p.read_bytes() for p in sorted(repo.path.rglob("*")) if p.is_file() and ".git" not in p.parts}


#: Arguments that are not UTF-8, through the real console script (bytes argv), and the name each refusal gives.
NOT_UTF8 = [
    (["claim", b"bad \xff byte", "--scope", "a"], "TEXT"),
    (["list", "--where", b"\xff"], "--where"),
    (["ledger", "append", "events", '{"operation": "append", "value": 1}', "--txn", b"\xff"], "--txn"),
    (["session", "init", "--system", "s", "--workflow", "w", "--project", b"\xff", "--create-dir"], "--project"),
    (["session", "write", "--step", "1", "--agent", "a", "--status", "completed", "--input", b"\xff"], "--input"),
    (["session", "write", "--step", "1", "--agent", "a", "--status", "completed", b"--output=\xfe"], "--output"),
    (["sql", b"SELECT '\xff'"], "SQL"),
    (["ledger", "query", "events", b"SELECT '\xff'"], "SQL"),
]


@pytest.mark.parametrize(("argv", "name"), NOT_UTF8, ids=[" ".join(map(str, a[:2])) for a, _ in NOT_UTF8])
def test_an_argument_that_is_not_utf8_is_refused_by_name_before_anything_is_written(
    repo: Repo, argv: list, name: str
) -> None:
    import subprocess

    from .conftest import DOCKET

    repo.write_ledger([rec("c1")])
    (repo.path / ".docket" / "config.toml").write_text('[ledgers.events]\ntype = "log"\n')
    repo.ok("session", "init", "--system", "s", "--workflow", "w", "--project", "p", "--create-dir")
    before = _everything(repo)
    proc = subprocess.run([DOCKET, *argv], cwd=repo.path, env=repo.env, capture_output=True)
    err = proc.stderr.decode()
    bad = next(a for a in argv if isinstance(a, bytes))
    shown = repr(bad.partition(b"=")[2] if bad.startswith(b"--") else bad)
    assert proc.returncode == 2, err
    assert err == f"docket: {name}: {shown} is not UTF-8; docket takes text arguments in UTF-8 (nothing was written)\n"
    assert _everything(repo) == before  # no record, session file, .tmp or lock left behind


# -- integers past Python's 4,300-digit conversion limit, and out of range (issue 28) -------------------

HUGE = "9" * 5000


def _tree(repo: Repo) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(repo.path.rglob("*")) if p.is_file() and ".git" not in p.parts}


def test_an_integer_option_of_5000_digits_is_a_range_message(repo: Repo) -> None:
    repo.write_ledger([rec("c1")])
    before = _tree(repo)
    for args in (
        ["context", "--max-chars", HUGE],
        ["context", f"--max-chars={HUGE}"],
        ["context", "--max-chars", "1" + "0" * 18],
        ["sql", "SELECT 1", "--max-rows", HUGE],
    ):
        result = repo.docket(*args)
        assert result.code == 2, (args[:2], result.err)
        flag = args[2].split("=")[0] if args[0] == "sql" else "--max-chars"
        assert result.err.startswith(f"docket: {flag}: a number of "), (args[:2], result.err)
        assert "out of range" in result.err and "Traceback" not in result.err
    result = repo.docket("context", "--max-chars", "twelve")  # Typer's path, through the same conversion
    assert result.code == 2 and result.err == "docket: --max-chars: 'twelve' is not a whole number\n"
    assert _tree(repo) == before


def test_a_citation_line_of_5000_digits_is_a_usage_error(repo: Repo) -> None:
    config = repo.path / ".docket" / "config.toml"
    config.parent.mkdir(exist_ok=True)
    config.write_text('[ledgers.knowledge]\ntype = "notes"\n')
    (repo.path / "file.txt").write_text("one\ntwo\n")
    before = _tree(repo)
    for cite in (f"file.txt:{HUGE}", f"file.txt:1-{HUGE}"):
        result = repo.docket("ledger", "note-add", "knowledge", "--subject", "s", "--note", "n", "--cite", cite)
        assert result.code == 2, result.err
        assert result.err.startswith("docket: --cite 'file.txt:") and "at most 9 digits" in result.err
    assert _tree(repo) == before


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (f"[budget]\ntarget = {HUGE}\n", "an integer is too long"),
        ("[budget]\ntarget = 1000000000000\n", "budget.target must be at most 1,000,000,000"),
        (f'[ledgers.x]\ntype = "log"\nschema = {{ type = "integer", maximum = {HUGE} }}\n', "an integer is too long"),
    ],
    ids=["5000_digits", "too_large", "in_a_ledger_schema"],
)
def test_a_config_integer_out_of_range_is_named(repo: Repo, config: str, expected: str) -> None:
    repo.write_ledger([rec("c1")])
    (repo.path / ".docket" / "config.toml").write_text(config)
    before = _tree(repo)
    for args in (["context"], ["ledger", "list"]):
        result = repo.docket(*args)
        if args == ["ledger", "list"] and "budget" in config:
            continue  # the typed ledgers' reader skips [budget]; a briefing reads it
        assert result.code == 1, (args, result.err)
        assert result.err.startswith("docket: ") and expected in result.err, (args, result.err)
        assert "internal error" not in result.err and "Traceback" not in result.err
    assert _tree(repo) == before
