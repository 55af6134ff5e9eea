"""The ledger index: after any edit sequence it equals a from-scratch projection, and it proves itself current."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docket_git.errors import _notices
from docket_git.ledger import canonical, db, index, project, store
from tests.hypothesis_helpers import profile

from .conftest import Repo, commit, rec
from .test_context_properties import ledgers
from .test_outline import cache_home, expected_tables, ledger_in, query_tables


def encode(records: list[dict]) -> bytes:
    return b"".join(canonical.line(r) for r in records)


def expected(data: bytes, records: list[dict]) -> dict:
    """What the index must hold for these records, computed from scratch by ``ledger.project``."""
    views = project.project(records)
    degree: dict[str, int] = {}
    for r in records:
        cited = [t for g in r.get("supports") or () for t in g] + [
            *(r.get("depends_on") or ()),
            *(r.get("answers") or ()),
        ]
        for t in cited:
            degree[t] = degree.get(t, 0) + 1
    for v in views:
        for resolver in v["resolved_by"]:
            degree[resolver] = degree.get(resolver, 0) + 1
    rows = []
    offset = 0
    for seq, (record, view) in enumerate(zip(records, views, strict=True)):
        line = canonical.line(record)[:-1]
        rows.append(
            (
                seq,
                record["id"],
                record["kind"],
                record["state"],
                view["state"],
                view["retired_by"],
                None if record["kind"] != "decision" else int(view["applicable"]),
                int(bool(record.get("pinned"))),
                record["text"],
                offset,
                len(line),
                degree.get(record["id"], 0),
            )
        )
        offset += len(line) + 1
    relations = sorted(
        [(r["id"], "supports", t, n) for r in records for n, g in enumerate(r.get("supports") or ()) for t in g]
        + [
            (r["id"], kind, t, -1)
            for r in records
            for kind in ("depends_on", "answers", "supersedes")
            for t in r.get(kind) or ()
        ]
    )
    return {
        "records": rows,
        "blocked_by": {v["id"]: v["blocked_by"] for v in views if v.get("blocked_by")},
        "resolved_by": {v["id"]: v["resolved_by"] for v in views if v["resolved_by"]},
        "relations": relations,
        "scopes": sorted((r["id"], s, index.scope_kind(s)) for r in records for s in dict.fromkeys(r["scope"])),
        **expected_tables(records),
    }


def actual(conn: sqlite3.Connection) -> dict:
    rows = conn.execute(
        "SELECT seq, id, kind, recorded_state, state, retired_by, applicable, pinned, text, line_offset, line_length, "
        "degree FROM records ORDER BY seq"
    ).fetchall()
    blocked: dict[str, list[str]] = {}
    for rid, b in conn.execute("SELECT decision, blocker FROM blocked_by ORDER BY decision, position"):
        blocked.setdefault(rid, []).append(b)
    resolved: dict[str, list[str]] = {}
    for q, r in conn.execute("SELECT question, resolver FROM resolved_by ORDER BY question, position"):
        resolved.setdefault(q, []).append(r)
    relations = sorted(
        (s, t, g, -1 if n is None else n) for s, t, g, n in conn.execute("SELECT * FROM relations").fetchall()
    )
    return {
        "records": rows,
        "blocked_by": blocked,
        "resolved_by": resolved,
        "relations": relations,
        "scopes": sorted(conn.execute("SELECT * FROM scopes").fetchall()),
        **query_tables(conn),
    }


def check(path: Path, records: list[dict]) -> index.Index:
    ix = index.open_index(path)
    try:
        assert actual(ix.conn) == expected(path.read_bytes(), records)
        data = path.read_bytes()
        for offset, length, digest in ix.conn.execute("SELECT line_offset, line_length, line_digest FROM records"):
            assert canonical.sha256(data[offset : offset + length]) == digest
    finally:
        ix.close()
    return ix


def rewritten(records: list[dict], start: int, mark: str) -> list[dict]:
    """Another branch's ledger: the same records up to start, different text after it."""
    return [r if i < start else {**r, "text": f"{r['text']} {mark}"} for i, r in enumerate(records)]


