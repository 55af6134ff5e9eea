"""History's SQLite cache in real git repositories: used across commands, and never a reason to be wrong or fail.

The database (``docket-git/history/<key>.sqlite`` under the user cache dir)
keeps blob record counts, merge renumberings and HEADs' renames. Each test
here either proves a later command reads what an earlier one wrote (by
planting a different answer in the table and seeing it come back), or
breaks the cache (garbage bytes, a foreign version, a lock, an unwritable
directory) and checks the answer is the one history recomputes.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from docket_git.history.cache import SCHEMA_VERSION
from tests.conftest import DOCKET, Repo, commit, diverged


def cache_dir(repo: Repo) -> Path:
    return Path(repo.env["XDG_CACHE_HOME"]) / "docket-git" / "history"


def the_db(repo: Repo) -> Path:
    found = sorted(cache_dir(repo).glob("*.sqlite"))
    assert len(found) == 1, found
    return found[0]


def rows(db: Path, sql: str, params: tuple = ()) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def write(db: Path, sql: str, params: tuple = ()) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute(sql, params)
    finally:
        conn.close()


def answers(repo: Repo) -> list[str]:
    """What the history commands print for the fixture's renumbered records (exit 0, nothing unexpected)."""
    out = []
    for args in (("resolve", "d3", "c2"), ("log", "d5"), ("show", "d3")):
        result = repo.ok(*args)
        assert "Traceback" not in result.err
        # the ledger index (not history) says so when it cannot be written
        err = [line for line in result.err.splitlines() if "the ledger index" not in line]
        out.append(result.out + "\n".join(err))
    return out


