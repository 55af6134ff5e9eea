"""History: renumbered IDs, baselines from commits and record logs, in real git repositories."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from docket_git.history import baseline as baselines
from docket_git.history import renumbering as history
from tests.conftest import Repo, commit, rec

LEDGER = ".docket/ledger.jsonl"


def digest_of(data: bytes, record_id: str) -> str:
    """The ID@DIGEST digest the briefing prints: SHA-256 of the bytes up to and including the record's line."""
    end = 0
    for line in data.splitlines(keepends=True):
        end += len(line)
        if line.strip() and json.loads(line)["id"] == record_id:
            return hashlib.sha256(data[:end]).hexdigest()[:12]
    raise AssertionError(f"{record_id} not in ledger")


def test_the_merge_renumbered_the_topic_records(merged):
    repo = merged["repo"]
    texts = {r["id"]: r["text"] for r in repo.records()}
    assert texts == {
        "c1": "Shared premise",
        "c2": "Main claim",
        "c3": "Main second claim",
        "c4": "Topic claim",
        "d5": "Topic decides on c4",
    }


def test_show_an_old_id_names_the_new_one(merged):
    repo = merged["repo"]
    result = repo.ok("show", "d3")
    assert result.err.strip() == f"docket: d3 from topic is now d5 (renumbered by merge {merged['merge'][:12]})"
    assert result.out.splitlines()[0].startswith("d5  decision  adopted  Topic decides on c4")


def test_show_id_at_digest_is_unambiguous(merged):
    repo = merged["repo"]
    # c2 exists on main, but the topic's c2 is another record: the digest tells them apart.
    topic_c2 = f"c2@{digest_of(merged['topic_data'], 'c2')}"
    result = repo.ok("show", topic_c2)
    assert "docket: c2 from topic is now c4" in result.err
    assert result.out.splitlines()[0].startswith("c4  claim")
    main_c2 = f"c2@{digest_of(repo.ledger.read_bytes(), 'c2')}"
    result = repo.ok("show", main_c2)
    assert result.err == ""
    assert result.out.splitlines()[0].startswith("c2  claim  unassessed  Main claim")


def test_resolve_prints_old_to_current(merged):
    repo = merged["repo"]
    topic_c2 = f"c2@{digest_of(merged['topic_data'], 'c2')}"
    result = repo.ok("resolve", "d3", topic_c2, "c1")
    assert result.out.splitlines() == ["d3 -> d5", f"{topic_c2} -> c4", "c1 -> c1"]
    rows = repo.ok("resolve", "--json", "d3").json()
    assert rows[0]["current"] == "d5" and rows[0]["from"] == "topic" and rows[0]["merges"] == [merged["merge"]]
    unknown = repo.docket("resolve", "q9")
    assert unknown.code == 1 and unknown.out.strip() == "q9 -> ?"
    assert "docket: history does not know q9" in unknown.err
    bad = repo.docket("resolve", "c2@zz")
    assert bad.code == 2 and "not an ID or ID@DIGEST" in bad.err


def test_baseline_from_digest_finds_the_topic_version_and_the_delta(merged):
    repo = merged["repo"]
    digest = digest_of(merged["topic_data"], "d3")
    found = baselines.baseline_from_digest(repo.path, LEDGER, "d3", digest)
    assert found is not None
    baseline, commit_id = found
    assert commit_id == merged["topic_tip"]
    assert baseline == merged["topic_records"]
    current = repo.records()
    mapping = history.match_into(baseline, current)
    assert mapping == {"c1": "c1", "c2": "c4", "d3": "d5"}
    delta = baselines.added_since(baseline, current)
    assert delta == merged["main_added"]
    assert [r["text"] for r in delta] == ["Main claim", "Main second claim"]
    assert baselines.translate_delta_ids(["d3", "c2", "c9"], mapping) == ["d5", "c4"]
    assert baselines.baseline_from_digest(repo.path, LEDGER, "d3", "0123456789ab") is None


def test_baseline_from_rev(merged):
    repo = merged["repo"]
    found = baselines.baseline_from_rev(repo.path, "HEAD~1")
    assert found is not None
    records, commit_id = found
    assert commit_id == repo.git("rev-parse", "HEAD~1").strip()
    assert [r["text"] for r in records] == ["Shared premise", "Main claim", "Main second claim"]
    assert baselines.baseline_from_rev(repo.path, "topic")[1] == merged["topic_tip"]
    assert baselines.baseline_from_rev(repo.path, "no-such-branch") is None