EDITS = st.lists(
    st.one_of(
        st.tuples(st.just("grow"), st.integers(1, 70)),
        st.tuples(st.just("branch"), st.integers(0, 70)),
        st.tuples(st.just("same-length"), st.integers(0, 70)),
        st.tuples(st.just("delete-index"), st.just(0)),
        st.tuples(st.just("corrupt-index"), st.just(0)),
    ),
    min_size=1,
    max_size=6,
)


def unlinked(record: dict) -> dict:
    """The record with no relations: what another branch might have recorded instead (still valid)."""
    return {**record, "supports": [], "depends_on": [], "answers": [], "supersedes": []}


#: Edits that change which records supersede, answer and depend on which: a checkout of an older
#: commit (rewind), a branch whose records cite nothing (unlink), and back (grow, branch).
RELINKS = st.lists(
    st.one_of(
        st.tuples(st.just("rewind"), st.integers(1, 70)),
        st.tuples(st.just("unlink"), st.integers(0, 70)),
        st.tuples(st.just("grow"), st.integers(1, 70)),
        st.tuples(st.just("branch"), st.integers(0, 70)),
    ),
    min_size=1,
    max_size=8,
)


@profile(10, 60)
@given(records=ledgers(), first=st.integers(1, 70), edits=EDITS, block=st.sampled_from([64, 512, 1 << 16]))
def test_index_equals_a_fresh_projection_after_any_edit_sequence(
    records: list[dict], first: int, edits: list[tuple[str, int]], block: int
) -> None:
    run_edits(records, first, edits, block)


@profile(15, 120)
@given(records=ledgers(), first=st.integers(1, 70), edits=RELINKS, block=st.sampled_from([64, 512]))
def test_index_settles_only_what_a_tail_rewrite_changes_and_still_equals_a_fresh_projection(
    records: list[dict], first: int, edits: list[tuple[str, int]], block: int
) -> None:
    """Supersessions, answers and prerequisites that come and go with a branch's tail (_settle_changed)."""
    run_edits(records, first, edits, block)


def run_edits(records: list[dict], first: int, edits: list[tuple[str, int]], block: int) -> None:
    old_block = index.schema.BLOCK
    index.schema.BLOCK = block  # small blocks: many checkpoints, so tail rewrites keep a shared prefix
    try:
        with cache_home() as tmp:
            path = tmp / "repo" / ".docket" / "ledger.jsonl"
            path.parent.mkdir(parents=True)
            shown = records[: min(first, len(records))]
            path.write_bytes(encode(shown))
            check(path, shown)
            for n, (op, arg) in enumerate(edits):
                if op == "grow":
                    shown = records[: min(len(records), len(shown) + arg)]
                    path.write_bytes(encode(shown))
                elif op == "branch":
                    shown = rewritten(shown, min(arg, len(shown)), f"b{n}")
                    path.write_bytes(encode(shown))
                elif op == "rewind":
                    shown = shown[: max(0, len(shown) - arg)]
                    path.write_bytes(encode(shown))
                elif op == "unlink":
                    shown = [r if i < arg else unlinked(r) for i, r in enumerate(shown)]
                    path.write_bytes(encode(shown))
                elif op == "same-length" and shown:
                    # Same length, same mtime: only the content (and ctime) differ.
                    i = min(arg, len(shown) - 1)
                    text = shown[i]["text"]
                    if not (text[-1].isascii() and text[-1].isalnum()):
                        continue  # a character JSON escapes would change the length
                    flipped = "x" if text[-1] != "x" else "y"
                    st_before = os.stat(path)
                    shown = [*shown[:i], {**shown[i], "text": text[:-1] + flipped}, *shown[i + 1 :]]
                    data = encode(shown)
                    assert len(data) == st_before.st_size
                    path.write_bytes(data)
                    os.utime(path, ns=(st_before.st_atime_ns, st_before.st_mtime_ns))
                elif op == "delete-index":
                    db.discard(index.db_path(path))
                elif op == "corrupt-index":
                    target = index.db_path(path)
                    db.discard(target)
                    target.write_bytes(b"not a database, " * 100)
                check(path, shown)
            assert not any("in-memory" in m for m in _notices)
    finally:
        index.schema.BLOCK = old_block


