"""Typed ledgers kept the gh-aw way: shard files on the branch ``ledgers/<name>`` (docs/typed-ledgers.md,
"Branch storage").

Branches are built with git's own plumbing from the gh-aw fixtures (tests/fixtures/gh-aw/, data made by
running gh-aw's ledger logic): each persistence run's records in one shard file
``ledger/shards/<uuid>.jsonl``, one commit per run, as gh-aw's persistence job lays them out. docket reads
them without a checkout and writes new shards in new commits; clones share them through a bare origin.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from docket_git.typed import envelope
from tests.conftest import DOCKET, Repo
from tests.test_gh_aw_fixtures import CASES, FIXTURES, RECORD_COLUMNS, _toml_value
from tests.typed_helpers import ok_op

SHARD = re.compile(r"ledger/shards/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.jsonl")


def declare(repo: Repo, config: dict, **extra: object) -> str:
    """Declare the fixture's ledger with source = "branch" (and gh-aw's limits from its config.json)."""
    name = config["name"]
    lines = [f"[ledgers.{name}]", 'source = "branch"']
    for key in ("type", "key", "schema", "max_segment_kb", "max_record_kb"):
        if key in config:
            lines.append(f"{key} = {_toml_value(config[key])}")
    lines += [f"{k} = {_toml_value(v)}" for k, v in extra.items()]
    path = repo.path / ".docket" / "config.toml"
    path.write_text("\n".join(lines) + "\n")
    return name


def runs_of(case: Path) -> list[list[bytes]]:
    """The fixture's lines grouped by the persistence run that wrote them (its deterministic record IDs)."""
    runs = json.loads((case / "runs.json").read_text())
    owner = {}
    for n, run in enumerate(runs):
        for i in range(len(run["requests"])):
            owner[envelope.record_id(run["transaction_id"], i)] = n
    groups: dict[int, list[bytes]] = {}
    for raw in (case / "ledger.jsonl").read_bytes().splitlines(keepends=True):
        record = json.loads(raw)
        payload = record["payload"]
        rid = payload["id"] if isinstance(payload, dict) and "id" in payload else record["id"]
        groups.setdefault(owner[rid], []).append(raw)
    return list(groups.values())


def git_env(repo: Repo, index: Path) -> dict[str, str]:
    return {**repo.env, "GIT_INDEX_FILE": str(index)}


