"""Issue 31: the first week of a new user and of a Docket user moving over, without a rough edge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from docket_git.errors import LedgerError
from docket_git.ledger import model, store, validate

from .conftest import Repo, rec


def _migrated(rid: str, overrides: object) -> dict:
    """A record as a schema-1 migration leaves it, with ``overrides`` in the shape given."""
    record = rec(rid)
    record["legacy"] = {
        "source_id": "d" + rid[1:],
        "raw": {"id": "d" + rid[1:], "question": record["text"]},
        "relation_map": {
            **{k: [] for k in validate.LEGACY_SOURCE_KEYS},
            **{f"mapped_{r}": record.get(r, []) for r in model.RELATIONS},
            "overrides": overrides,
        },
    }
    return record


# -- 1: a ledger Docket's migrator wrote (overrides as a sorted list) ---------------------------------------


@pytest.mark.parametrize("overrides", [[], ["supersedes"], ["answers", "supports"], {}, {"supersedes": []}])
def test_both_shapes_of_legacy_overrides_pass_every_path(overrides: object) -> None:
    record = _migrated("d1", overrides)
    text = json.dumps(record)
    assert validate.check_line(json.loads(text)) == "d1"
    assert store.parse(Path("ledger.jsonl"), text.encode() + b"\n").records == [record]  # bulk validation


@pytest.mark.parametrize("overrides", [["supports", "answers"], ["supports", "supports"], ["because"], [1], "x"])
def test_a_list_of_overrides_is_docket_s_sorted_relation_names_only(overrides: object) -> None:
    with pytest.raises(validate.Invalid, match="sorted list of relation names"):
        validate.check_line(_migrated("d1", overrides))
    text = json.dumps(_migrated("d1", overrides))
    with pytest.raises(LedgerError, match="sorted list of relation names"):
        store.parse(Path("ledger.jsonl"), text.encode() + b"\n")  # bulk validation


def test_a_ledger_docket_migrated_reads_checks_and_rebases_byte_for_byte(repo: Repo) -> None:
    data = repo.write_ledger([_migrated("d1", []), _migrated("d2", ["supports"])])
    assert "d1" in repo.ok("list").out
    repo.ok("check")
    assert "record d2" in repo.ok("context").out
    other = repo.path.parent / "other.jsonl"
    other.write_bytes(data + (json.dumps(rec("c3")) + "\n").encode())
    repo.ok("rebase", str(other))
    assert repo.ledger.read_bytes().startswith(data)
    assert repo.records()[-1]["id"] == "c3"


# -- 3: the version line, bare docket, an unknown command ---------------------------------------------------


def test_version_keeps_docket_first_and_bare_docket_prints_help(repo: Repo) -> None:
    for args in (["--version"], ["--version", "list"]):  # the entry point and Typer
        assert repo.ok(*args).out.split()[:2] == ["docket", "0.1.0"]
    bare = repo.docket()
    assert bare.code == 0 and bare.out.startswith("Usage: docket [OPTIONS] COMMAND") and bare.err == ""
    assert "context" in bare.out
    unknown = repo.docket("nosuch")
    assert unknown.code == 2 and unknown.err.startswith("docket: no such command 'nosuch'") and unknown.out == ""


# -- 8: messages that mislead -------------------------------------------------------------------------------


def test_a_filter_that_matches_nothing_is_not_an_empty_ledger(repo: Repo) -> None:
    repo.write_ledger([rec("c1"), rec("c2")])
    result = repo.ok("list", "--state", "rejected")
    assert result.out == ""
    assert result.err == "docket: no record matches --state rejected; 'docket list' shows every current one\n"
    assert "--find 'no such'" in repo.ok("list", "--find", "no such").err


def test_a_refused_record_names_its_kind_not_an_id_never_allocated(repo: Repo) -> None:
    before = repo.write_ledger([rec("c1"), rec("c2")])
    result = repo.docket("claim", "")
    assert (result.code, result.err) == (1, "docket: claim: text must be a non-empty string\n")
    assert repo.docket("question", "Who?", "--supersedes", "c1").err == (
        "docket: question: supersedes target 'c1' is a different kind\n"
    )
    assert repo.ledger.read_bytes() == before


@pytest.mark.parametrize(
    "args",
    [
        ["list"],
        ["list", "--json"],
        ["context"],
        ["check"],
        ["graph", "--out", "g.html"],
        ["export"],
        ["migrate"],
        ["sql", "SELECT 1"],
        ["claim", "x"],
        ["where"],
        ["show", "c1"],
    ],
)
def test_outside_a_repository_every_command_is_an_error(args: list[str], bare_repo: Repo, tmp_path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    result = bare_repo.docket(*args, cwd=outside)
    assert result.code == 1, (args, result)
    assert result.out == "" and len(result.err.splitlines()) == 1 and result.err.startswith("docket: "), result
    assert list(outside.iterdir()) == []


def test_since_that_names_nothing_is_a_usage_error(repo: Repo) -> None:
    repo.ok("claim", "a premise")
    repo.git("add", "-A")
    repo.git("commit", "-qm", "one")
    result = repo.docket("context", "--since", "nonsense")
    assert result.code == 2 and result.out == ""
    assert result.err.startswith("docket: --since 'nonsense' names no record and no commit here")
    assert "since: HEAD" in repo.ok("context", "--since", "HEAD").out
    stale = repo.ok("context", "--since", "c9@abcdef12")  # a well-formed unknown baseline still degrades
    assert "unknown or stale; printing a full briefing" in stale.err


def _refused_cherry_pick(repo: Repo) -> None:
    """A cherry-pick whose ledger merge the driver refused (strict mode: both sides superseded c1)."""
    repo.git("config", "merge.docket.strict", "true")
    repo.ok("claim", "base")
    repo.git("add", "-A")
    repo.git("commit", "-qm", "base")
    repo.git("checkout", "-qb", "side")
    repo.ok("claim", "on side", "--supersedes", "c1")
    repo.git("commit", "-qam", "side")
    repo.git("checkout", "-q", "main")
    repo.ok("claim", "on main", "--supersedes", "c1")
    repo.git("commit", "-qam", "main")
    repo.git("cherry-pick", "side", check=False)
    assert "UU .docket/ledger.jsonl" in repo.git("status", "--short")


def test_the_briefing_during_a_refused_cherry_pick_does_not_recommend_resolve_conflict(repo: Repo) -> None:
    _refused_cherry_pick(repo)
    assert repo.docket("resolve-conflict").code == 1
    payload = {"source": "startup", "session_id": "s1", "cwd": str(repo.path)}
    out = repo.ok("hook", "session-start", "--for", "claude", input=json.dumps(payload)).out
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    first = context.splitlines()[0]
    assert "Run 'docket resolve-conflict'" not in first
    assert "'docket resolve-conflict' cannot merge it: " in first and "git cherry-pick --abort" in first


def test_the_guard_on_a_typed_ledger_names_ledger_append(repo: Repo) -> None:
    for target, way in (
        (".docket/ledgers/repos.jsonl", "docket ledger append"),
        (".docket/ledger.jsonl", "docket claim"),
    ):
        payload = {"tool_name": "Write", "tool_input": {"file_path": target, "content": "{}"}, "cwd": str(repo.path)}
        out = json.loads(repo.ok("hook", "pre-tool-use", "--for", "claude", input=json.dumps(payload)).out)
        reason = out["hookSpecificOutput"]["permissionDecisionReason"]
        assert way in reason and (way == "docket claim") == ("docket claim" in reason), reason


def test_typed_ledger_messages(repo: Repo) -> None:
    (repo.path / ".docket" / "config.toml").write_text('[ledgers.repos]\ntype = "map"\n')
    result = repo.docket("ledger", "map-put", "repos", "K", "notjson")
    assert result.code == 1 and "quote it, e.g. '\"a string\"' or '{\"a\": 1}'" in result.err
    assert "operation" not in result.err
    missing = repo.docket("ledger", "append", "repos", '{"key": "k"}')
    assert missing.code == 1 and "None" not in missing.err and "it is missing" in missing.err
    repo.ok("ledger", "map-put", "repos", "K", '"v"')
    query = repo.docket("ledger", "query", "repos", "SELECT * FROM nope")
    assert query.err == "docket: query failed: no such table: nope\n"
    assert "read-only" in repo.docket("ledger", "query", "repos", "CREATE TABLE t (a)").err


def test_record_help_names_the_argument_not_its_python_type(repo: Repo) -> None:
    for command in ("claim", "decision", "question", "record", "resolve", "rebase"):
        out = repo.ok(command, "--help").out
        assert "<str>" not in out and "<list[str]>" not in out, out
    assert "  TEXT  The proposition" in repo.ok("claim", "--help").out


# -- 9: list shows the derived state ------------------------------------------------------------------------


def test_list_shows_a_blocked_decision_and_help_explains_the_arrow(repo: Repo) -> None:
    repo.ok("claim", "premise four", "--state", "accepted")
    repo.ok("decision", "use the queue", "--choice", "q", "--depends-on", "c1", "--supports", "c1")
    repo.ok("claim", "premise four is wrong", "--state", "rejected", "--supersedes", "c1")
    out = repo.ok("list").out
    assert "d2  adopted, blocked by c1  use the queue  <- c1\n" in out
    assert "d2    adopted, blocked by c1 use the queue" in repo.ok("list", "--oneline").out
    assert repo.ok("list", "--json").json()[0]["state"] == "adopted"  # the data keeps its fields
    assert "'<- c1,c2 | d5' lists what supports the record" in " ".join(repo.ok("list", "--help").out.split())


# -- 12: a size limit on record text ------------------------------------------------------------------------


@pytest.mark.parametrize("char", ["a", "é", "長"])
def test_the_text_limit_is_one_rule_on_every_path(char: str) -> None:
    from docket_git.ledger import canonical

    fits = char * (validate.MAX_TEXT_BYTES // len(char.encode()))
    over = fits + char
    for text, ok in ((fits, True), (over, False)):
        line = canonical.dumps(rec("c1", text=text))
        data = line.encode() + b"\n"
        if ok:
            assert validate.check_line(json.loads(line)) == "c1"
            assert store.parse(Path("ledger.jsonl"), data).records[0]["text"] == text
        else:
            with pytest.raises(validate.Invalid, match=r"at most 32768 \(32 KiB\)"):
                validate.check_line(json.loads(line))
            with pytest.raises(LedgerError, match=r"at most 32768 \(32 KiB\)"):
                store.parse(Path("ledger.jsonl"), data)


def test_a_record_past_the_limit_is_refused_with_a_clear_message(repo: Repo) -> None:
    before = repo.write_ledger([rec("c1")])
    result = repo.docket("claim", "x" * 40000)
    assert result.code == 1 and result.out == ""
    assert result.err == (
        "docket: claim: text is 40000 bytes; a record's text holds at most 32768 (32 KiB): "
        "state it briefly and cite the long material with --evidence\n"
    )
    assert repo.ledger.read_bytes() == before
    repo.write_ledger([rec("c1"), rec("c2", text="y" * 40000)])
    check = repo.docket("check")
    assert check.code == 1 and "c2: text is 40000 bytes" in check.out + check.err


# -- 10: the record hints can be silenced -------------------------------------------------------------------


def test_hints_false_silences_the_record_hints_and_nothing_else(repo: Repo) -> None:
    assert "recorded without --rationale" in repo.ok("claim", "one premise").err
    config = repo.path / ".docket" / "config.toml"
    config.write_text("hints = false\n\n[budget]\ntarget = 9000\n")
    quiet = repo.ok("claim", "another premise")
    assert (quiet.out, quiet.err) == ("c2  unassessed  another premise\n", "")
    blocked = repo.ok("claim", "a correction", "--supersedes", "c1")
    assert blocked.err == ""
    config.write_text('hints = "no"\n')
    assert repo.docket("context").err == "docket: hints must be true or false\n"
    assert "recorded without" in repo.ok("claim", "a third premise").err  # a bad config never fails a write


def test_the_demo_no_longer_hides_stderr() -> None:
    from pathlib import Path

    demo = (Path(__file__).resolve().parent.parent / "scripts" / "demo").read_text()
    assert "2>/dev/null\n" not in demo and "hints = false" in demo


# -- 6: the author before init ------------------------------------------------------------------------------


def test_the_first_record_before_init_is_attributed_to_git_s_user(bare_repo: Repo) -> None:
    env = {k: v for k, v in bare_repo.env.items() if k not in ("DOCKET_AUTHOR", "USER")}
    first = Repo(bare_repo.path, env)
    bare_repo.git("config", "user.name", "Ada Lovelace")
    result = first.ok("claim", "the first premise")
    assert "could not detect an author" not in result.err
    assert first.records()[0]["author"] == "Ada Lovelace"


# -- 2: the auto-scope is kept when a record is scoped to a changed file ------------------------------------


def test_auto_scope_is_kept_for_a_record_scoped_to_a_changed_root_file(repo: Repo) -> None:
    """The seed: a bare component name matches query text only, never a file. So the claim scoped to the
    component 'tracked.py' is told at record time how to scope the file, and the one scoped to the file
    (a root file's path spelling, '[t]racked.py') keeps the auto-scope of a change to it."""
    (repo.path / "tracked.py").write_text("x\n")
    hint = repo.ok("claim", "the component premise", "--scope", "tracked.py").err
    assert "is a component name, which matches query text only" in hint and "'[t]racked.py'" in hint
    repo.ok("claim", "the tracked premise", "--scope", "[t]racked.py")
    repo.ok("claim", "an unrelated premise")
    repo.git("add", "-A")
    repo.git("commit", "-qm", "one")
    (repo.path / "tracked.py").write_text("y\n")
    for args in ([], ["--auto-scope"]):
        out = repo.ok("context", *args).out
        assert "# files: tracked.py\n" in out, out
        assert "### c2 | claim" in out and "### c1 " not in out


# -- 4 and 14: docs that match the behaviour ----------------------------------------------------------------

_DOCS = __import__("pathlib").Path(__file__).resolve().parent.parent / "docs"


def test_docs_index_lists_each_page_once() -> None:
    import re

    links = re.findall(r"^- \[([^\]]+)\]", (_DOCS / "README.md").read_text(), re.M)
    assert len(links) == len(set(links)), links


def test_coming_from_docket_says_where_is_supported_and_it_is(repo: Repo) -> None:
    page = " ".join((_DOCS / "coming-from-docket.md").read_text().split())
    assert "and `--where` queries (they wait" not in page
    assert "`docket list --where QUERY` and `docket export --where QUERY`" in page
    repo.ok("claim", "a premise", "--scope", "src/pay/api.py")
    assert repo.ok("list", "--where", "kind:claim").out.startswith("c1  unassessed  a premise")
    assert '"c1"' in repo.ok("export", "--where", "kind:claim").out


# -- 7: the briefing during a conflict ----------------------------------------------------------------------


def test_the_conflict_briefing_names_the_repository_and_the_missing_driver(repo: Repo, tmp_path) -> None:
    import subprocess

    repo.ok("claim", "base")
    repo.git("add", "-A")
    repo.git("commit", "-qm", "base")
    subprocess.run(["git", "clone", "-q", str(repo.path), str(tmp_path / "shop")], check=True, env=repo.env)
    clone = Repo(tmp_path / "shop", repo.env)  # no docket init here: git merges the ledger as text
    clone.git("checkout", "-qb", "side")
    clone.ok("claim", "on side")
    clone.git("commit", "-qam", "side")
    clone.git("checkout", "-q", "main")
    clone.ok("claim", "on main")
    clone.git("commit", "-qam", "main")
    clone.git("merge", "side", check=False)
    assert "<<<<<<<" in clone.ledger.read_text()
    payload = {"source": "startup", "session_id": "s1", "cwd": str(clone.path)}
    out = clone.ok("hook", "session-start", "--for", "claude", input=json.dumps(payload)).out
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "# docket: shop | " in context, context[:600]
    assert "merge driver not set up" in context, context[:600]


def test_the_tour_s_typed_ledger_is_declared_and_the_hint_names_the_type(repo: Repo) -> None:
    hint = repo.docket("ledger", "map-put", "repos", "api", '{"stars": 3}')
    assert hint.code == 1 and 'add [ledgers.repos] with type = "map" to' in hint.err
    readme = (_DOCS.parent / "README.md").read_text()
    declare = next(line for line in readme.splitlines() if "[ledgers.repos]" in line)
    import subprocess

    subprocess.run(declare.removeprefix("$ ").split("  #")[0], shell=True, cwd=repo.path, check=True)
    repo.ok("ledger", "map-put", "repos", "api", '{"stars": 3}')
    assert "Not yet: `--where`" not in (_DOCS / "graph.md").read_text()
    # The README tour and sessions.md's first example run in tests/test_docs_examples.py.
    for page in (_DOCS.parent / "README.md", _DOCS / "sessions.md"):
        assert "<!-- examples: run -->" in page.read_text()
    assert "--create-dir" in (_DOCS / "sessions.md").read_text()
    assert repo.docket("session", "load-last", "--project", "billing").code == 1  # as the page now says


# -- 14: `scope:DIR/` selects what is scoped under DIR, as a user reads it ------------------------------------


def test_where_scope_dir_selects_records_scoped_under_it_in_list_and_export(repo: Repo) -> None:
    for sub in ("src/billing/cache", "src/billing2", "src/pay"):
        (repo.path / sub).mkdir(parents=True)
    for text, scope in [
        ("a file inside", "src/billing/cache.py"),  # c1: under DIR
        ("a subdirectory", "src/billing/cache/"),  # c2: under DIR
        ("the directory itself", "src/billing/"),  # c3
        ("a directory above", "src/"),  # c4: covers DIR, as before
        ("a glob inside", "src/billing/*.py"),  # c5: under DIR
        ("a sibling with a longer name", "src/billing2/x.py"),  # c6: not under DIR
        ("elsewhere", "src/pay/api.py"),  # c7
        ("a component", "billing"),  # c8: a name, never a path
    ]:
        repo.ok("claim", text, "--scope", scope, "--rationale", "r", "--cost", "c")
    listed = repo.ok("list", "--where", "scope:src/billing/", "--json").json()
    assert [r["id"] for r in listed] == ["c1", "c2", "c3", "c4", "c5"]
    exported = repo.ok("export", "--format", "json", "--where", "scope:src/billing/").json()
    assert [e["id"] for e in exported["entries"]] == ["c1", "c2", "c3", "c4", "c5"]
    # A path without the trailing / still means that path: the records covering it, as before.
    covering = repo.ok("list", "--where", "scope:src/billing/cache.py", "--json").json()
    assert [r["id"] for r in covering] == ["c1", "c3", "c4", "c5"]
    assert [r["id"] for r in repo.ok("list", "--where", "-scope:src/billing/", "--json").json()] == ["c6", "c7", "c8"]
