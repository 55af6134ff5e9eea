"""An append reads only the ledger's tail when the index proves it holds the whole file, and stays safe.

The store's ``append`` asks the index to prove itself current on the open
ledger (stat, length, digest of the last 4 KB), validates the new records
against it, writes them at the end and lets the index take in the bytes past
its last checkpoint but one. These tests hold it to the whole-file path's results: the same
index as a fresh build after any mix of appends and edits, a failed write
that leaves every byte as it was, and a ledger changed behind the index's
back that is read (and refused) whole.
"""

from __future__ import annotations

import os
import resource
import signal
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docket_git.ledger import canonical, index, project, recording
from docket_git.ledger.append import append
from tests.hypothesis_helpers import profile

from .conftest import DOCKET, Repo, rec
from .test_context_properties import ledgers
from .test_index import check, encode
from .test_outline import cache_home, ledger_in


def draft(text: str, **fields: object) -> dict:
    prov = {"ts": "2026-01-01T00:00:00+00:00", "author": "tester", "session": "", "branch": ""}
    return recording.draft("claim", text, {"state": "unassessed", **fields}, prov)


def tables(conn: sqlite3.Connection) -> dict:
    """Every row of the index but the meta rows that say how it was reached (indexed_from)."""
    out = {
        name: conn.execute(f"SELECT * FROM {name} ORDER BY rowid").fetchall()
        for name in ("checkpoints", "records", "relations", "scopes")
    }
    for name in ("blocked_by", "resolved_by"):
        out[name] = sorted(conn.execute(f"SELECT * FROM {name}").fetchall())
    out["meta"] = sorted(row for row in conn.execute("SELECT key, value FROM meta") if row[0] != "indexed_from")
    return out


def fresh_tables(path: Path) -> dict:
    """The tables of an index built from scratch for the ledger at path (its own cache dir)."""
    with cache_home():
        ix = index.open_index(path)
        try:
            assert ix.how == "rebuilt"
            return tables(ix.conn)
        finally:
            ix.close()


def index_tables(path: Path) -> dict:
    ix = index.open_index(path)
    try:
        assert ix.how == "current"  # the append left the index proving itself
        return tables(ix.conn)
    finally:
        ix.close()


def rchar() -> int:
    """Bytes this process has read through read(2) and pread(2) so far (Linux)."""
    with open("/proc/self/io") as handle:
        for line in handle:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs Linux's /proc/self/io")
def test_an_append_reads_the_tail_not_the_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "repo" / ".docket" / "ledger.jsonl"
    path.parent.mkdir(parents=True)
    records = [rec(f"c{i}", f"premise {i} " + "x" * 2000, scope=["src/a.py"]) for i in range(1, 2501)]
    path.write_bytes(encode(records))
    size = path.stat().st_size
    assert size > 5_000_000
    index.open_index(path).close()
    for n in range(3):
        before = rchar()
        (written,) = append(path, [draft(f"appended {n}", supports=[["c7"]], scope=["src/a.py"])])
        read = rchar() - before
        assert written["id"] == f"c{2501 + n}"
        # The last block and the index's pages, never the 5 MB before them.
        assert read < 600_000, f"append read {read} bytes of a {size}-byte ledger"
    assert path.read_bytes()[:size] == encode(records)
    assert index_tables(path) == fresh_tables(path)


APPENDS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 3)),
        st.tuples(st.just("supersede"), st.integers(0, 70)),
        st.tuples(st.just("answer"), st.integers(0, 70)),
        st.tuples(st.just("hand-append"), st.integers(0, 0)),
        st.tuples(st.just("no-final-newline"), st.integers(0, 0)),
        st.tuples(st.just("cut"), st.integers(1, 5)),
    ),
    min_size=1,
    max_size=8,
)