def plumb(repo: Repo, *args: str, stdin: bytes | None = None, env: dict | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=repo.path, env=env or repo.env, input=stdin, capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode().strip()


def commit_files(repo: Repo, files: dict[str, bytes], parent: str | None, message: str, mode: str = "100644") -> str:
    """A commit whose tree is parent's plus files (path -> bytes), made with plumbing (no checkout)."""
    index = repo.path.parent / f"plumbing-index-{os.getpid()}"
    index.unlink(missing_ok=True)
    env = git_env(repo, index)
    if parent:
        plumb(repo, "read-tree", parent, env=env)
    blobs: dict[bytes, str] = {}  # each distinct content hashed once; one update-index for every entry
    for data in files.values():
        if data not in blobs:
            blobs[data] = plumb(repo, "hash-object", "-w", "--stdin", stdin=data)
    entries = "".join(f"{mode} {blobs[data]}\t{path}\n" for path, data in files.items())
    plumb(repo, "update-index", "--add", "--index-info", stdin=entries.encode(), env=env)
    tree = plumb(repo, "write-tree", env=env)
    index.unlink()
    return plumb(repo, "commit-tree", tree, *(["-p", parent] if parent else []), "-m", message)


def build_branch(repo: Repo, case: Path, ref: str | None = None) -> str:
    """The fixture's ledger as gh-aw's persistence runs left it on ledgers/<name>: one shard, one commit a run."""
    config = json.loads((case / "config.json").read_text())
    names = json.loads((case / "expected.json").read_text())["shard_files"]
    groups = runs_of(case)
    assert len(groups) == len(names), "one shard file per persistence run"
    tip = None
    for path, lines in zip(sorted(names), groups, strict=True):
        tip = commit_files(repo, {path: b"".join(lines)}, tip, f"Append {len(lines)} ledger record(s)")
    plumb(repo, "update-ref", ref or f"refs/heads/{config['branch_name']}", tip)
    return tip


def query(repo: Repo, name: str, sql: str) -> list[dict]:
    result = repo.docket("ledger", "query", name, sql, "--json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def tip(repo: Repo, ref: str) -> str:
    return repo.git("rev-parse", "--verify", "-q", ref, check=False).strip()


def snapshot(repo: Repo) -> dict[str, bytes]:
    """Every file of the work tree and of .git that a write must leave alone (the index, HEAD), as bytes."""
    out = {}
    for path in sorted(repo.path.rglob("*")):
        rel = path.relative_to(repo.path).as_posix()
        if (path.is_file() and not rel.startswith(".git/")) or rel in (".git/index", ".git/HEAD"):
            out[rel] = path.read_bytes()
    return out


@pytest.fixture
def based(repo: Repo) -> Repo:
    """A repository with a commit on main, a staged change and an untracked file: a work tree in use."""
    (repo.path / "tracked.txt").write_text("one\n")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "base")
    (repo.path / "tracked.txt").write_text("two\n")
    repo.git("add", "tracked.txt")
    (repo.path / "untracked.txt").write_text("loose\n")
    return repo


@pytest.mark.parametrize("case", CASES)
def test_a_gh_aw_ledger_branch_replays_to_gh_aw_s_projection(based: Repo, case: str) -> None:
    expected = json.loads((FIXTURES / case / "expected.json").read_text())
    name = declare(based, json.loads((FIXTURES / case / "config.json").read_text()))
    build_branch(based, FIXTURES / case)
    before = snapshot(based)

    records = query(based, name, f"SELECT {', '.join(RECORD_COLUMNS)} FROM records ORDER BY ordinal")
    assert records == [{k: r[k] for k in RECORD_COLUMNS} for r in expected["records"]]
    diagnostics = query(based, name, "SELECT code FROM diagnostics")
    if not expected["ok"]:
        assert [d["code"] for d in diagnostics] == ["invalid-operation"], expected["error"]
        strict = based.docket("ledger", "query", name, "SELECT 1", "--strict")
        assert strict.code == 1 and expected["error"] in strict.err, strict
    else:
        assert diagnostics == []
        for table, rows in (expected["tables"] or {}).items():
            columns = list(rows[0]) if rows else ["count(*) AS n"]
            got = query(based, name, f"SELECT {', '.join(columns)} FROM {table}")
            key = lambda row: json.dumps(row, sort_keys=True)  # noqa: E731
            assert sorted(got, key=key) == sorted(rows or [{"n": 0}], key=key), table
        assert based.docket("ledger", "check", name).out == f"docket: branch ledgers/{name} replays cleanly\n"
    assert snapshot(based) == before  # read without a checkout: no ledger file, index and HEAD as they were


def shard_diff(repo: Repo, old: str, new: str) -> list[str]:
    return repo.git("diff", "--name-status", "--no-renames", old, new).splitlines()


def test_a_write_is_a_new_shard_in_a_new_commit_and_the_work_tree_and_index_stay_byte_identical(based: Repo) -> None:
    case = FIXTURES / "03-map-put-delete"
    name = declare(based, json.loads((case / "config.json").read_text()))
    old = build_branch(based, case)
    heads_before = query(based, name, "SELECT sha FROM heads")
    before, status = snapshot(based), based.git("status", "--porcelain")

    put = based.docket("ledger", "map-put", name, "repo/new", '{"stars": 7}')
    assert put.code == 0, put.err
    first = tip(based, f"ledgers/{name}")
    assert based.git("rev-list", "--parents", "-n", "1", first).split() == [first, old]  # fast-forward, one commit
    kind, path = shard_diff(based, old, first)[0].split("\t")
    assert kind == "A" and SHARD.fullmatch(path) and len(shard_diff(based, old, first)) == 1
    assert based.git("ls-tree", first, path).split()[0] == "100644"
    line = based.git("show", f"{first}:{path}")
    assert line.endswith("\n") and line.count("\n") == 1
    record = json.loads(line)
    body = {k: v for k, v in record.items() if k != "sha"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert record["sha"] == "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    assert line == json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
    assert record["parents"] == [h["sha"] for h in heads_before]
    # gh-aw's record form, as its persistence job writes it: the operation in the payload, the record ID there too.
    assert record["type"] == "ledger_append" and record["payload"]["id"] == put.out.split("\t")[0]
    assert record["payload"] == {
        "id": record["payload"]["id"],
        "operation": "put",
        "key": "repo/new",
        "value": {"stars": 7},
    }
    assert based.git("log", "-1", "--format=%s", first).startswith("Append 1 ledger record(s) from docket transaction")
    assert snapshot(based) == before

    # A second write is a second commit on top; the state follows both.
    ok_op(based, name, {"operation": "delete", "key": "repo/new"})
    second = tip(based, f"ledgers/{name}")
    assert based.git("rev-list", "--parents", "-n", "1", second).split() == [second, first]
    again = based.docket("ledger", "map-put", name, "repo/x", '{"n": 1}', "--txn", "t1")
    assert again.code == 0 and tip(based, f"ledgers/{name}") != second
    third = tip(based, f"ledgers/{name}")
    again = based.docket("ledger", "map-put", name, "repo/x", '{"n": 1}', "--txn", "t1")  # the same transaction: no-op
    assert again.code == 0 and "already recorded" in again.out and tip(based, f"ledgers/{name}") == third
    assert "compact rewrites only a ledger file" in refused(based, "ledger", "compact", name)
    assert tip(based, f"ledgers/{name}") == third
    assert len(shard_diff(based, first, second)) == 1
    assert query(based, name, "SELECT count(*) AS n FROM state WHERE key IN ('repo/new', 'repo/x')") == [{"n": 1}]
    assert snapshot(based) == before
    assert based.git("status", "--porcelain") == status and "M  tracked.txt" in status


def test_a_missing_branch_is_an_empty_ledger_and_the_first_write_makes_a_root_commit(based: Repo) -> None:
    name = declare(based, {"name": "metrics", "type": "counter"})
    assert query(based, name, "SELECT count(*) AS n FROM state") == [{"n": 0}]
    assert tip(based, "ledgers/metrics") == ""
    ok_op(based, name, {"operation": "increment", "name": "runs", "amount": 2})
    root = tip(based, "ledgers/metrics")
    assert based.git("rev-list", "--parents", root).split() == [root]  # a root commit
    assert [SHARD.fullmatch(p) is not None for p in based.git("ls-tree", "-r", "--name-only", root).split()] == [True]
    assert query(based, name, "SELECT name, value FROM state") == [{"name": "runs", "value": 2}]


def clone(origin: Path, dest: Path, env: dict) -> Repo:
    subprocess.run(["git", "clone", "-q", str(origin), str(dest)], env=env, check=True, capture_output=True)
    return Repo(dest, env)


def test_clones_share_a_branch_ledger_through_fetch_and_push(based: Repo, tmp_path: Path) -> None:
    case = FIXTURES / "11-merge-two-parents"
    config = json.loads((case / "config.json").read_text())
    name = declare(based, config)
    based.git("add", ".docket/config.toml")
    based.git("commit", "-q", "-m", "declare the ledger")
    build_branch(based, case)
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], env=based.env, check=True)
    based.git("remote", "add", "origin", str(origin))
    based.git("push", "-q", "origin", "main", f"ledgers/{name}")
    state = query(based, name, "SELECT key, value FROM state")

    other = clone(origin, tmp_path / "other", based.env)
    assert tip(other, f"ledgers/{name}") == ""  # only origin/ledgers/<name>: read from the remote-tracking ref
    assert query(other, name, "SELECT key, value FROM state") == state
    ok_op(other, name, {"operation": "put", "key": "from-other", "value": {"n": 1}})
    assert other.git("rev-list", "--parents", "-n", "1", f"ledgers/{name}").split()[1:] == [
        tip(other, f"origin/ledgers/{name}")
    ]
    other.git("push", "-q", "origin", f"ledgers/{name}")  # a fast-forward of origin's branch

    based.git("fetch", "-q", "origin")  # the local branch is now behind origin's: origin's is read
    assert {r["key"] for r in query(based, name, "SELECT key FROM state")} >= {"from-other"}
    ok_op(based, name, {"operation": "put", "key": "from-based", "value": {"n": 2}})
    assert based.git("rev-list", "--parents", "-n", "1", f"ledgers/{name}").split()[1:] == [
        tip(based, f"origin/ledgers/{name}")
    ]
    based.git("push", "-q", "origin", f"ledgers/{name}")

    # Diverged: both write before fetching; each reads the union of both tips' shards once fetched.
    other.git("fetch", "-q", "origin")
    ok_op(other, name, {"operation": "put", "key": "other-2", "value": {"n": 3}})
    ok_op(based, name, {"operation": "put", "key": "based-2", "value": {"n": 4}})
    other.git("push", "-q", "origin", f"ledgers/{name}")
    based.git("fetch", "-q", "origin")
    keys = {r["key"] for r in query(based, name, "SELECT key FROM state")}
    assert {"from-other", "from-based", "other-2", "based-2"} <= keys
    ok_op(based, name, {"operation": "put", "key": "after-merge", "value": {"n": 5}})
    parents = based.git("rev-list", "--parents", "-n", "1", f"ledgers/{name}").split()[1:]
    assert sorted(parents) == sorted([tip(based, f"origin/ledgers/{name}"), tip(based, f"ledgers/{name}~1")])
    based.git("push", "-q", "origin", f"ledgers/{name}")  # fast-forward: the merge commit contains origin's tip
    other.git("fetch", "-q", "origin")
    assert query(other, name, "SELECT key, value FROM state") == query(based, name, "SELECT key, value FROM state")
    assert len(query(other, name, "SELECT 1 FROM heads")) == 1  # the write after the merge followed both heads


