"""The outline read from the ledger index equals the outline built from the records, whatever the index went through."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docket_git.context import outline as outline_module
from docket_git.context.config import defaults
from docket_git.context.outline import Outline
from docket_git.context.scope import matched_scopes
from docket_git.ledger import canonical, index

from .ctx import brief
from .test_context_properties import REQUESTS, TEXT, WORDS, ledgers


def facts(o: Outline) -> dict:
    """Everything an outline holds, in comparable form (lists keep their order).

    Maps an index-backed outline fills on demand are read key by key, for
    every record; a reverse index may name a citing record twice (it cites
    and is resolved), which expansion reads once.
    """
    d = o.derived
    ids = o.ids

    def by_key(lazy, keys) -> dict:
        out = {}
        for rid in keys:
            value = lazy.get(rid)
            if value:
                out[rid] = list(dict.fromkeys(value))
        return out

    return {
        "ids": list(ids),
        "counts": (len(ids), len(o.live), len(o.current), o.retired_count()),
        "pos": dict(o.pos),
        "pos_each": {rid: o.pos[rid] for rid in ids},
        "live": list(o.live),
        "current": set(o.current),
        "current_each": {rid for rid in ids if rid in o.current},
        "retired_by": dict(d.retired_by),
        "retired_each": {rid: d.retired_by.get(rid) for rid in ids},
        "blocked": {rid: list(d.blocked[rid]) for rid in ids if rid[0] == "d"},
        "resolved_by": by_key(d.resolved_by, ids),
        "degrees": dict(o.degrees),
        "degrees_each": {rid: o.degrees.get(rid, 0) for rid in ids},
        "incoming": by_key(o.incoming, ids),
        "pinned": set(o.pinned),
        "scopes": {scope: list(o.scopes[scope]) for scope in o.scopes if o.scopes[scope]},
        "depends": by_key(o.depends, ids),
        "records": {rid: o.records[rid] for rid in o.ids},
        # The ranking's task-free order and coverage's prerequisite closure (SQL when from the index).
        "base_order": list(o.base_order(WEIGHTS, max(1, len(ids) - 1))),
        "base_order_other": list(o.base_order(OTHER_WEIGHTS, max(1, len(ids) - 1))),
        "closure": o.closure([rid for rid in list(ids)[::2] if rid in o.current]),
        "scope_hits": [
            o.scope_hits(matched_scopes(o.scopes, TASK_FILES, weights, RENAMES), weights, max(1, len(ids) - 1))
            for weights in (WEIGHTS, OTHER_WEIGHTS)
        ],
    }


#: Task files for scope_hits: paths under the generated scopes, and the renamed targets below.
TASK_FILES = ["src/a.py", "lib/x.py", "docs/guide.md", "renamed/y.py"]


#: Scopes renamed to a task file (so some hits come through a rename, some only without one).
RENAMES = {"src/b.py": "renamed/y.py", "src/a.py": "renamed/y.py", "billing": "renamed/y.py"}


WEIGHTS = defaults()["weights"]
#: Weights under which degree saturates early and pins and recency weigh differently.
OTHER_WEIGHTS = {**WEIGHTS, "recency": 1000, "degree": 7, "degree_cap": 2, "pinned": 3}


def encode(records: list[dict], blanks: set[int]) -> bytes:
    """Canonical lines, with a blank line after the records whose positions are in blanks."""
    out = []
    for i, record in enumerate(records):
        out.append(canonical.line(record))
        if i in blanks:
            out.append(b"  \n")
    return b"".join(out)


@contextlib.contextmanager
def cache_home() -> Iterator[Path]:
    """A fresh user cache directory for one hypothesis example (function fixtures would be shared)."""
    with tempfile.TemporaryDirectory() as tmp:
        old = os.environ.get("XDG_CACHE_HOME")
        os.environ["XDG_CACHE_HOME"] = tmp
        try:
            yield Path(tmp)
        finally:
            if old is None:
                del os.environ["XDG_CACHE_HOME"]
            else:
                os.environ["XDG_CACHE_HOME"] = old


@contextlib.contextmanager
def eager(on: bool) -> Iterator[None]:
    """Indexed outlines read every record's facts at once (a small ledger's way), or each on demand."""
    old = outline_module.EAGER
    outline_module.EAGER = old if on else -1
    try:
        yield
    finally:
        outline_module.EAGER = old


def loaded(path: Path, data: bytes) -> dict:
    """The facts of the outline read from the index of path once it holds data (both ways: they agree)."""
    path.write_bytes(data)
    with index.opened(path) as ix:
        with eager(True):
            at_once = facts(Outline.from_index(ix))
        with eager(False):
            on_demand = facts(Outline.from_index(ix))
    assert on_demand == at_once
    return on_demand


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=ledgers(),
    steps=st.lists(st.tuples(st.integers(0, 70), st.booleans()), min_size=1, max_size=4),
    blanks=st.sets(st.integers(0, 70), max_size=4),
)
def test_the_outline_from_the_index_equals_a_full_build(
    records: list[dict], steps: list[tuple[int, bool]], blanks: set[int]
) -> None:
    """Whatever the index went through (growth, a rewritten tail, a deleted database), its outline is the build's."""
    with cache_home() as tmp:
        path = tmp / "repo" / ".docket" / "ledger.jsonl"
        path.parent.mkdir(parents=True)
        for cut, other_branch in steps:
            part = records[: min(cut, len(records))]
            if other_branch and part:  # the same IDs, another branch's text: a rewritten tail
                part = [*part[:-1], {**part[-1], "text": part[-1]["text"] + " (other branch)"}]
            assert loaded(path, encode(part, blanks)) == facts(Outline.build(part))
        if steps[0][1]:
            for stale in tmp.rglob("*.sqlite"):
                stale.unlink()
        assert loaded(path, encode(records, blanks)) == facts(Outline.build(records))


