"""The outline read from the ledger index equals the outline built from the records, whatever the index went through."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from docket_git.context.config import defaults
from docket_git.context.outline import Outline
from docket_git.context.scope import matched_scopes
from docket_git.ledger import canonical, index
from tests.hypothesis_helpers import profile

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


def ledger_in(tmp: Path, data: bytes) -> Path:
    """A ledger holding data in a repository directory under tmp (a ``cache_home``); its path."""
    path = tmp / "repo" / ".docket" / "ledger.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return path


def loaded(path: Path, data: bytes) -> dict:
    """The facts of the outline read from the index of path once it holds data."""
    path.write_bytes(data)
    with index.opened(path) as ix:
        found = facts(Outline.from_index(ix))
        found["query_tables"] = query_tables(ix.conn)
    return found


def query_tables(conn: sqlite3.Connection) -> dict:
    """What ``--query`` reads besides the records: each record's haystack, each prerequisite edge by position."""
    return {
        "haystacks": conn.execute("SELECT seq, haystack FROM haystacks ORDER BY seq").fetchall(),
        "prerequisites": conn.execute("SELECT source, target FROM prerequisites ORDER BY source, target").fetchall(),
    }


def expected_tables(records: list[dict]) -> dict:
    """``query_tables`` as the records say."""
    pos = {r["id"]: i for i, r in enumerate(records)}
    return {
        "haystacks": [(i, index.schema._haystack(r)) for i, r in enumerate(records)],
        "prerequisites": sorted((i, pos[t]) for i, r in enumerate(records) for t in r.get("depends_on") or ()),
    }


def built(records: list[dict]) -> dict:
    """The facts of the outline built from the records, with the query tables the index must hold for them."""
    return facts(Outline(records)) | {"query_tables": expected_tables(records)}


@profile(15, 300)
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
            assert loaded(path, encode(part, blanks)) == built(part)
        if steps[0][1]:
            for stale in tmp.rglob("*.sqlite"):
                stale.unlink()
        assert loaded(path, encode(records, blanks)) == built(records)


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
    assert out == built(grown)
    retiring = [*grown, rec("c5", "new premise", state="accepted", supersedes=["c1"])]
    out = loaded(path, encode(retiring, set()))
    assert out["blocked"]["d3"] == ["c1"]
    assert out["blocked"]["d4"] == ["d3", "c1"]
    assert "q2" not in out["resolved_by"]
    assert out == built(retiring)


def test_records_end_skips_trailing_blank_lines() -> None:
    assert index.records_end(b"", 0) == 0
    assert index.records_end(b"\n \n", 3) == 0
    assert index.records_end(b'{"a":1}\n\n  \n', 12) == 8
    assert index.records_end(b'{"a":1}', 7) == 7
    assert index.records_end(b'{"a":1}\n{"b":', 8) == 8  # a torn line past the valid bytes


@profile(15, 300)
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


@profile(15, 300)
@given(records=ledgers(), first=st.integers(0, 70), request=REQUESTS)
def test_the_briefing_from_the_index_equals_one_composed_from_scratch(
    records: list[dict], first: int, request: dict
) -> None:
    """Issue 16's byte-identity: the index-backed briefing (after an earlier, shorter ledger) is the reference's.

    The indexed outline reads facts on demand, with the ranking merged from index strata.
    """
    from docket_git.context import build_briefing

    with cache_home() as tmp:
        path = ledger_in(tmp, encode(records[:first], set()))
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


@profile(30, 600)
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
        path = ledger_in(tmp, encode(records, set()))
        with index.opened(path) as ix:
            got = index.text_points(ix.conn, query)
    holds_nul = any("\x00" in r["text"] or "\x00" in (r.get("rationale") or "") for r in records if r["id"] in current)
    if got is None:
        assert holds_nul or "\x00" in query
    else:
        assert list(got.items()) == list(expected.items())
    if not holds_nul and "\x00" not in query:
        assert got is not None


#: Weights for the query ranking's test: the defaults, degree and pins reweighted, and a small text weight
#: (its cap and integer division then decide ties the SQL must break as Python does).
SCORING_WEIGHTS = [WEIGHTS, OTHER_WEIGHTS, {**WEIGHTS, "text": 7, "recency": 3}]