def refused(repo: Repo, *args: str) -> str:
    result = repo.docket(*args)
    assert result.code == 1 and result.out == "" and result.err.startswith("docket: "), result
    return result.err


def test_gh_aw_s_limits_are_refused_clearly_and_nothing_is_written(based: Repo) -> None:
    name = declare(based, {"name": "history", "type": "log"}, max_record_kb=1, max_segment_kb=1)
    good = (FIXTURES / "01-log-append" / "ledger.jsonl").read_bytes().splitlines(keepends=True)[1]
    shard = "ledger/shards/00000000-0000-4000-8000-000000000000.jsonl"
    big = commit_files(based, {shard: good * 4}, None, "over one segment")
    plumb(based, "update-ref", "refs/heads/ledgers/history", big)
    before = snapshot(based)
    err = refused(based, "ledger", "query", name, "SELECT 1")
    assert f"{shard} holds {len(good) * 4} bytes, more than max_segment_kb = 1 KiB" in err
    err = refused(based, "ledger", "append", name, '{"operation": "append", "value": "x"}')
    assert tip(based, "ledgers/history") == big and snapshot(based) == before

    for files, words in (
        ({"ledger/shards/not-a-uuid.jsonl": good}, "is not named <uuidv4>.jsonl"),
        ({shard: good.rstrip(b"\n")}, "does not end with a newline (gh-aw: truncated-record)"),
        ({shard: good, "ledger/coverage/" + "0" * 64 + ".jsonl": b"{}\n"}, "compaction coverage files"),
    ):
        bad = commit_files(based, files, None, "bad")
        plumb(based, "update-ref", "refs/heads/ledgers/history", bad)
        assert words in refused(based, "ledger", "query", name, "SELECT 1")
        refused(based, "ledger", "append", name, '{"operation": "append", "value": "x"}')
        assert tip(based, "ledgers/history") == bad

    many = {f"ledger/shards/00000000-0000-4000-8000-{n:012x}.jsonl": good for n in range(1025)}
    crowded = commit_files(based, many, None, "1025 shards")
    plumb(based, "update-ref", "refs/heads/ledgers/history", crowded)
    assert "1025 shard files, more than the 1024 gh-aw reads" in refused(based, "ledger", "query", name, "SELECT 1")

    # A line over gh-aw's written-line limit (max_record_kb KiB + 5 KiB) is refused before any commit.
    plumb(based, "update-ref", "-d", "refs/heads/ledgers/history")
    value = "v" * (7 << 10)
    err = refused(based, "ledger", "append", name, json.dumps({"operation": "append", "value": value}))
    assert "over gh-aw's limit of 1024 bytes for one written line" in err
    assert tip(based, "ledgers/history") == "" and snapshot(based) == before