def test_one_database_per_repository_holds_counts_and_merges(merged):
    repo = merged["repo"]
    cold = answers(repo)
    db = the_db(repo)
    assert rows(db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    (stored,) = rows(db, "SELECT aliases FROM merges WHERE merge = ?", (merged["merge"],))
    assert [(old, new, source) for old, new, _, source, _, _ in json.loads(stored[0])] == [
        ("c2", "c4", merged["topic_tip"]),
        ("d3", "d5", merged["topic_tip"]),
    ]
    head_blob = repo.git("rev-parse", "HEAD:.docket/ledger.jsonl").strip()
    assert rows(db, "SELECT records FROM blob_counts WHERE blob = ?", (head_blob,)) == [(5,)]
    first_parent = repo.git("rev-parse", "HEAD^1").strip()
    assert rows(db, "SELECT parent FROM kept WHERE merge = ?", (merged["merge"],)) == [(first_parent,)]
    assert repo.git("status", "--porcelain") == ""
    assert answers(repo) == cold  # warm: the same bytes
    # A linked work tree of the same repository shares the database.
    repo.git("worktree", "add", "-q", str(repo.path.parent / "other"), "HEAD")
    other = Repo(repo.path.parent / "other", repo.env)
    assert other.ok("resolve", "d3").out == "d3 -> d5\n"
    assert the_db(repo) == db


def test_a_later_command_reads_what_an_earlier_one_stored(merged):
    """Planting another renumbering in the table changes the answer: the merge is read, not recomputed."""
    repo = merged["repo"]
    assert repo.ok("resolve", "d3").out == "d3 -> d5\n"
    db = the_db(repo)
    write(db, "UPDATE merges SET aliases = '[]' WHERE merge = ?", (merged["merge"],))
    assert repo.ok("resolve", "d3").out == "d3 -> d5\n"  # the answer itself was kept
    write(db, "DELETE FROM answers")
    result = repo.docket("resolve", "d3")
    assert (result.code, result.out) == (1, "d3 -> ?\n")
    assert "history does not know d3" in result.err
    # The head blob's count is read too: a planted count moves where `log` says the record was added.
    repo.ok("claim", "Later claim")
    later = commit(repo, "later")
    assert repo.ok("log", "c6").out.splitlines()[1].startswith(f"added       {later[:12]}")
    blob = repo.git("rev-parse", "HEAD:.docket/ledger.jsonl").strip()
    assert rows(db, "SELECT records FROM blob_counts WHERE blob = ?", (blob,)) == [(6,)]
    parent_blob = repo.git("rev-parse", "HEAD~1:.docket/ledger.jsonl").strip()
    write(db, "INSERT OR REPLACE INTO blob_counts VALUES (?, 6)", (parent_blob,))
    write(db, "DELETE FROM answers")  # the log itself was kept too
    assert not repo.ok("log", "c6").out.splitlines()[1].startswith(f"added       {later[:12]}")


def test_garbage_in_place_of_the_database_is_rebuilt(merged):
    repo = merged["repo"]
    cold = answers(repo)
    db = the_db(repo)
    for suffix in ("-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    db.write_bytes(bytes(range(256)) * 64)
    assert answers(repo) == cold
    assert rows(db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert rows(db, "SELECT count(*) FROM merges WHERE merge = ?", (merged["merge"],)) == [(1,)]


def test_garbage_before_any_command_and_a_header_with_no_pages(merged):
    repo = merged["repo"]
    cold = answers(repo)
    db = the_db(repo)
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    db.write_bytes(b"SQLite format 3\0" + b"\xff" * 4000)  # a valid-looking header over nonsense
    assert answers(repo) == cold
    assert rows(db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]


def test_a_database_of_another_version_is_replaced(merged):
    repo = merged["repo"]
    cold = answers(repo)
    db = the_db(repo)
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    write(db, "CREATE TABLE merges (merge TEXT, aliases TEXT)")
    write(db, "INSERT INTO merges VALUES (?, '[]')", (merged["merge"],))
    write(db, "PRAGMA user_version = 99")
    assert answers(repo) == cold
    assert rows(db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]


def test_an_unwritable_cache_dir_still_answers(merged):
    """The cache dir cannot be created (a file stands where it would go; root ignores chmod)."""
    repo = merged["repo"]
    cold = answers(repo)
    blocked = Path(repo.env["XDG_CACHE_HOME"]).parent / "blocked"
    blocked.write_text("not a directory\n")
    repo.env = {**repo.env, "XDG_CACHE_HOME": str(blocked)}
    assert answers(repo) == cold
    for args in (("resolve", "d3"), ("log", "d5")):
        # The ledger index says once that it works in memory; history's cache goes without a word.
        err = repo.ok(*args).err.splitlines()
        assert len(err) == 1 and "using an in-memory index" in err[0], err
    assert not blocked.with_name("docket-git").exists()


def test_a_locked_database_is_gone_around(merged):
    """Another connection holds the database exclusively: the command recomputes and answers alike."""
    repo = merged["repo"]
    cold = answers(repo)
    db = the_db(repo)
    write(db, "UPDATE merges SET aliases = '[]'")  # what a reader of the table would wrongly say
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("INSERT OR REPLACE INTO blob_counts VALUES ('x', 1)")
        assert answers(repo) == cold
    finally:
        holder.close()


def test_concurrent_commands_share_one_database(merged):
    repo = merged["repo"]
    procs = [
        subprocess.Popen([DOCKET, "resolve", "d3", "c2"], cwd=repo.path, env=repo.env, stdout=subprocess.PIPE)
        for _ in range(6)
    ]
    outs = [proc.communicate(timeout=60)[0] for proc in procs]
    assert all(proc.returncode == 0 for proc in procs)
    assert set(outs) == {b"d3 -> d5\nc2 -> c2\n"}
    db = the_db(repo)
    assert rows(db, "PRAGMA integrity_check") == [("ok",)]
    assert rows(db, "SELECT count(*) FROM merges WHERE merge = ?", (merged["merge"],)) == [(1,)]


# -- renames ---------------------------------------------------------------------------------------


@pytest.fixture
def moved(repo: Repo) -> Repo:
    """d1 is scoped to src/store.py, since moved to src/ledger/store.py."""
    (repo.path / "src" / "ledger").mkdir(parents=True)
    (repo.path / "src" / "store.py").write_text("x = 1\n")
    (repo.path / "src" / "other.py").write_text("y = 2\n")
    repo.ok("decision", "Appends fsync before returning", "--choice", "fsync", "--scope", "src/store.py")
    commit(repo, "first")
    repo.git("mv", "src/store.py", "src/ledger/store.py")
    commit(repo, "move store into ledger/")
    return repo


def test_renames_are_stored_per_head_and_read_back(moved: Repo):
    repo = moved
    first = repo.ok("context", "--file", "src/ledger/store.py").out
    assert "scope=1000 via rename" in first
    head = repo.git("rev-parse", "HEAD").strip()
    db = the_db(repo)
    assert rows(db, "SELECT pairs FROM renames WHERE head = ?", (head,)) == [
        (json.dumps([["src/store.py", "src/ledger/store.py"]], separators=(",", ":")),)
    ]
    assert repo.ok("context", "--file", "src/ledger/store.py").out == first
    # What the table says for HEAD is what the briefing follows: plant a different rename.
    write(db, "UPDATE renames SET pairs = ? WHERE head = ?", ('[["src/store.py","src/other.py"]]', head))
    planted = repo.ok("context", "--file", "src/other.py").out
    assert "scope=1000 via rename" in planted
    assert "via rename" not in repo.ok("context", "--file", "src/ledger/store.py").out


def test_renames_survive_a_broken_or_unwritable_cache(moved: Repo):
    repo = moved
    first = repo.ok("context", "--file", "src/ledger/store.py").out
    db = the_db(repo)
    for suffix in ("-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    db.write_bytes(b"\x00garbage" * 500)
    assert repo.ok("context", "--file", "src/ledger/store.py").out == first
    assert rows(db, "SELECT count(*) FROM renames") == [(1,)]
    blocked = Path(repo.env["XDG_CACHE_HOME"]).parent / "blocked"
    blocked.write_text("not a directory\n")
    repo.env = {**repo.env, "XDG_CACHE_HOME": str(blocked)}
    result = repo.ok("context", "--file", "src/ledger/store.py")
    assert result.out == first
    assert result.err.splitlines() == [  # the ledger index's one notice; renames go without their cache silently
        f"docket: cannot write the ledger index at {blocked}/docket-git/index (Not a directory); using an in-memory index"
    ]


def shown(repo: Repo, *args: str) -> tuple[int, str, str]:
    result = repo.docket("show", *args)
    err = "\n".join(line for line in result.err.splitlines() if "the ledger index" not in line)
    return result.code, result.out, err


ASKS = (("d3",), ("d3", "--json"), ("c2",), ("c99",), ("c2@000000000000",), ("d3@000000000000",))


def test_show_of_an_id_the_ledger_does_not_hold_answers_the_same_from_the_cache(merged):
    """Cold (history walked, answer stored) and warm (one row read, no Typer) print the same bytes and exit codes."""
    repo = merged["repo"]
    cold = [shown(repo, *ask) for ask in ASKS]
    assert cold[0][0] == 0 and "d3 from topic is now d5" in cold[0][2] and cold[0][1].startswith("d5  decision")
    assert cold[3][0] == 1 and "no entry c99, and no merge in the last 2000 ledger commits renumbered it" in cold[3][2]
    # One answer per ref history was asked about: d3, c99, c2@000000000000, d3@000000000000 (c2 is held).
    assert len(rows(the_db(repo), "SELECT key FROM answers")) == 4
    assert [shown(repo, *ask) for ask in ASKS] == cold
    # Without any cache (a fresh cache dir) the answers are the same again.
    fresh = Repo(repo.path, {**repo.env, "XDG_CACHE_HOME": str(repo.path.parent / "fresh-cache")})
    assert [shown(fresh, *ask) for ask in ASKS] == cold


def test_a_stored_answer_is_read_and_a_new_history_asks_again(merged):
    """A planted answer comes back (the row is read); a commit, an append or a journal entry gives a new key."""
    repo = merged["repo"]
    assert shown(repo, "c99")[0] == 1
    db = the_db(repo)
    (key,) = rows(db, "SELECT key FROM answers")[0]
    planted = {"found": [], "limit": 7, "shallow": False}
    write(db, "UPDATE answers SET answer = ? WHERE key = ?", (json.dumps(planted), key))
    assert "in the last 7 ledger commits" in shown(repo, "c99")[2]
    repo.ok("claim", "Appended after the answer")  # the ledger's revision changes
    assert "in the last 2000 ledger commits" in shown(repo, "c99")[2]
    planted_all = {"found": [], "limit": 9, "shallow": False}
    write(db, "UPDATE answers SET answer = ?", (json.dumps(planted_all),))
    assert "in the last 9 ledger commits" in shown(repo, "c99")[2]
    commit(repo, "commit the append")  # HEAD changes
    assert "in the last 2000 ledger commits" in shown(repo, "c99")[2]
    write(db, "UPDATE answers SET answer = ?", (json.dumps(planted_all),))
    journal = Path(repo.git("rev-parse", "--git-dir").strip())
    journal = (journal if journal.is_absolute() else repo.path / journal) / "docket" / "renumbered.jsonl"
    journal.parent.mkdir(parents=True, exist_ok=True)
    journal.write_text("\n")  # a journal that changed (even one with nothing readable)
    assert "in the last 2000 ledger commits" in shown(repo, "c99")[2]


def test_resolve_and_log_asked_again_read_the_kept_answer_without_typer_or_git(merged):
    """A second ``resolve``/``log`` of the same question reads one row: no Typer, no pygit2, the same bytes."""
    repo = merged["repo"]
    for args in (
        ("resolve", "d3", "c2", "c99"),
        ("log", "d3"),
        ("log", "c2"),
        ("resolve", "--json", "d3@000000000000"),
    ):
        cold = repo.docket(*args)
        proc, imported = repo.imports(*args)
        assert (proc.returncode, proc.stdout) == (cold.code, cold.out), args
        assert [line for line in proc.stderr.splitlines() if "import time:" not in line] == cold.err.splitlines()
        assert "docket_git.cli.history" in imported
        assert not {"typer", "pygit2"} & imported, args
    # show asks history without Typer the first time too.
    proc, imported = repo.imports("show", "c98")
    assert proc.returncode == 1 and "no entry c98, and no merge" in proc.stderr
    assert "typer" not in imported
    # The kept log is the log of that history: a new commit that cites d5 asks again.
    repo.ok("claim", "Cites the renumbered decision", "--supports", "d5")
    commit(repo, "cite d5")
    assert repo.ok("log", "d3").out.splitlines()[-1].startswith("supported by c6  in ")


def _bench_builder():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "bench_history", Path(__file__).parent.parent / "bench" / "history.py"
    )
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def test_merging_only_past_the_shared_lines_renumbers_as_merging_whole_ledgers(tmp_path: Path):
    """``History._tails`` (merge what follows the lines both sides share) against ``rebase.merge`` of whole ledgers.

    On bench/history.py's history (topics merged every 10 commits, a long topic merged late, ledgers of
    over 64 KiB so the byte comparison crosses blocks), every merge's recomputed renumbering is the same
    both ways, and most merges were cut.
    """
    from docket_git.history.cache import HistoryCache
    from docket_git.history.renumbering import History

    facts = _bench_builder().build(tmp_path / "repo", 8, 400)
    assert facts["size"] > 1 << 17
    cut, whole = History(tmp_path / "repo"), History(tmp_path / "repo")
    whole.trim = False
    cut.cache, whole.cache = HistoryCache(tmp_path / "cut.sqlite"), HistoryCache(tmp_path / "whole.sqlite")
    merges = [c for c in cut.touching() if len(cut.graph.parents(c)) >= 2]
    assert len(merges) == 9
    trimmed = 0
    for merge in merges:
        assert cut.renumbering(merge) == whole.renumbering(merge), merge
        parents = cut.graph.parents(merge)
        kept = cut.kept_parent(merge) or parents[0]
        other = next(p for p in parents if p != kept)
        trimmed += cut._tails(kept, cut.blob_at(other), cut.graph.merge_bases(kept, other)) is not None
    assert sum(a.renumbered for m in merges for a in cut.renumbering(m)) >= 8 * 6
    assert trimmed == len(merges)
    cut.save()
    whole.save()


def test_another_clone_answers_old_and_unknown_ids_after_pulling_a_renumbering_merge(tmp_path: Path, env):
    """A bare origin, two clones: bob's pull renumbers his unpushed q2 to q4 and pushes the merge; alice,
    who never ran that merge, pulls it and answers bob's old ``q2@DIGEST`` and an unknown ID, cold and
    then from the kept answers, alike; her next commit is a new history, asked again."""
    import hashlib

    def clone(dest: Path, name: str) -> Repo:
        person = {**env, "GIT_AUTHOR_NAME": name, "GIT_COMMITTER_NAME": name, "DOCKET_AUTHOR": name}
        subprocess.run(["git", "clone", "-q", str(origin), str(dest)], check=True, env=person, capture_output=True)
        return Repo(dest, person)

    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True, env=env)
    alice = clone(tmp_path / "alice", "alice")
    alice.ok("init")
    alice.ok("claim", "Shared premise")
    commit(alice, "docket init")
    alice.git("push", "-q", "-u", "origin", "main")
    bob = clone(tmp_path / "bob", "bob")
    bob.ok("init")
    alice.ok("claim", "Alice's premise")
    alice.ok("decision", "Alice decides on c2", "--choice", "X", "--depends-on", "c2")
    commit(alice, "alice records c2 d3")
    alice.git("push", "-q")
    bob.ok("question", "Bob asks, see c1?")
    commit(bob, "bob records q2")
    data = bob.ledger.read_bytes()
    old = f"q2@{hashlib.sha256(data).hexdigest()[:12]}"
    bob.git("pull", "-q", "--no-rebase", "--no-edit")
    assert [r["id"] for r in bob.records()] == ["c1", "c2", "d3", "q4"]
    bob.git("push", "-q")
    alice.git("pull", "-q", "--ff-only")
    asks = (("resolve", old), ("show", old), ("log", old), ("resolve", "d999999"), ("show", "d999999"))
    cold = [alice.docket(*args) for args in asks]
    assert [(r.code, r.out) for r in cold[:1]] == [(0, f"{old} -> q4\n")]
    assert cold[1].out.startswith("q4  question  open  Bob asks, see c1?")
    assert "renumbered  q2 -> q4" in cold[2].out
    assert (cold[3].code, cold[3].out) == (1, "d999999 -> ?\n") and "history does not know d999999" in cold[3].err
    assert cold[4].code == 1 and "no entry d999999, and no merge" in cold[4].err
    assert len(rows(the_db(alice), "SELECT key FROM answers")) == 3  # q2@DIGEST (resolve, show), log q4, d999999
    warm = [alice.docket(*args) for args in asks]
    assert [(r.code, r.out, r.err) for r in warm] == [(r.code, r.out, r.err) for r in cold]
    alice.ok("claim", "Alice again")
    commit(alice, "alice records c5")
    assert alice.ok("resolve", old).out == f"{old} -> q4\n"
    assert len(rows(the_db(alice), "SELECT key FROM answers")) == 4


def test_a_session_start_warms_the_merges_a_first_question_would_recompute(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``warm.WARM_FROM`` bytes of ledger, a session-start hook leaves a detached process that keeps every
    merge's renumbering and notes the HEAD it warmed for; a hook at that HEAD, or on a smaller ledger, starts none."""
    import time

    from docket_git.history import warm
    from docket_git.ledger import canonical
    from tests.conftest import rec

    monkeypatch.setenv("XDG_CACHE_HOME", repo.env["XDG_CACHE_HOME"])
    repo.ok("claim", "Small ledger")
    commit(repo, "small")
    warm.later(repo.ledger)
    assert warm._later == []  # under WARM_FROM: nothing to warm
    filler = "x" * 400
    with repo.ledger.open("ab") as f:
        f.write(b"".join(canonical.line(rec(f"c{n}", f"Premise {n} {filler}")) for n in range(2, 3000)))
    assert repo.ledger.stat().st_size >= warm.WARM_FROM
    commit(repo, "large")
    diverged(repo)
    repo.git("merge", "-q", "--no-edit", "topic")
    merge = repo.git("rev-parse", "HEAD").strip()
    noted = warm.marker(repo.path)
    assert noted is not None and not noted.exists()
    payload = json.dumps({"session_id": "s1", "source": "startup", "cwd": str(repo.path)})
    assert repo.docket("hook", "session-start", input=payload, real=True).code == 0
    deadline = time.monotonic() + 60
    while not noted.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert noted.read_text() == f"{merge} {repo.ledger}"
    (aliases,) = rows(the_db(repo), "SELECT aliases FROM merges WHERE merge = ?", (merge,))[0]
    assert [a[:2] for a in json.loads(aliases)] == [["c3000", "c3001"]]  # topic's claim, renumbered by the merge
    warm.later(repo.ledger)
    assert warm._later == []  # warmed for this HEAD: the next hook starts nothing


def test_history_warm_false_in_config_starts_no_warmer(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    """``[history] warm = false`` in .docket/config.toml: a hook that would warm starts no process."""
    import os

    from docket_git.history import warm
    from docket_git.ledger import canonical
    from tests.conftest import rec

    monkeypatch.setenv("XDG_CACHE_HOME", repo.env["XDG_CACHE_HOME"])
    filler = "x" * 400
    with repo.ledger.open("ab") as f:
        f.write(b"".join(canonical.line(rec(f"c{n}", f"Premise {n} {filler}")) for n in range(1, 3000)))
    commit(repo, "large")
    config = repo.ledger.parent / "config.toml"
    config.write_text("[history]\nsearch_limit = 50\nwarm = false\n")
    warm.later(repo.ledger)
    assert warm.finish() == []
    assert warm._later == []
    config.write_text("[history]\nwarm = true\n")
    warm.later(repo.ledger)
    (pid,) = warm.finish()
    os.waitpid(pid, 0)
    noted = warm.marker(repo.path)
    assert noted is not None and noted.read_text().startswith(repo.git("rev-parse", "HEAD").strip())