@profile(10, 200)
@given(records=ledgers(), ops=APPENDS, block=st.sampled_from([64, 300, 1 << 16]))
def test_appends_leave_the_index_a_fresh_build_would_make(records: list[dict], ops: list, block: int) -> None:
    """Appends (single, batches, supersessions, answers) mixed with edits behind the index's back."""
    old_block = index.schema.BLOCK
    index.schema.BLOCK = block  # small blocks: the append's tail starts at a checkpoint well inside the file
    try:
        with cache_home() as tmp:
            path = ledger_in(tmp, encode(records))
            index.open_index(path).close()
            for n, (op, arg) in enumerate(ops):
                ids = [r["id"] for r in index.read(path).records]
                size = path.stat().st_size
                if op == "append":
                    append(path, [draft(f"append {n}.{i}", scope=["src/x.py"]) for i in range(arg)])
                elif op == "supersede":
                    claims = [i for i in ids if i[0] == "c"]
                    retired = {t for r in index.read(path).records for t in r.get("supersedes") or ()}
                    open_claims = [c for c in claims if c not in retired]
                    if open_claims:
                        target = open_claims[arg % len(open_claims)]
                        append(path, [draft(f"supersede {n}", supersedes=[target])])
                elif op == "answer":
                    questions = [i for i in ids if i[0] == "q"]
                    if questions:
                        append(path, [draft(f"answer {n}", answers=[questions[arg % len(questions)]])])
                elif op == "hand-append":  # another tool appends: the index cannot prove itself
                    top = max(int(i[1:]) for i in ids)
                    lead = b"" if path.read_bytes().endswith(b"\n") else b"\n"
                    with path.open("ab") as handle:
                        handle.write(lead + canonical.line(rec(f"c{top + 1}", f"by hand {n}")))
                elif op == "no-final-newline":
                    data = path.read_bytes()
                    if data.endswith(b"\n"):
                        path.write_bytes(data[:-1])
                        index.open_index(path).close()  # proven again: the next append writes the newline
                elif op == "cut":  # an older state of the file (a checkout)
                    data = path.read_bytes()
                    lines = data.splitlines(keepends=True)
                    if len(lines) > arg:
                        path.write_bytes(b"".join(lines[:-arg]))
                shown = index.read(path).records
                check(path, shown)  # every row as ledger.project derives it from scratch
                assert index_tables(path) == fresh_tables(path)
                if op in ("append", "supersede", "answer") and path.stat().st_size > size:
                    assert path.read_bytes().endswith(b"\n")
    finally:
        index.schema.BLOCK = old_block


def test_an_append_after_a_final_line_without_newline_writes_the_newline(repo: Repo) -> None:
    repo.ok("claim", "one")
    repo.ok("claim", "two")
    data = repo.ledger.read_bytes()
    repo.ledger.write_bytes(data[:-1])
    repo.ok("list")  # the index proves the file as it is
    out = repo.ok("claim", "three").out
    assert out.startswith("c3 ")
    lines = repo.ledger.read_bytes().split(b"\n")
    assert repo.ledger.read_bytes().startswith(data) and lines[-1] == b"" and len(lines) == 4
    repo.ok("check")


def test_a_line_glued_onto_a_last_line_without_newline_is_refused_as_from_scratch(repo: Repo) -> None:
    """The index's last checkpoint ends mid-line there: it must not vouch for the line's start."""
    repo.ok("claim", "one")
    repo.ok("claim", "two")
    data = repo.ledger.read_bytes()[:-1]
    repo.ledger.write_bytes(data)
    repo.ok("list")  # indexed without the final newline
    glued = data + canonical.line(rec("c3"))  # another tool appends without adding the newline
    repo.ledger.write_bytes(glued)
    for args in (["list"], ["claim", "three"]):
        result = repo.docket(*args)
        assert result.code == 1 and result.err.startswith("docket: line 2: invalid JSON: Extra data"), result.err
    assert repo.ledger.read_bytes() == glued


def test_a_ledger_changed_behind_the_index_is_refused_as_before(repo: Repo) -> None:
    repo.ok("claim", "one")
    repo.ok("claim", "two")
    repo.ok("claim", "three")
    text = repo.ledger.read_text()
    # A rewritten prefix (same length): the index's stat no longer matches, so the whole file is read.
    bad = text.replace('"id":"c2"', '"id":"c1"', 1)
    repo.ledger.write_text(bad)
    result = repo.docket("claim", "four")
    assert result.code == 1 and result.err == "docket: line 2: c1: duplicate ID\n"
    assert repo.ledger.read_text() == bad
    # Conflict markers in the middle of the file.
    lines = text.splitlines(keepends=True)
    marked = "".join([lines[0], "<<<<<<< HEAD\n", *lines[1:]])
    repo.ledger.write_text(marked)
    result = repo.docket("claim", "four")
    assert result.code == 1 and result.err.startswith("docket: line 2:")
    assert repo.ledger.read_text() == marked


def _limited(limit: int) -> Callable[[], None]:
    def setup() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    return setup