def test_declarations_of_the_storage_are_checked(based: Repo) -> None:
    config = based.path / ".docket" / "config.toml"
    for text, words in (
        ('[ledgers.h]\ntype = "log"\nsource = "tree"\n', 'ledgers.h.source: use "file"'),
        ('[ledgers.h]\ntype = "log"\nmax_segment_kb = 200\n', 'only a ledger with source = "branch"'),
        ('[ledgers.h]\ntype = "log"\nsource = "branch"\nmax_segment_kb = 20000\n', "gh-aw allows max_record_kb"),
        ('[ledgers.h]\ntype = "log"\nsource = "branch"\nmax_record_kb = 33\n', "gh-aw allows 1 to 32"),
    ):
        config.write_text(text)
        assert words in refused(based, "ledger", "query", "h", "SELECT 1")


def test_a_checked_out_ledger_branch_is_not_written(based: Repo) -> None:
    name = declare(based, {"name": "metrics", "type": "counter"})
    ok_op(based, name, {"operation": "increment", "name": "runs", "amount": 1})
    worktree = based.path.parent / "wt"
    based.git("worktree", "add", "-q", str(worktree), f"ledgers/{name}")
    before = tip(based, f"ledgers/{name}")
    err = refused(based, "ledger", "append", name, '{"operation": "increment", "name": "runs", "amount": 1}')
    assert "ledgers/metrics is checked out" in err and tip(based, f"ledgers/{name}") == before


