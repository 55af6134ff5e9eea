"""Recording through the real console script in real git repositories."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from docket_git.ledger import model

from .conftest import DOCKET, Repo


def test_version_everywhere(repo: Repo) -> None:
    assert repo.ok("--version").out == "docket 0.1.0 (docket-git)\n"
    assert repo.git("docket", "--version") == "docket 0.1.0 (docket-git)\n"
    proc = subprocess.run([sys.executable, "-m", "docket_git", "--version"], capture_output=True, text=True)
    assert proc.stdout == "docket 0.1.0 (docket-git)\n"


def test_global_sequence_and_output(repo: Repo) -> None:
    assert (
        repo.ok("claim", "The API needs a key", "--scope", "src/api.py").out == "c1  unassessed  The API needs a key\n"
    )
    assert repo.ok("question", "Which store?").out == "q2  open  Which store?\n"
    out = repo.ok("decision", "Keep keys in Redis", "--choice", "Redis", "--answers", "q2").out
    assert out == "d3  adopted  Keep keys in Redis\n"
    assert [r["id"] for r in repo.records()] == ["c1", "q2", "d3"]


def test_git_subcommand_is_the_same_app(repo: Repo) -> None:
    repo.git("docket", "claim", "Recorded through git")
    assert repo.records()[0]["text"] == "Recorded through git"


def test_lines_are_exactly_the_seed_field_set(repo: Repo) -> None:
    repo.ok("claim", "A", "--state", "accepted", "--evidence", "docs/api.md", "--pin")
    repo.ok(
        "decision", "Use B for A", "--choice", "B", "--alternative", "C", "--supports", "c1", "--decided-by", "lead"
    )
    repo.ok("question", "Why?")
    common = set(model.REQUIRED_FIELDS) | set(model.COMMON_DEFAULTS)
    for line in repo.ledger.read_text().splitlines():
        record = json.loads(line)
        expected = common | ({"choice", "alternatives", "decided_by"} if record["kind"] == "decision" else set())
        assert set(record) == expected
    assert repo.records()[0]["evidence"] == [{"ref": "docs/api.md"}]
    assert repo.records()[0]["pinned"] is True


def test_relation_flags(repo: Repo) -> None:
    for text in ("one", "two", "three"):
        repo.ok("claim", text)
    repo.ok("question", "open one")
    repo.ok(
        "decision",
        "Adopt the plan",
        "--choice",
        "plan A",
        "--supports",
        "c1,c2",
        "--supports",
        "c3",
        "--depends-on",
        "c1,c2",
        "--depends-on",
        "c3",
        "--answers",
        "q4",
        "--evidence",
        '{"ref":"run 12","commit":"abc123"}',
    )
    record = repo.records()[-1]
    assert record["supports"] == [["c1", "c2"], ["c3"]]
    assert record["depends_on"] == ["c1", "c2", "c3"]
    assert record["answers"] == ["q4"]
    assert record["evidence"] == [{"ref": "run 12", "commit": "abc123"}]


def test_flags_a_kind_cannot_carry_are_usage_errors(repo: Repo) -> None:
    for args in (
        ("claim", "x", "--choice", "y"),
        ("claim", "x", "--depends-on", "c1"),
        ("question", "x", "--state", "open"),
        ("question", "x", "--answers", "q1"),
        ("decision", "x"),  # --choice is required
        ("claim", "x", "--state", "adopted"),
    ):
        result = repo.docket(*args)
        assert result.code == 2, args
    assert repo.ledger.read_bytes() == b""


def test_write_time_refusals_leave_the_ledger_alone(repo: Repo) -> None:
    repo.ok("claim", "Base")
    before = repo.ledger.read_bytes()
    cases = [
        (("decision", "Use Postgres?", "--choice", "Postgres"), "docket question"),
        (("decision", "Postgres", "--choice", "postgres "), "decision text must carry more than the choice"),
        (("decision", "Store sessions", "--choice", "Redis", "--alternative", "redis"), "must name an option"),
        (("claim", "X", "--supersedes", "q9"), "refers to unknown or later ID 'q9'"),
    ]
    for args, fragment in cases:
        result = repo.docket(*args)
        assert result.code == 1
        assert result.err.startswith("docket: ")
        assert fragment in result.err
    assert repo.ledger.read_bytes() == before


def test_hints_go_to_stderr(repo: Repo) -> None:
    result = repo.ok("decision", "Ship it", "--choice", "now")
    assert "docket: d1 recorded without --scope: this record competes for room in every briefing" in result.err
    assert "docket: d1 recorded without --alternative: name what the choice beat" in result.err
    assert "docket: d1 recorded without --rationale" in result.err
    assert "docket: d1 recorded without --cost" in result.err
    (repo.path / "src").mkdir()
    (repo.path / "src/a.py").write_text("")
    quiet = repo.ok("claim", "Fine", "--scope", "src/a.py", "--rationale", "why", "--cost", "little")
    assert quiet.err == ""


def test_author_session_and_branch(repo: Repo) -> None:
    repo.git("checkout", "-q", "-b", "feature/x")
    repo.env.update(DOCKET_AUTHOR="alice", CLAUDE_SESSION_ID="s-42")
    repo.ok("claim", "one")
    del repo.env["DOCKET_AUTHOR"]
    repo.env["AI_AGENT"] = "claude_code_1"
    repo.ok("claim", "two")
    del repo.env["AI_AGENT"]
    repo.env.pop("USER", None)
    result = repo.ok("claim", "three")  # git's identity before "unknown"
    assert "could not detect an author" not in result.err
    repo.env["GIT_CONFIG_GLOBAL"] = "/dev/null"
    result = repo.ok("claim", "four")
    assert 'could not detect an author; recording "unknown". Set DOCKET_AUTHOR' in result.err
    records = repo.records()
    assert [r["author"] for r in records] == ["alice", "claude", "Test", "unknown"]
    assert records[0]["session"] == "s-42"
    assert {r["branch"] for r in records} == {"feature/x"}
    assert records[0]["ts"].endswith("+00:00") and len(records[0]["ts"]) == 25


def test_dry_run_and_json(repo: Repo) -> None:
    result = repo.ok("claim", "Maybe", "--dry-run")
    assert result.out == "c1  unassessed  Maybe\n"
    assert "nothing written" in result.err
    assert repo.ledger.read_bytes() == b""
    shown = repo.ok("claim", "Really", "--json").json()
    assert shown == repo.records()[0]


def test_scopes_are_normalised_and_hostile_paths_refused(repo: Repo) -> None:
    (repo.path / "src").mkdir()
    repo.ok("claim", "a", "--scope", "./src//api.py", "--scope", "src/", "--scope", "billing", "--scope", "src/*.py")
    assert repo.records()[0]["scope"] == ["src/api.py", "src/", "billing", "src/*.py"]
    repo.ok("claim", "b", "--scope", str(repo.path / "src"))
    assert repo.records()[1]["scope"] == ["src/"]
    for hostile in ("../etc/passwd", "/etc/passwd", "src/../../x"):
        result = repo.docket("claim", "c", "--scope", hostile)
        assert result.code == 2, hostile
        assert "outside the repository" in result.err
    assert len(repo.records()) == 2


def test_subdirectories_share_the_root_ledger(repo: Repo) -> None:
    sub = repo.path / "a" / "b"
    sub.mkdir(parents=True)
    repo.ok("claim", "from below", cwd=sub)
    assert repo.records()[0]["text"] == "from below"
    assert repo.ok("where", cwd=sub).out == f"{repo.ledger}  (project, exists)\n"


def test_first_write_creates_the_ledger_at_the_repo_root(bare_repo: Repo) -> None:
    sub = bare_repo.path / "pkg"
    sub.mkdir()
    bare_repo.ok("claim", "created on demand", cwd=sub)
    assert bare_repo.records()[0]["id"] == "c1"


def test_outside_git_without_a_ledger(tmp_path, env) -> None:
    outside = tmp_path / "nowhere"
    outside.mkdir()
    proc = subprocess.run([DOCKET, "claim", "x"], cwd=outside, env=env, capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr == "docket: no ledger here; run 'docket init' in a git repository\n"
    proc = subprocess.run([DOCKET, "init"], cwd=outside, env=env, capture_output=True, text=True)
    assert proc.returncode == 1
    assert "not in a git repository" in proc.stderr
    assert not (outside / ".docket").exists()


def test_init_is_idempotent(repo: Repo) -> None:
    ignore = repo.path / ".docket" / ".gitignore"
    assert ignore.read_text() == "*.lock\n*.migrating\n*.schema1\n.*.tmp\n"
    result = repo.ok("init")
    assert result.out.splitlines()[0] == f"docket: already project-local at {repo.ledger}"
    assert ignore.read_text() == "*.lock\n*.migrating\n*.schema1\n.*.tmp\n"


def test_init_adds_missing_ignore_patterns_and_keeps_the_users(repo: Repo) -> None:
    ignore = repo.path / ".docket" / ".gitignore"
    ignore.write_text("*.lock\nscratch/")  # an older init's file, edited by hand, no final newline
    result = repo.ok("init")
    assert f"docket: added *.migrating, *.schema1, .*.tmp to {ignore}" in result.out
    assert ignore.read_text() == "*.lock\nscratch/\n*.migrating\n*.schema1\n.*.tmp\n"


def test_batch_record_with_references(repo: Repo) -> None:
    repo.ok("claim", "existing")
    batch = "\n".join(
        json.dumps(x)
        for x in [
            {"kind": "claim", "text": "Latency budget is 50ms", "state": "accepted", "scope": ["svc/"]},
            {"kind": "question", "text": "Cache or not?"},
            {"kind": "decision", "text": "Cache reads", "choice": "LRU", "depends_on": ["@1"], "answers": ["@2"]},
            {"kind": "claim", "text": "Old premise holds", "supports": [["c1", "@1"]]},
        ]
    )
    result = repo.ok("record", "-", input=batch)
    assert result.out.splitlines()[0] == "c2  accepted  Latency budget is 50ms"
    records = repo.records()
    assert records[3]["depends_on"] == ["c2"] and records[3]["answers"] == ["q3"]
    assert records[4]["supports"] == [["c1", "c2"]]
    shown = repo.ok("show", "q3", "--json").json()
    assert shown["state"] == "resolved"


def test_batch_is_all_or_nothing(repo: Repo) -> None:
    repo.ok("claim", "existing")
    before = repo.ledger.read_bytes()
    bad = [
        (
            '{"kind":"claim","text":"ok"}\n{"kind":"decision","text":"x","choice":"y","depends_on":["@3"]}',
            "@3 names a record that is not earlier",
        ),
        (
            '{"kind":"claim","text":"ok"}\n{"kind":"claim","text":"x","answers":["c1"]}',
            "batch line 2: claim: answers target 'c1' is not a question",
        ),
        ('{"kind":"claim","text":"ok"}\n{not json', "batch line 2: invalid JSON"),
        ('{"kind":"claim","id":"c9","text":"ok"}', "leave 'id' out"),
        ('{"kind":"claim","text":"ok","colour":"red"}', "unknown field(s): colour"),
        ("", "batch is empty"),
    ]
    for text, fragment in bad:
        result = repo.docket("record", input=text)
        assert result.code == 1, text
        assert fragment in result.err, result.err
        assert repo.ledger.read_bytes() == before
    missing = repo.docket("record", str(repo.path / "nope.jsonl"))
    assert missing.code == 2 and "cannot read" in missing.err


def test_fast_entry_does_not_import_typer(repo: Repo) -> None:
    code = "import sys\nfrom docket_git.entry import main\nmain(sys.argv[1:])\n"
    for args in (["merge-driver"], ["hook", "session-start"], ["hook", "pre-tool-use"]):
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", code, *args],
            cwd=repo.path,
            env=repo.env,
            input=b"{}",
            capture_output=True,
        )
        lines = proc.stderr.decode().splitlines()
        imported = {line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:")}
        assert "docket_git.entry" in imported, lines[-3:]
        assert not imported & {"typer", "click", "rich", "pygit2"}, (args, imported & {"typer", "click", "rich"})


def test_branch_in_a_worktree_and_when_detached(repo: Repo, tmp_path: Path) -> None:
    repo.ok("claim", "on main")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "ledger")
    tree = tmp_path / "wt"
    repo.git("worktree", "add", "-q", "-b", "topic/wt", str(tree))
    repo.ok("claim", "from the worktree", cwd=tree)
    repo.git("checkout", "-q", "--detach")
    repo.ok("claim", "detached")
    wt_records = [json.loads(line) for line in (tree / ".docket" / "ledger.jsonl").read_text().splitlines()]
    assert [r["branch"] for r in wt_records] == ["main", "topic/wt"]
    assert repo.records()[-1]["branch"] == ""


def test_blank_text_and_control_characters_are_refused(repo: Repo) -> None:
    before = repo.ledger.read_bytes()
    for args, said in (
        (["claim", "   "], "text is blank"),
        (["claim", "a\x01b"], "text holds a control character"),
        (["decision", "Pick one", "--choice", " "], "choice is blank"),
        (["claim", "fine", "--rationale", "bell\x07"], "rationale holds a control character"),
    ):
        result = repo.docket(*args)
        assert result.code == 1 and said in result.err, (args, result.err)
        assert repo.ledger.read_bytes() == before
    repo.ok("claim", "two\nlines\tand a tab")
    assert repo.ok("list", "--oneline").out == "c1    unassessed two ⏎ lines\tand a tab\n"


def test_batch_advice_names_json_fields_and_errors_name_the_line(repo: Repo) -> None:
    result = repo.ok("record", "-", input='{"kind":"claim","text":"one"}\n')
    assert 'c1 recorded without "rationale"' in result.err and "--rationale" not in result.err
    bad_ref = repo.docket(
        "record", "-", input='{"kind":"claim","text":"a"}\n{"kind":"claim","text":"b","supports":[["@5"]]}\n'
    )
    assert bad_ref.code == 1
    assert bad_ref.err.startswith("docket: batch line 2: supports: @5 names a record that is not earlier")
    cut = repo.docket("record", "-", input='{"kind":"claim","text":"unterminated\n')
    assert cut.code == 1 and "batch line 1: invalid JSON: Unterminated string starting at (column" in cut.err
    unknown = repo.docket("record", "-", input='{"kind":"claim","text":"a"}\n{"kind":"claim","text":"b","bogus":1}\n')
    assert unknown.code == 1 and "batch line 2" in unknown.err and "bogus" in unknown.err


def test_a_supersession_says_what_it_blocked_and_reopened(repo: Repo) -> None:
    repo.ok("claim", "Redis is available", "--state", "accepted")
    repo.ok("question", "Where do keys live?")
    repo.ok("decision", "Keys in Redis", "--choice", "Redis", "--depends-on", "c1", "--answers", "q2")
    plain = repo.ok("claim", "Unrelated", "--state", "accepted")
    assert "blocked" not in plain.err and "open again" not in plain.err
    err = repo.ok("claim", "Redis is gone", "--state", "accepted", "--supersedes", "c1").err
    effects = [line for line in err.splitlines() if "blocked" in line or "open again" in line]
    assert effects == [
        "docket: d3 is now blocked: it depends on c1, which c5 supersedes",
        "docket: q2 is open again: its answer d3 is blocked by c1",
    ]


def test_an_answer_that_resolves_nothing_is_named(repo: Repo) -> None:
    repo.ok("question", "Which store?")
    err = repo.ok("claim", "Maybe files", "--state", "rejected", "--answers", "q1").err
    assert "docket: c2 answers q1 but resolves nothing: it is rejected; only an accepted claim resolves" in err
    err = repo.ok("decision", "Keep files on disk", "--choice", "files", "--state", "revoked", "--answers", "q1").err
    assert "d3 answers q1 but resolves nothing: it is revoked" in err
    dry = repo.ok("claim", "Maybe S3", "--answers", "q1", "--dry-run").err
    assert "c4 answers q1 but resolves nothing: it is unassessed" in dry
    ok = repo.ok("claim", "Files it is", "--state", "accepted", "--answers", "q1").err
    assert "resolves nothing" not in ok
    assert [r["id"] for r in repo.records()] == ["q1", "c2", "d3", "c4"]


def test_a_batch_reports_effects_too(repo: Repo) -> None:
    repo.ok("claim", "Base", "--state", "accepted")
    repo.ok("decision", "Built on base", "--choice", "x", "--depends-on", "c1")
    batch = repo.path.parent / "b.jsonl"
    batch.write_text('{"kind":"claim","text":"Base is wrong","state":"accepted","supersedes":["c1"]}\n')
    err = repo.ok("record", str(batch)).err
    assert "docket: d2 is now blocked: it depends on c1, which c3 supersedes" in err


def test_a_component_scope_that_names_a_path_says_how_to_scope_the_path(repo: Repo) -> None:
    (repo.path / "a.py").write_text("")
    (repo.path / "src").mkdir()
    err = repo.ok("claim", "Root file rule", "--scope", "a.py", "--scope", "src", "--scope", "billing").err
    assert "--scope 'a.py' is a component name, which matches query text only, though a.py exists here" in err
    assert "write '[a].py'" in err and "write 'src/'" in err
    assert "'billing'" not in err
    assert repo.records()[0]["scope"] == ["a.py", "src", "billing"]
    repo.ok("claim", "Root file rule, as a path", "--scope", "[a].py")
    out = repo.ok("context", "--file", "a.py").out
    assert "### c2 " in out and "### c1 " not in out
    batch = repo.path.parent / "batch.jsonl"
    batch.write_text('{"kind":"claim","text":"From a batch","scope":["a.py"]}\n')
    assert "\"scope\" 'a.py' is a component name" in repo.ok("record", str(batch)).err