def test_a_tail_rewrite_reindexes_only_past_the_shared_checkpoint(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "repo" / ".docket" / "ledger.jsonl"
    path.parent.mkdir(parents=True)
    records = [rec(f"c{i}", f"premise number {i} " + "x" * 200, state="accepted") for i in range(1, 801)]
    path.write_bytes(encode(records))
    assert index.open_index(path).how == "rebuilt"
    assert index.open_index(path).how == "current"
    # Another branch: the same first 700 records, a different tail, the same length and mtime.
    other = [r if i < 700 else {**r, "text": r["text"].replace("premise", "PREMISE")} for i, r in enumerate(records)]
    data = encode(other)
    before = os.stat(path)
    assert len(data) == before.st_size
    path.write_bytes(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    ix = index.open_index(path)
    assert ix.how == "updated"
    kept = ix.conn.execute("SELECT value FROM meta WHERE key = 'indexed_from'").fetchone()[0]
    assert 600 < kept <= 700  # within one 64 KB block of the shared prefix, never from scratch
    assert actual(ix.conn) == expected(data, other)
    texts = [t for (t,) in ix.conn.execute("SELECT text FROM records WHERE seq >= 700")]
    assert texts and all(t.startswith("PREMISE") for t in texts)


def test_a_same_length_edit_far_from_the_tail_is_seen_by_its_ctime(tmp_path: Path, monkeypatch) -> None:
    """Same size, same inode, mtime put back, the tail untouched: only ctime tells the index it is stale."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "repo" / ".docket" / "ledger.jsonl"
    path.parent.mkdir(parents=True)
    records = [rec(f"c{i}", f"premise number {i} " + "x" * 200, state="accepted") for i in range(1, 801)]
    path.write_bytes(encode(records))
    index.open_index(path).close()
    edited = [{**r, "text": r["text"].replace("premise", "PREMISE")} if i == 4 else r for i, r in enumerate(records)]
    data = encode(edited)
    before = os.stat(path)
    assert len(data) == before.st_size and data[-index.TAIL :] == path.read_bytes()[-index.TAIL :]
    with open(path, "r+b") as handle:  # in place: the inode stays
        handle.write(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    ix = index.open_index(path)
    try:
        assert ix.how != "current"
        assert ix.conn.execute("SELECT text FROM records WHERE id = 'c5'").fetchone()[0].startswith("PREMISE")
    finally:
        ix.close()


def test_a_branch_switch_settles_chains_of_prerequisites_both_ways(tmp_path: Path, monkeypatch) -> None:
    """A supersession in a branch's tail blocks d2 through c1 and d3 through d2; switching back unblocks both.

    Hundreds of filler records sit between the chain and the tail, so each switch is an update past a
    shared block (never a rebuild), and the question answered by d3 follows its resolver.
    """
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "repo" / ".docket" / "ledger.jsonl"
    path.parent.mkdir(parents=True)
    chain = [
        rec("c1", state="accepted"),
        rec("q2"),
        rec("d3", depends_on=["c1"]),
        rec("d4", depends_on=["d3"], answers=["q2"]),
        rec("d5", supports=[["d4"]], depends_on=["d4"]),
    ]
    filler = [rec(f"c{i}", "filler " + "x" * 300, state="accepted") for i in range(6, 600)]
    main = chain + filler + [rec("c600", "main's tail")]
    topic = chain + filler + [rec("c600", "topic's tail", state="accepted", supersedes=["c1"])]
    for records in (main, topic, main, topic[:-1], topic):
        path.write_bytes(encode(records))
        ix = check(path, records)
        assert ix.how in ("rebuilt", "updated", "current")
    ix = index.open_index(path)
    try:
        states = dict(ix.conn.execute("SELECT id, applicable FROM records WHERE kind = 'decision'").fetchall())
        assert states == {"d3": 0, "d4": 0, "d5": 0}
        assert ix.conn.execute("SELECT state FROM records WHERE id = 'q2'").fetchone()[0] == "open"
    finally:
        ix.close()
    path.write_bytes(encode(main))
    ix = index.open_index(path)
    try:
        assert ix.how == "updated"
        states = dict(ix.conn.execute("SELECT id, applicable FROM records WHERE kind = 'decision'").fetchall())
        assert states == {"d3": 1, "d4": 1, "d5": 1}
        assert ix.conn.execute("SELECT state FROM records WHERE id = 'q2'").fetchone()[0] == "resolved"
        assert actual(ix.conn) == expected(path.read_bytes(), main)
    finally:
        ix.close()


def test_a_foreign_version_index_is_rebuilt_silently(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "repo" / ".docket" / "ledger.jsonl"
    path.parent.mkdir(parents=True)
    records = [rec("c1", state="accepted"), rec("d2", depends_on=["c1"])]
    path.write_bytes(encode(records))
    index.open_index(path).close()
    conn = sqlite3.connect(index.db_path(path))
    conn.execute("UPDATE meta SET value = 999 WHERE key = 'schema_version'")
    conn.execute("DROP TABLE scopes")
    conn.commit()
    conn.close()
    ix = index.open_index(path)
    assert ix.how == "rebuilt" and ix.path is not None
    assert actual(ix.conn) == expected(path.read_bytes(), records)


def test_the_index_refuses_an_invalid_ledger_like_every_reader(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "repo" / ".docket" / "ledger.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(encode([rec("c1")]) + b'{"schema":2}\n')
    with pytest.raises(store.LedgerError, match="line 2"):
        index.open_index(path)


def test_a_cache_dir_that_cannot_be_written_gives_an_in_memory_index(tmp_path: Path, monkeypatch) -> None:
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    path = tmp_path / "repo" / ".docket" / "ledger.jsonl"
    path.parent.mkdir(parents=True)
    records = [rec("q1"), rec("c2", state="accepted", answers=["q1"])]
    path.write_bytes(encode(records))
    _notices.clear()
    ix = index.open_index(path)
    assert ix.path is None
    assert len(_notices) == 1 and "in-memory index" in _notices[0]
    assert actual(ix.conn) == expected(path.read_bytes(), records)
    _notices.clear()
    assert json.loads(json.dumps(ix.conn.execute("SELECT state FROM records WHERE id='q1'").fetchone())) == ["resolved"]


def test_an_update_past_the_limit_builds_afresh_in_a_temporary_file(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(index.schema, "BLOCK", 512)
    path = tmp_path / "repo" / ".docket" / "ledger.jsonl"
    path.parent.mkdir(parents=True)
    records = [rec(f"c{i}", f"premise number {i} " + "x" * 200, state="accepted") for i in range(1, 41)]
    path.write_bytes(encode(records[:20]))
    assert index.open_index(path).how == "rebuilt"
    target = index.db_path(path)
    first = os.stat(target).st_ino
    path.write_bytes(encode(records[:30]))
    assert index.open_index(path).how == "updated"  # in place: the same file
    assert os.stat(target).st_ino == first
    monkeypatch.setattr(index.update, "UPDATE_LIMIT", 1000)
    path.write_bytes(encode(records))
    ix = index.open_index(path)
    assert ix.how == "rebuilt" and ix.path == target
    assert os.stat(target).st_ino != first  # built beside it and renamed into place
    assert actual(ix.conn) == expected(path.read_bytes(), records)
    assert not list(target.parent.glob(".*.tmp"))
    ix.close()


def test_a_build_killed_midway_leaves_nothing_the_next_build_keeps(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "repo" / ".docket" / "ledger.jsonl"
    path.parent.mkdir(parents=True)
    records = [rec("c1", state="accepted"), rec("d2", depends_on=["c1"])]
    path.write_bytes(encode(records))
    target = index.db_path(path)
    target.parent.mkdir(parents=True)
    stale = target.with_name(f".{target.name}.99999999.tmp")
    stale.write_bytes(b"half a database")
    ix = index.open_index(path)
    assert ix.how == "rebuilt" and not stale.exists()
    assert actual(ix.conn) == expected(path.read_bytes(), records)
    ix.close()


@profile(8, 50)
@given(records=ledgers(), slice_bytes=st.sampled_from([1, 300, 2000]))
def test_a_build_in_small_slices_equals_a_fresh_projection(records: list[dict], slice_bytes: int) -> None:
    old = store.SLICE
    store.SLICE = slice_bytes  # many slices: rows wait a slice for later citations, the rest is settled at the end
    try:
        with cache_home() as tmp:
            path = ledger_in(tmp, encode(records))
            assert check(path, records).how == "rebuilt"
    finally:
        store.SLICE = old


def test_a_new_work_trees_or_clones_index_is_seeded_from_another_and_equals_a_fresh_projection(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``git worktree add`` or a clone: the first read copies another index of the same ledger and updates it
    past the blocks both ledgers share, rather than building 800 records afresh; an index sharing nothing is not used."""
    monkeypatch.setenv("XDG_CACHE_HOME", repo.env["XDG_CACHE_HOME"])
    records = [rec(f"c{i}", f"premise number {i} " + "x" * 200, state="accepted") for i in range(1, 801)]
    repo.ledger.write_bytes(encode(records))
    commit(repo, "800 records")  # its pre-commit check builds the main tree's index
    assert index.open_index(repo.ledger).how == "current"
    side = repo.path.parent / "side"
    repo.git("worktree", "add", "-q", "-b", "side", str(side))
    ledger = side / ".docket" / "ledger.jsonl"
    other = rewritten(records, 700, "on side")
    ledger.write_bytes(encode(other))
    ix = index.open_index(ledger)
    assert ix.how == "updated"  # a build afresh says "rebuilt"
    kept = ix.conn.execute("SELECT value FROM meta WHERE key = 'indexed_from'").fetchone()[0]
    assert 600 < kept <= 700
    assert actual(ix.conn) == expected(ledger.read_bytes(), other)
    ix.close()
    check(ledger, other)
    assert index.open_index(ledger).how == "current"
    assert index.open_index(repo.ledger).how == "current"  # the sibling's own index is untouched
    check(repo.ledger, records)

    third = repo.path.parent / "third"
    repo.git("worktree", "add", "-q", "--detach", str(third))
    unrelated = [rec(f"c{i}", f"another ledger {i}", state="accepted") for i in range(1, 50)]
    (third / ".docket" / "ledger.jsonl").write_bytes(encode(unrelated))
    assert index.open_index(third / ".docket" / "ledger.jsonl").how == "rebuilt"

    fourth = repo.path.parent / "fourth"
    repo.git("worktree", "add", "-q", "--detach", str(fourth))  # the main tree's ledger, byte for byte
    index.db_path(repo.ledger).write_bytes(b"not a database " * 100)  # siblings that cannot seed: corrupt, gone
    db.discard(index.db_path(ledger))
    assert index.open_index(fourth / ".docket" / "ledger.jsonl").how == "rebuilt"
    check(fourth / ".docket" / "ledger.jsonl", records)

    clone = repo.path.parent / "clone"
    subprocess.run(["git", "clone", "-q", str(repo.path), str(clone)], check=True, env=repo.env)
    assert index.open_index(clone / ".docket" / "ledger.jsonl").how == "updated"
    check(clone / ".docket" / "ledger.jsonl", records)


def test_scope_strings_are_every_distinct_string_in_order_past_the_probes(tmp_path: Path, monkeypatch) -> None:
    """``scope_strings`` probes the scope index string by string up to PROBES, then scans: the same list."""
    from docket_git.ledger.index import reads

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "repo" / ".docket" / "ledger.jsonl"
    path.parent.mkdir(parents=True)
    count = reads.PROBES * 2 + 7
    records = [rec(f"c{i}", f"premise {i}", scope=[f"src/m{i % count}.py", "src/"]) for i in range(1, 2 * count)]
    path.write_bytes(encode(records))
    with index.opened(path) as ix:
        strings = reads.scope_strings(ix.conn)
    assert strings == sorted({s for r in records for s in r["scope"]})
    assert len(strings) == count + 1