def test_concurrent_writers_each_land_a_commit_on_top(based: Repo, tmp_path: Path) -> None:
    """Two writers that share no projection lock (separate caches) race on the ref: compare-and-swap keeps both."""
    name = declare(based, {"name": "metrics", "type": "counter"})
    writes, writers = 4, 3
    script = (
        f"for i in $(seq {writes}); do {DOCKET} ledger append {name} "
        '\'{"operation": "increment", "name": "runs", "amount": 1}\' >/dev/null || exit 1; done'
    )
    procs = [
        subprocess.Popen(
            ["sh", "-c", script], cwd=based.path, env={**based.env, "XDG_CACHE_HOME": str(tmp_path / f"cache{n}")}
        )
        for n in range(writers)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0] * writers
    history = based.git("rev-list", "--parents", f"ledgers/{name}").splitlines()
    assert len(history) == writers * writes and all(len(line.split()) <= 2 for line in history)  # linear
    assert query(based, name, "SELECT value FROM state") == [{"value": writers * writes}]


def test_a_write_on_a_branch_that_moved_since_the_read_is_refused_by_compare_and_swap(based: Repo) -> None:
    """branch.append moves the ref only from the tip it read (what the retry loop of every write relies on)."""
    from docket_git.typed import branch

    name = declare(based, {"name": "metrics", "type": "counter"})
    ok_op(based, name, {"operation": "increment", "name": "runs", "amount": 1})
    stale = branch.read(based.path, name, (100, 32))
    ok_op(based, name, {"operation": "increment", "name": "runs", "amount": 1})  # moves the branch
    now = tip(based, f"ledgers/{name}")
    with pytest.raises(branch.Moved):
        branch.append(based.path, stale, [(branch.shard_path(), b"{}\n")], "stale")
    assert tip(based, f"ledgers/{name}") == now
    fresh = branch.read(based.path, name, (100, 32))
    made = branch.append(based.path, fresh, [(branch.shard_path(), b"{}\n")], "fresh")
    assert tip(based, f"ledgers/{name}") == made
    assert based.git("rev-list", "--parents", "-n", "1", made).split()[1:] == [now]

    # Creating the branch is a compare-and-swap too: it must still be missing.
    plumb(based, "update-ref", "-d", f"refs/heads/ledgers/{name}")
    empty = branch.read(based.path, name, (100, 32))
    plumb(based, "update-ref", f"refs/heads/ledgers/{name}", made)
    with pytest.raises(branch.Moved):
        branch.append(based.path, empty, [(branch.shard_path(), b"{}\n")], "stale")
    assert tip(based, f"ledgers/{name}") == made