def test_show_at_a_commit(merged):
    repo = merged["repo"]
    result = repo.ok("show", "c2", "--at", "topic")
    assert result.out.splitlines()[0].startswith("c2  claim  unassessed  Topic claim")
    result = repo.ok("show", "c3", "--at", "HEAD~1")
    assert "Main second claim" in result.out
    missing = repo.docket("show", "d5", "--at", "HEAD~1")
    assert missing.code == 1 and missing.err.strip() == "docket: no entry d5 at HEAD~1"
    bad = repo.docket("show", "c1", "--at", "nowhere")
    assert bad.code == 1 and "--at nowhere names neither a record nor a commit" in bad.err
    repo.git("tag", "v1", merged["topic_tip"])
    assert "Topic claim" in repo.ok("show", "c2", "--at", "v1").out
    assert "Topic claim" in repo.ok("show", "c2", "--at", merged["topic_tip"]).out
    # --at ID still works as before.
    assert "Main claim" in repo.ok("show", "c2", "--at", "c2").out


def test_log_of_a_renumbered_record(merged):
    repo = merged["repo"]
    text = repo.ok("log", "d5").out.splitlines()
    assert text[0].startswith("d5  decision  adopted")
    assert text[1].startswith(f"added       {merged['topic_tip'][:12]}")
    assert "on topic" in text[1] and "topic: claim and decision" in text[1] and "(as d3)" in text[1]
    assert text[2].startswith(f"renumbered  d3 -> d5 from topic  by merge {merged['merge'][:12]}")
    data = repo.ok("log", "--json", "d5").json()
    assert data["added"]["commit"] == merged["topic_tip"]
    assert data["added"]["author"] == "Test Author"
    assert [(r["from"], r["to"], r["merge"]) for r in data["renumbered"]] == [("d3", "d5", merged["merge"])]
    # The old ID works too.
    assert repo.ok("log", "d3").out.splitlines()[0].startswith("d5  decision")
    # c4 (topic's c2) is depended on by d5, added in the topic commit.
    refs = repo.ok("log", "--json", "c4").json()["referenced_by"]
    assert refs == [
        {
            "relation": "depended on by",
            "id": "d5",
            "commit": refs[0]["commit"],
        }
    ]
    assert refs[0]["commit"]["commit"] == merged["topic_tip"]


def test_log_of_a_superseded_record(merged):
    repo = merged["repo"]
    repo.ok("claim", "Shared premise, corrected", "--supersedes", "c1")
    fix = commit(repo, "correct the premise")
    repo.ok("claim", "Not yet committed", "--supersedes", "c2")
    first = repo.git("rev-list", "--max-parents=0", "HEAD").strip()
    out = repo.ok("log", "c1").out.splitlines()
    assert out[1].startswith(f"added       {first[:12]}") and "shared" in out[1]
    assert out[2].startswith(f"superseded by c6  in {fix[:12]}") and out[2].endswith("correct the premise")
    data = repo.ok("log", "--json", "c2").json()
    assert data["referenced_by"] == [{"relation": "superseded by", "id": "c7", "commit": None}]
    assert "superseded by c7  not committed yet" in repo.ok("log", "c2").out
    assert "not committed yet" in repo.ok("log", "c7").out


def test_history_cache_lives_outside_the_repository(merged):
    repo = merged["repo"]
    repo.ok("show", "d3")
    cache = Path(repo.env["XDG_CACHE_HOME"]) / "docket-git" / "history"
    files = list(cache.glob("*.sqlite"))
    assert len(files) == 1

    def saved() -> set[str]:
        conn = sqlite3.connect(files[0])
        try:
            return {row[0] for row in conn.execute("SELECT merge FROM merges")}
        finally:
            conn.close()

    assert merged["merge"] in saved()
    assert repo.git("status", "--porcelain") == ""
    # A warm run answers the same from the cache; a new merge adds to it.
    assert repo.ok("resolve", "d3").out.strip() == "d3 -> d5"
    repo.git("checkout", "-q", "topic")
    repo.ok("question", "Topic asks again?")
    commit(repo, "topic: question")
    repo.git("checkout", "-q", "main")
    repo.ok("claim", "Main third")
    commit(repo, "main: third")
    repo.git("merge", "-q", "--no-edit", "topic")
    second = repo.git("rev-parse", "HEAD").strip()
    assert repo.ok("resolve", "q4").out.strip() == "q4 -> q7"
    assert {merged["merge"], second} <= saved()