def test_an_answer_resolves_and_a_supersession_blocks_in_the_indexed_outline(tmp_path: Path, monkeypatch) -> None:
    from .conftest import rec

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "repo" / ".docket" / "ledger.jsonl"
    path.parent.mkdir(parents=True)
    base = [
        rec("c1", "premise", state="accepted"),
        rec("q2", "open question"),
        rec("d3", "choice", depends_on=["c1"]),
    ]
    grown = [*base, rec("d4", "answer", answers=["q2"], depends_on=["d3"])]
    loaded(path, encode(base, set()))
    out = loaded(path, encode(grown, set()))
    assert out["resolved_by"] == {"q2": ["d4"]}
    assert out["incoming"]["d4"] == ["q2"]
    assert out == facts(Outline.build(grown))
    retiring = [*grown, rec("c5", "new premise", state="accepted", supersedes=["c1"])]
    out = loaded(path, encode(retiring, set()))
    assert out["blocked"]["d3"] == ["c1"]
    assert out["blocked"]["d4"] == ["d3", "c1"]
    assert "q2" not in out["resolved_by"]
    assert out == facts(Outline.build(retiring))


def test_records_end_skips_trailing_blank_lines() -> None:
    assert index.records_end(b"", 0) == 0
    assert index.records_end(b"\n \n", 3) == 0
    assert index.records_end(b'{"a":1}\n\n  \n', 12) == 8
    assert index.records_end(b'{"a":1}', 7) == 7
    assert index.records_end(b'{"a":1}\n{"b":', 8) == 8  # a torn line past the valid bytes


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=ledgers(), at=st.integers(0, 69), bare=st.booleans(), budget=st.sampled_from([None, 600, 3000]))
def test_since_from_the_outline_equals_the_full_delta(
    records: list[dict], at: int, bare: bool, budget: int | None
) -> None:
    from docket_git.context import build_briefing, compose_delta
    from docket_git.context.config import defaults
    from docket_git.ledger import store

    at = min(at, len(records) - 1)
    with cache_home() as tmp:
        path = tmp / "repo" / ".docket" / "ledger.jsonl"
        path.parent.mkdir(parents=True)
        data = encode(records, set())
        path.write_bytes(data)
        snap = store.parse(path, data)
        rid = records[at]["id"]
        since = rid if bare else f"{rid}@{canonical.short(snap.prefix_digest(at))}"
        expected = compose_delta(snap, defaults(), records[: at + 1], since, identity="repo", max_chars=budget)
        assert build_briefing(ledger=path, since=since, max_chars=budget).text == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=ledgers(), first=st.integers(0, 70), request=REQUESTS, at_once=st.booleans())
def test_the_briefing_from_the_index_equals_one_composed_from_scratch(
    records: list[dict], first: int, request: dict, at_once: bool
) -> None:
    """Issue 16's byte-identity: the index-backed briefing (after an earlier, shorter ledger) is the reference's.

    Both ways an indexed outline reads facts: all at once, or on demand with the ranking merged from index strata.
    """
    from docket_git.context import build_briefing

    with cache_home() as tmp, eager(at_once):
        path = tmp / "repo" / ".docket" / "ledger.jsonl"
        path.parent.mkdir(parents=True)
        path.write_bytes(encode(records[:first], set()))
        build_briefing(ledger=path, auto_scope=False)  # the index holds the shorter ledger first
        path.write_bytes(encode(records, set()))
        got = build_briefing(
            ledger=path,
            query=request.get("query", ""),
            files=request.get("files", ()),
            all_records=request.get("all", False),
            max_chars=request.get("max_chars"),
            auto_scope=False,
        ).text
        assert got == brief(records, **request)


QUERIES = st.one_of(TEXT, st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=ledgers(), query=QUERIES, odd=st.sampled_from(["", "Stra\u00dfe \u03a3\u0399\u03a3", "nul \x00 here"]))
def test_query_points_from_the_haystack_column_equal_scoring_the_records(
    records: list[dict], query: str, odd: str
) -> None:
    """``--query`` in SQL (index.text_points over the casefolded haystack column) scores as score.record_points."""
    from docket_git.context.score import record_points
    from docket_git.ledger.project import project

    records[-1] = {**records[-1], "text": records[-1]["text"] + " " + odd}
    current = {v["id"] for v in project(records) if not v["retired_by"]}
    expected = record_points([r for r in records if r["id"] in current], query)
    with cache_home() as tmp:
        path = tmp / "repo" / ".docket" / "ledger.jsonl"
        path.parent.mkdir(parents=True)
        path.write_bytes(encode(records, set()))
        with index.opened(path) as ix:
            got = index.text_points(ix.conn, query)
    holds_nul = any("\x00" in r["text"] or "\x00" in (r.get("rationale") or "") for r in records if r["id"] in current)
    if got is None:
        assert holds_nul or "\x00" in query
    else:
        assert list(got.items()) == list(expected.items())
    if not holds_nul and "\x00" not in query:
        assert got is not None