def test_a_current_projection_is_proved_from_the_ref_files_without_pygit2(based: Repo) -> None:
    name = declare(based, {"name": "metrics", "type": "counter"})
    ok_op(based, name, {"operation": "increment", "name": "runs", "amount": 3})
    for packed in (False, True):
        if packed:
            based.git("pack-refs", "--all")  # the tips now come from packed-refs
            assert not (based.path / ".git" / "refs" / "heads" / "ledgers" / name).exists()
        query(based, name, "SELECT 1")
        proc, modules = based.imports("ledger", "query", name, "SELECT name, value FROM state", "--json")
        assert proc.returncode == 0 and json.loads(proc.stdout) == [{"name": "runs", "value": 3}], proc.stderr
        assert "pygit2" not in modules
    # A tip moved by git alone (here: back to an older commit) is seen: the projection is rebuilt from the branch.
    ok_op(based, name, {"operation": "increment", "name": "runs", "amount": 4})
    assert query(based, name, "SELECT value FROM state") == [{"value": 7}]
    based.git("update-ref", f"refs/heads/ledgers/{name}", f"ledgers/{name}~1")
    assert query(based, name, "SELECT value FROM state") == [{"value": 3}]


def test_check_names_the_shard_file_and_its_line(based: Repo) -> None:
    case = FIXTURES / "01-log-append"
    name = declare(based, json.loads((case / "config.json").read_text()))
    old = build_branch(based, case)
    shard = "ledger/shards/ffffffff-0000-4000-8000-000000000000.jsonl"  # sorts last: its lines come after 3 others
    good = (case / "ledger.jsonl").read_bytes().splitlines(keepends=True)[0]
    plumb(based, "update-ref", f"refs/heads/ledgers/{name}", commit_files(based, {shard: good + b"{bad\n"}, old, "x"))
    checked = based.docket("ledger", "check", name)
    assert checked.code == 1 and f"  {shard} line 2: invalid-json" in checked.out, checked
    assert f"docket: branch ledgers/{name} has 2 diagnostic(s)" in checked.out  # and the duplicate of line 1
    strict = based.docket("ledger", "query", name, "SELECT 1", "--strict")
    assert strict.code == 1 and f"({shard} line " in strict.err, strict


def test_a_write_leaves_the_projection_a_full_replay_of_the_branch_would_build(based: Repo) -> None:
    """A single-shard write updates the projection in place (the new shard's lines at their place in path order,
    the lines after it moved down): it must equal a projection replayed from the branch afresh."""
    case = FIXTURES / "04-table-transitions"
    name = declare(based, json.loads((case / "config.json").read_text()))
    old = build_branch(based, case)
    bad = {
        "ledger/shards/00000000-0000-4000-8000-000000000000.jsonl": b"{first bad\n",
        "ledger/shards/ffffffff-ffff-4fff-bfff-ffffffffffff.jsonl": b"{last bad\n",
    }
    plumb(based, "update-ref", f"refs/heads/ledgers/{name}", commit_files(based, bad, old, "bad lines"))
    sqls = (
        "SELECT ordinal, id, sha, line, record_id FROM records ORDER BY ordinal",
        "SELECT code, line, detail FROM diagnostics ORDER BY line, code",
        "SELECT key, value FROM state ORDER BY key",
        "SELECT sha FROM heads ORDER BY sha",
    )
    projection = Path(based.ok("ledger", "path", name).out.strip())
    for i in range(4):
        inode = projection.stat().st_ino
        ok_op(based, name, {"operation": "upsert", "value": {"id": f"n{i}", "severity": "low"}})
        in_place = [query(based, name, sql) for sql in sqls]
        assert projection.stat().st_ino == inode  # updated in place and proved current: never replayed
    # The shard named ffff... sorts last: its bad line is the last line, below every shard written since.
    assert [d["line"] for d in in_place[1]] == [1, len(in_place[0]) + 2]
    for path in projection.parent.iterdir():  # the projection and its seal: the next query replays the branch
        path.chmod(0o644)
        path.unlink()
    assert [query(based, name, sql) for sql in sqls] == in_place