def scored(o: Outline, query: str, files: list[str], weights: dict, *, ranking_first: bool) -> dict:
    """Everything selection reads of a task's scoring, in comparable form.

    ``ranking_first``: read the whole ranking before asking for any record's
    score (an index-ranked query then answers from the keys SQL sorted by), or
    after (each asked for on its own first).
    """
    from docket_git.context.score import Scoring

    s = Scoring(o, weights, files=files, query=query, renames=RENAMES)
    out: dict = {}
    if ranking_first:
        out["ranking"] = list(s.ranking())
        out["hits"] = list(s.ranked_hits())
    ids, live = list(o.ids), list(o.live)
    out["keys"] = {rid: s.key(rid) for rid in live}
    out["totals"] = {rid: s.totals[rid] for rid in live}
    out["parts"] = {
        rid: (x.total, x.scope, x.text, x.recency, x.degree, x.pinned, x.hit, x.renamed)
        for rid in live
        for x in [s[rid]]
    }
    out["hit_each"] = {rid for rid in ids if rid in s.hits}
    out["hit_count"] = len(s.hits)
    out["points"] = {rid: s.points.get(rid, 0) for rid in ids}
    targets = s.targets()
    out["targets"] = set(targets)
    out["targets_each"] = {rid for rid in ids if rid in targets}
    out["target_count"] = len(targets)
    if not ranking_first:
        out["ranking"] = list(s.ranking())
        out["hits"] = list(s.ranked_hits())
    out["in_sql"] = s.task is not None
    return out


@profile(25, 500)
@given(
    records=ledgers(),
    query=QUERIES,
    files=st.lists(st.sampled_from(TASK_FILES), max_size=3, unique=True),
    weights=st.sampled_from(range(len(SCORING_WEIGHTS))),
    odd=st.sampled_from(["", "", "Stra\u00dfe \u03a3\u0399\u03a3 [a]* ?", "nul \x00 here"]),
    ranking_first=st.booleans(),
)
def test_a_query_ranked_in_the_index_equals_the_reference_scoring(
    records: list[dict], query: str, files: list[str], weights: int, odd: str, ranking_first: bool
) -> None:
    """``--query`` hits matched and ranked in SQL (``TaskHits``) score, rank and cover as ``Scoring`` of a built outline.

    The ranking (ties newer first), each record's key, total and parts, the hits,
    their query points and coverage's prerequisite closure, with and without
    task files beside the query; a NUL anywhere takes the Python way.
    """
    from docket_git.ledger.project import project

    w = SCORING_WEIGHTS[weights]
    records[-1] = {**records[-1], "text": records[-1]["text"] + " " + odd}
    expected = scored(Outline(records), query, files, w, ranking_first=ranking_first)
    assert not expected["in_sql"]
    with cache_home() as tmp:
        path = ledger_in(tmp, encode(records, set()))
        with index.opened(path) as ix:
            got = scored(Outline.from_index(ix), query, files, w, ranking_first=ranking_first)
    current = {v["id"] for v in project(records) if not v["retired_by"]}
    nul = "\x00" in query or any(index.schema._haystack(r) is None for r in records if r["id"] in current)
    assert got.pop("in_sql") == (
        not nul and bool(query.split()) and len(set(query.casefold().split())) <= index.MAX_TERMS
    )
    expected.pop("in_sql")
    assert got == expected


def test_a_common_term_and_a_rare_one_ranked_in_the_index(tmp_path: Path, monkeypatch) -> None:
    """A term every current record holds weighs nothing past 999 records: its holders are no hits, in SQL as in Python."""
    from .conftest import rec

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    records = [rec(f"c{i}", f"common words {'rare' if i % 97 == 0 else ''}", state="accepted") for i in range(1, 1201)]
    records.append(rec("c1201", "common words, again", state="accepted", supersedes=["c5"]))
    records.append(rec("d1202", "common choice", depends_on=["c97"]))
    path = tmp_path / "repo" / ".docket" / "ledger.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(encode(records, set()))
    for query in ("common", "rare", "common rare", "words   common", "d1202 c9"):
        expected = scored(Outline(records), query, [], WEIGHTS, ranking_first=True)
        with index.opened(path) as ix:
            got = scored(Outline.from_index(ix), query, [], WEIGHTS, ranking_first=True)
        assert got.pop("in_sql")
        expected.pop("in_sql")
        assert got == expected, query


def test_coverage_from_index_ranked_hits_walks_only_current_prerequisites(tmp_path: Path, monkeypatch) -> None:
    """A hit's prerequisite closure stops at a retired record, as ``Outline.closure`` does, when SQL walks it."""
    from .conftest import rec

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    records = [
        rec("c1", "gamma one", state="accepted"),
        rec("c2", "gamma two", state="accepted"),
        rec("d3", "gamma three", depends_on=["c1"]),
        rec("d4", "gamma four", depends_on=["d3", "c2"]),
        rec("d5", "gamma five", supersedes=["d3"]),
        rec("d6", "zeta six", depends_on=["d4"]),
        rec("d7", "zeta seven", depends_on=["d3"]),
    ]
    path = tmp_path / "repo" / ".docket" / "ledger.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(encode(records, set()))
    expected = scored(Outline(records), "zeta", [], WEIGHTS, ranking_first=False)
    assert expected["targets"] == {"d6", "d7", "d4", "c2"}
    with index.opened(path) as ix:
        got = scored(Outline.from_index(ix), "zeta", [], WEIGHTS, ranking_first=False)
    assert got.pop("in_sql")
    expected.pop("in_sql")
    assert got == expected