def test_an_id_renumbered_on_two_branches_is_ambiguous(repo: Repo):
    repo.ok("claim", "Shared")
    commit(repo, "shared")
    for name in ("one", "two"):
        repo.git("checkout", "-q", "-b", name, "main")
        repo.ok("question", f"Question from {name}?")
        commit(repo, name)
    repo.git("checkout", "-q", "main")
    repo.ok("claim", "Main moves on")
    commit(repo, "main")
    repo.git("merge", "-q", "--no-edit", "one")
    repo.git("merge", "-q", "--no-edit", "two")
    result = repo.docket("show", "q2")
    assert result.code == 1
    assert "q2 from one is now q3" in result.err and "q2 from two is now q4" in result.err
    assert "give the current ID of the one you mean (q4, q3), or ID@DIGEST" in result.err
    resolved = repo.docket("resolve", "q2")
    assert resolved.code == 1 and "q2 is ambiguous: give the current ID of the one you mean (q4, q3)" in resolved.err


def test_criss_cross_history_resolves(repo: Repo):
    repo.ok("claim", "Shared")
    commit(repo, "shared")
    repo.git("checkout", "-q", "-b", "a")
    repo.ok("question", "A one?")
    commit(repo, "a1")
    repo.git("checkout", "-q", "-b", "b", "main")
    repo.ok("claim", "B one")
    commit(repo, "b1")
    a1, b1 = repo.git("rev-parse", "a").strip(), repo.git("rev-parse", "b").strip()
    repo.git("merge", "-q", "--no-edit", a1)
    repo.git("checkout", "-q", "a")
    repo.git("merge", "-q", "--no-edit", b1)
    repo.ok("decision", "A two", "--choice", "x")
    commit(repo, "a2")
    repo.git("checkout", "-q", "b")
    repo.ok("claim", "B two")
    commit(repo, "b2")
    assert len(repo.git("merge-base", "--all", "a", "b").split()) == 2
    repo.git("merge", "-q", "--no-edit", "a")
    texts = {r["text"]: r["id"] for r in repo.records()}
    result = repo.ok("resolve", "d4")
    assert result.out.strip() == f"d4 -> {texts['A two']}"
    assert repo.ok("log", texts["A two"]).out.splitlines()[1].split()[1] == repo.git("rev-parse", "a").strip()[:12]


def test_shallow_clone_degrades_with_a_message(merged, tmp_path: Path):
    repo = merged["repo"]
    clone = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo.path}", str(clone)], check=True, env=repo.env)
    shallow = Repo(clone, repo.env)
    out = shallow.ok("log", "c1")
    assert "added       at or before" in out.out
    assert "this clone is shallow" in out.out
    result = shallow.docket("show", "d3")
    assert result.code == 1 and "Traceback" not in result.err
    assert result.err.startswith("docket: no entry d3") and "shallow" in result.err
    assert shallow.docket("resolve", "d3").code == 1


def test_repository_without_commits(repo: Repo):
    repo.ok("claim", "First")
    for args in (("log", "c1"), ("show", "c9"), ("resolve", "c9"), ("show", "c1", "--at", "HEAD")):
        result = repo.docket(*args)
        assert result.code == 1, args
        assert "Traceback" not in result.err
        assert result.err.startswith("docket: ") and "no commits yet" in result.err, (args, result.err)
    assert repo.ok("resolve", "c1").out.strip() == "c1 -> c1"


def test_outside_git(tmp_path: Path, env):
    plain = tmp_path / "plain"
    (plain / ".docket").mkdir(parents=True)
    (plain / ".docket" / "ledger.jsonl").write_text("")
    result = Repo(plain, env).docket("show", "c3")
    assert result.code == 1 and result.err.strip().startswith("docket: no entry c3 (not in a git repository")