@pytest.mark.parametrize("batch", [False, True])
def test_a_failed_write_leaves_the_ledger_byte_identical(repo: Repo, batch: bool) -> None:
    """A write cut short (here: past the file size limit) is cut back to the old length and fsynced."""
    # 150 KB: the append's tail starts at a checkpoint inside the file.
    repo.ledger.write_bytes(encode([rec(f"c{i}", f"premise {i} " + "y" * 1000) for i in range(1, 151)]))
    repo.ok("list")
    before = repo.ledger.read_bytes()
    lock = repo.ledger.with_name("ledger.jsonl.lock")
    big = "z" * 20_000
    if batch:
        args = [DOCKET, "record", "-"]
        stdin = "".join(f'{{"kind": "claim", "text": "batch {i} {big}"}}\n' for i in range(3)).encode()
    else:
        args, stdin = [DOCKET, "claim", f"too long {big}"], None
    proc = subprocess.run(
        args,
        cwd=repo.path,
        env=repo.env,
        input=stdin,
        capture_output=True,
        preexec_fn=_limited(len(before) + 5000),
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stderr.decode() == f"docket: append: cannot write {repo.ledger}: File too large\n"
    assert repo.ledger.read_bytes() == before
    assert not lock.exists() or lock.read_bytes() == b""  # no batch left journaled
    after = repo.ok("claim", "after")
    assert after.out.startswith("c151 ") and "unfinished" not in after.err
    repo.ok("check")


@profile(15, 300)
@given(records=ledgers(), keep=st.integers(0, 69), written=st.booleans())
def test_the_effects_of_answers_read_from_the_index_are_the_projections(
    records: list[dict], keep: int, written: bool
) -> None:
    """What ``docket claim --answers`` reports (resolves nothing, and why) equals ``project.consequences``."""
    keep = max(1, min(keep, len(records) - 1))
    if len(records) < 2:
        return
    tail = [{**r, "supersedes": []} for r in records[keep:]]  # the index answers only for these
    everything = records[:keep] + tail
    with cache_home() as tmp:
        path = ledger_in(tmp, encode(everything if written else records[:keep]))
        assert index.effects(path, tail, dry_run=not written) == project.consequences(everything, len(tail))
        if written:  # records appended after them: the index no longer says what they did alone
            with path.open("ab") as handle:
                handle.write(canonical.line(rec("c999", "later")))
            assert index.effects(path, tail, dry_run=False) is None


@profile(37, 750)
@given(records=ledgers(), keep=st.integers(0, 69), written=st.booleans())
def test_the_effects_of_supersessions_read_from_the_index_are_the_projections(
    records: list[dict], keep: int, written: bool
) -> None:
    """What ``docket decision --supersedes`` reports (blocked decisions, reopened questions, idle answers)
    equals ``project.consequences`` of the whole ledger, whether the tail is written or a dry run."""
    if len(records) < 2:
        return
    keep = max(1, min(keep, len(records) - 1))
    tail = records[keep:]
    with cache_home() as tmp:
        path = ledger_in(tmp, encode(records if written else records[:keep]))
        assert index.effects(path, tail, dry_run=not written) == project.consequences(records, len(tail))


def test_a_supersession_deep_in_a_chain_reports_what_it_blocks_and_reopens() -> None:
    """A chain d2 <- d4 <- d5, d8 and d10 (depends_on; d10 retired), answers on the way, a supersession of its root."""
    records = [
        rec("c1", "premise", state="accepted"),
        rec("d2", "root", choice="x", depends_on=["c1"]),
        rec("q3", "open?"),
        rec("d4", "middle", choice="x", depends_on=["d2"], answers=["q3"]),
        rec("d5", "leaf", choice="x", depends_on=["d4"]),
        rec("q6", "also?"),
        rec("c7", "holds", state="accepted", answers=["q6"]),
        rec("d8", "leaf too", choice="x", depends_on=["d4"], answers=["q6"]),
        rec("c9", "unrelated", state="accepted"),
        rec("d10", "leaf, replaced", choice="x", depends_on=["d4"]),
        rec("d11", "leaf, replacement", choice="z", supersedes=["d10"]),
    ]
    tail = [rec("d12", "root, revoked", choice="y", state="revoked", supersedes=["d2"], answers=["q6"])]
    with cache_home() as tmp:
        path = ledger_in(tmp, encode(records))
        found = index.effects(path, tail, dry_run=True)
    assert found == project.consequences(records + tail, 1)
    assert found == [
        "d4 is now blocked: it depends on d2, which d12 supersedes",
        "d5 is now blocked: it depends on d4, which is no longer current support",
        "d8 is now blocked: it depends on d4, which is no longer current support",
        "q3 is open again: its answer d4 is blocked by d2",
        "d12 answers q6 but resolves nothing: it is revoked; only an applicable decision resolves a question",
    ]