def test_a_branch_whose_shard_folder_is_not_a_folder_is_refused(based: Repo) -> None:
    name = declare(based, {"name": "history", "type": "log"})
    for mode in ("100644", "160000"):  # a file, a submodule entry (an object the repository does not hold)
        target = plumb(based, "hash-object", "-w", "--stdin", stdin=b"x\n") if mode == "100644" else "1" * 40
        index = based.path.parent / "submodule-index"
        index.unlink(missing_ok=True)
        env = git_env(based, index)
        plumb(based, "update-index", "--add", "--cacheinfo", f"{mode},{target},ledger/shards", env=env)
        commit = plumb(based, "commit-tree", plumb(based, "write-tree", env=env), "-m", "odd")
        plumb(based, "update-ref", f"refs/heads/ledgers/{name}", commit)
        assert "ledger/shards is not a folder" in refused(based, "ledger", "query", name, "SELECT 1")


def test_a_note_s_citation_pins_go_to_a_pins_file_on_the_branch_where_gh_aw_does_not_read(based: Repo) -> None:
    case = FIXTURES / "08-notes-votes-order-ab"
    name = declare(based, json.loads((case / "config.json").read_text()))
    old = build_branch(based, case)
    (based.path / "src.txt").write_text("a\nb\nc\n")
    based.git("add", "src.txt")
    based.git("commit", "-q", "-m", "src")
    before = snapshot(based)
    added = based.docket(
        "ledger", "note-add", name, "--subject", "s", "--note", "n", "--reason", "r", "--cite", "src.txt:2"
    )
    assert added.code == 0, added.err
    rid = added.out.split("\t")[0]
    new = tip(based, f"ledgers/{name}")
    added_files = sorted(line.split("\t")[1] for line in shard_diff(based, old, new))
    assert len(added_files) == 2 and added_files[0].startswith("docket/pins/") and SHARD.fullmatch(added_files[1])
    pin = json.loads(based.git("show", f"{new}:{added_files[0]}"))
    assert pin["record_id"] == rid and pin["citation"] == 0 and pin["commit"] == tip(based, "HEAD")
    citation = json.loads(based.git("show", f"{new}:{added_files[1]}"))["payload"]["citations"][0]
    assert citation == {"type": "repository", "path": "src.txt", "start_line": 2}  # what gh-aw accepts, no pins
    assert snapshot(based) == before  # no pins file in the work tree either

    verified = {
        row["note_id"]: row["status"] for row in json.loads(based.docket("ledger", "verify", name, "--json").out)
    }
    assert verified[rid] == "unchanged"
    assert set(verified.values()) - {"unchanged"} <= {"not pinned", "missing"}  # gh-aw's notes carry no pins
    (based.path / "src.txt").write_text("a\nB\nc\n")
    row = next(r for r in json.loads(based.docket("ledger", "verify", name, "--json").out) if r["note_id"] == rid)
    assert row["status"] == "changed"


def test_a_file_ledger_never_loads_branch_storage(based: Repo) -> None:
    (based.path / ".docket" / "config.toml").write_text('[ledgers.metrics]\ntype = "counter"\n')
    ok_op(based, "metrics", {"operation": "increment", "name": "runs", "amount": 1})
    for args in (("ledger", "append", "metrics", '{"operation": "increment", "name": "runs", "amount": 1}'),
                 ("ledger", "query", "metrics", "SELECT value FROM state")):  # fmt: skip
        proc, modules = based.imports(*args)
        assert proc.returncode == 0, proc.stderr
        assert "docket_git.typed.branch" not in modules and "docket_git.typed.api" in modules