def test_search_limit_from_config(tmp_path: Path):
    assert history.search_limit(tmp_path) == 2000
    (tmp_path / ".docket").mkdir()
    (tmp_path / ".docket" / "config.toml").write_text("[history]\nsearch_limit = 50\n")
    assert history.search_limit(tmp_path) == 50
    (tmp_path / ".docket" / "config.toml").write_text("[history]\nsearch_limit = 'many'\n")
    assert history.search_limit(tmp_path) == 2000


def test_parse_ref():
    assert history.parse_ref("c12") == ("c12", None)
    assert history.parse_ref("d3@7F3A9C21E0B4") == ("d3", "7f3a9c21e0b4")
    with pytest.raises(ValueError):
        history.parse_ref("x12")


def test_blob_reader_matches_pygit2(merged):
    from docket_git.repo import gitio

    repo = merged["repo"]
    graph = gitio.open_graph(repo.path)
    blob = graph.file_blob(merged["topic_tip"], LEDGER)
    try:
        assert graph.blob(blob) == merged["topic_data"]  # through git cat-file --batch
        assert graph.blob(blob) == graph.repo[blob].data
    finally:
        graph.close()
    graph._no_batch = True  # without git: pygit2
    assert graph.blob(blob) == merged["topic_data"]


def test_branch_unknown_names_the_commit(repo: Repo):
    repo.ok("claim", "Shared")
    commit(repo, "shared")
    repo.git("checkout", "-q", "-b", "gone")
    repo.ok("question", "From a branch that is deleted later?")
    tip = commit(repo, "gone: question")
    repo.git("checkout", "-q", "main")
    repo.ok("claim", "Main")
    commit(repo, "main")
    repo.git("branch", "-q", "-D", "gone")
    repo.git("merge", "-q", "--no-edit", tip)
    merge = repo.git("rev-parse", "HEAD").strip()
    result = repo.ok("show", "q2")
    assert result.err.strip() == f"docket: q2 from {tip[:12]} is now q3 (renumbered by merge {merge[:12]})"


def test_match_into_never_maps_by_id_alone():
    baseline = [rec("c1", "Shared"), rec("c2", "Only on the old branch")]
    current = [rec("c1", "Shared"), rec("c2", "Something else now")]
    assert history.match_into(baseline, current) == {"c1": "c1"}
    assert baselines.delta_id_map(baseline, current) == {"c1": "c1", "c2": ""}
    assert baselines.added_since(baseline, current) == [current[1]]


def test_match_into_follows_citations_and_dropped_supersedes():
    # The merge dropped "supersedes c1" from the incoming record (both sides superseded c1).
    baseline = [
        rec("c1", "Premise"),
        rec("c2", "Theirs replaces c1", supersedes=["c1"]),
        rec("c3", "Builds on c2", supports=[["c2"]]),
    ]
    current = [
        rec("c1", "Premise"),
        rec("c2", "Ours replaces c1", supersedes=["c1"]),
        rec("c3", "Theirs replaces c1"),
        rec("c4", "Builds on c3", supports=[["c3"]]),
    ]
    assert history.match_into(baseline, current) == {"c1": "c1", "c2": "c3", "c3": "c4"}


def test_alias_table_follows_renumbering_chains(repo: Repo):
    repo.ok("claim", "Shared")
    commit(repo, "shared")
    repo.git("checkout", "-q", "-b", "feature")
    repo.ok("question", "Feature question?")
    feature = commit(repo, "feature: q2")
    repo.git("checkout", "-q", "-b", "release", "main")
    repo.ok("claim", "Release claim")
    commit(repo, "release: c2")
    repo.git("merge", "-q", "--no-edit", "feature")  # q2 -> q3 on release
    release_merge = repo.git("rev-parse", "HEAD").strip()
    repo.git("checkout", "-q", "main")
    repo.ok("claim", "Main one")
    repo.ok("claim", "Main two")
    commit(repo, "main: c2 c3")
    repo.git("merge", "-q", "--no-edit", "release")  # release's c2, q3 -> c4, q5 on main
    texts = {r["text"]: r["id"] for r in repo.records()}
    assert texts["Feature question?"] == "q5"
    h = history.History(repo.path)
    try:
        table = h.alias_table()
    finally:
        h.save()
    assert table[("q2", feature)] == "q5"
    assert table[("q3", release_merge)] == "q5"
    assert table[("c2", release_merge)] == "c4"
    result = repo.ok("show", "q2")
    assert "q2 from feature is now q5 (renumbered by merges" in result.err
