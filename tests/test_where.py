"""``--where``: the search grammar, compiled to SQL over the ledger index, on ``list`` and ``export``."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from docket_git.context import where
from docket_git.errors import UsageError
from docket_git.ledger import canonical, pretty, project, validate
from tests.hypothesis_helpers import profile

from .conftest import DOCKET, Repo, rec
from .test_context_properties import ledgers


def ids(repo: Repo, query: str, *extra: str) -> list[str]:
    return [v["id"] for v in repo.ok("list", "--where", query, "--json", *extra).json()]


@pytest.fixture
def seeded(repo: Repo) -> Repo:
    repo.write_ledger(
        [
            rec("c1", "Latency budget is 50 ms", state="accepted", scope=["svc/"], ts="2026-01-05T10:00:00+00:00"),
            rec("q2", "Which cache for Ünïcode keys?", scope=["svc/cache/*.py"], ts="2026-01-10T10:00:00+00:00"),
            rec(
                "d3",
                "Cache reads in-process",
                choice="LRU with Redis fallback",
                depends_on=["c1"],
                answers=["q2"],
                author="alice",
                branch="feature",
                ts="2026-02-01T10:00:00+00:00",
            ),
            rec("c4", "Latency budget is 80 ms", state="rejected", pinned=True, scope=["billing"]),
            rec("d5", "Shard by tenant", choice="hash", depends_on=["c4"], scope=["svc/shard.py"]),
            rec("q6", "Why?", rationale="because of redis"),
            rec("q7", "Which ledger stands?", author="docket-merge"),
            rec("c8", "Latency budget is 70 ms", state="accepted", supersedes=["c1"], answers=["q6"]),
        ]
    )
    return repo


def test_fields_words_negation_and_quotes(seeded: Repo) -> None:
    assert ids(seeded, "kind:question") == ["q2", "q6", "q7"]
    assert ids(seeded, "kind:question kind:decision") == ["q2", "d3", "d5", "q6", "q7"]  # same field ORs
    assert ids(seeded, "kind:decision state:adopted") == ["d3", "d5"]  # different fields AND
    assert ids(seeded, "-kind:decision -kind:question") == ["c4", "c8"]  # negations AND
    assert ids(seeded, "redis") == ["d3", "q6"]  # choice and rationale
    assert ids(seeded, "REDIS lru") == ["d3"]  # bare words: each must match, case-insensitively
    assert ids(seeded, "ünïcode") == ["q2"]
    assert ids(seeded, '"budget is 80"') == ["c4"]
    assert ids(seeded, "budget is 80") == ["c4"]
    assert ids(seeded, "d5") == ["d5"]
    assert ids(seeded, "author:ALICE") == ["d3"]
    assert ids(seeded, "branch:feature") == ["d3"]
    assert ids(seeded, "state:resolved") == ["q6"]
    assert ids(seeded, "is:open") == ["q2", "q7"]  # d3 would resolve q2, but d3 is blocked
    assert ids(seeded, "is:resolved") == ["q6"]
    assert ids(seeded, "is:pinned") == ["c4"]
    assert ids(seeded, "is:blocked") == ["d3", "d5"]  # d3's premise c1 is retired, d5's c4 rejected
    assert ids(seeded, "is:conflict") == ["q7"]
    assert ids(seeded, "is:retired") == ["c1"]  # retired records come with is:retired
    assert ids(seeded, "budget", "--superseded") == ["c1", "c4", "c8"]
    assert ids(seeded, "budget") == ["c4", "c8"]


def test_scope_dates_and_the_other_filters(seeded: Repo) -> None:
    assert ids(seeded, "scope:svc/cache/lru.py") == ["q2"]  # a glob
    assert ids(seeded, "scope:svc/shard.py") == ["d5"]
    assert ids(seeded, "scope:svc/shard.py", "--superseded") == ["c1", "d5"]  # c1 covers svc/ but is retired
    assert ids(seeded, "scope:billing") == []  # a component name never covers a path
    assert ids(seeded, "after:2026-01-05") == ["q2", "d3"]
    assert ids(seeded, "after:2026-01-01 before:2026-01-06", "--superseded") == ["c1"]
    assert ids(seeded, "after:2026-01-01 before:2026-01-31") == ["q2"]
    assert ids(seeded, "latency", "--state", "accepted") == ["c8"]
    assert ids(seeded, "latency", "--kind", "claim", "--find", "80") == ["c4"]


def test_bad_queries_are_usage_errors_naming_the_fix(seeded: Repo) -> None:
    before = seeded.ledger.read_bytes()
    cases = {
        "colour:red": "unknown field 'colour:'",
        "after:yesterday": "after: wants a date as YYYY-MM-DD",
        "before:2026-02-30": "before: wants a date",
        "kind:idea": "kind: must be one of claim, decision, question",
        "state:maybe": "state: must be one of",
        "is:stale": "is: must be one of blocked, retired",
        'kind:"claim': "unclosed quote",
        "kind:": "kind: needs a value",
    }
    for query, message in cases.items():
        result = seeded.docket("list", "--where", query)
        assert result.code == 2, query
        assert result.err.startswith("docket: --where: ") and message in result.err, (query, result.err)
        assert "Traceback" not in result.err
        result = seeded.docket("export", "--where", query)
        assert result.code == 2 and message in result.err
    assert seeded.ledger.read_bytes() == before


def test_export_takes_the_same_where(seeded: Repo) -> None:
    lines = seeded.ok("export", "--format", "jsonl", "--where", "kind:decision").out.splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["d3", "d5"]
    lines = seeded.ok("export", "--format", "jsonl", "--where", "is:retired").out.splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["c1"]
    mermaid = seeded.ok("export", "--format", "mermaid", "--where", "is:conflict").out
    assert "q7" in mermaid and "d3" not in mermaid


def test_quotes_keep_a_colon_inside_a_bare_word() -> None:
    assert where.parse('"http://example.com" -"a b"') == [
        where.Term(None, "http://example.com"),
        where.Term(None, "a b", negated=True),
    ]
    with pytest.raises(UsageError, match="unknown field 'http:'"):
        where.parse("http://example.com")


def test_user_text_reaches_sqlite_only_as_parameters() -> None:
    query = where.compile_query("x'); DROP TABLE records; -- author:\"o'brien\"")
    assert "DROP" not in query.sql and "brien" not in query.sql
    assert "o'brien" in query.params


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(st.characters(), max_size=30),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(st.characters(), max_size=10), children, max_size=5)
    ),
    max_leaves=40,
)


@profile(100, 2000)
@given(values=st.lists(JSON, max_size=6))
def test_the_fast_writer_is_byte_identical_to_json_dumps(values: list) -> None:
    expected = json.dumps(values, indent=2, ensure_ascii=False)
    chunks: list[str] = []
    pretty.write_list(values, chunks.append)
    assert "".join(chunks) == expected
    for value in values:
        assert pretty.encode(value) == json.dumps(value, indent=2, ensure_ascii=False)


def test_the_fast_writer_on_a_record_shape_and_keys_that_are_not_strings() -> None:
    record = {
        "id": "d7",
        "text": 'quote " and \u2028 and \u00e9',
        "pinned": False,
        "applicable": True,
        "supports": [["c1", "c2"], ["c3"]],
        "scope": [],
        "provenance": {"author": "a", "nested": {"deep": [1, 2.5, None]}},
    }
    odd = {3: "int key", None: "null key", 2.5: "float key", True: "bool key", "": [record]}
    for value in (record, odd, [odd, odd]):
        assert pretty.encode(value) == json.dumps(value, indent=2, ensure_ascii=False)


@profile(25, 500)
@given(record=st.builds(lambda rid, text: rec(rid, text), st.sampled_from(["c1", "d2", "q3"]), st.text(min_size=1)))
def test_the_fast_writer_matches_on_records(record: dict) -> None:
    assert pretty.encode([record]) == json.dumps([record], indent=2, ensure_ascii=False)


@profile(8, 80, checks=tuple(HealthCheck))
@given(records=ledgers(), superseded=st.booleans())
def test_list_json_from_the_index_equals_a_fresh_projection(records: list[dict], superseded: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        (root / ".docket").mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        data = b"".join(canonical.line(r) for r in records)
        (root / ".docket" / "ledger.jsonl").write_bytes(data)
        records = [json.loads(line) for line in data.splitlines()]  # as the file holds them
        env = {**os.environ, "XDG_CACHE_HOME": str(Path(tmp) / "cache")}
        args = [DOCKET, "list", "--json", *(["--superseded"] if superseded else [])]
        for _ in range(2):  # a cold index, then a warm one
            out = subprocess.run(args, cwd=root, env=env, capture_output=True, check=True).stdout
            views = project.project(records)
            wanted = views if superseded else project.current(views)
            assert out == (json.dumps(wanted, indent=2, ensure_ascii=False) + "\n").encode()


def _decoded(values: list) -> tuple[list, bool]:
    """values as ``docket list`` decodes them (json.loads with its float hook), and whether no float was seen."""
    floats: list[str] = []

    def note(text: str) -> float:
        floats.append(text)
        return float(text)

    text = json.dumps(values, ensure_ascii=False)
    return json.loads(text, parse_float=note, parse_constant=note), not floats


@profile(100, 2000)
@given(slices=st.lists(st.lists(JSON, max_size=4), max_size=4))
def test_the_slice_writer_is_byte_identical_to_json_dumps(slices: list[list]) -> None:
    decoded = [_decoded(items) for items in slices]
    expected = json.dumps([v for items, _ in decoded for v in items], indent=2, ensure_ascii=False)
    chunks: list[str] = []
    pretty.write_slices(decoded, chunks.append)
    assert "".join(chunks) == expected
    assert len(chunks) == sum(1 for items, _ in decoded if items) + 1  # a write per slice, and the close


def test_the_slice_writer_hands_exact_slices_to_orjson_and_only_those() -> None:
    record = rec("d1", 'Ünïcode \u2028 "quoted" \x1f', scope=["a/", "b.py"], supports=[["c1", "c2"], ["c3"]])
    text = pretty._orjson_items([record, record])
    assert text == ",\n  ".join([pretty.encode(record, 1)] * 2)  # orjson wrote it, as encode does
    assert pretty._orjson_items([{"n": 2**64}]) is None  # past orjson's integers
    assert pretty._orjson_items(["\ud800"]) is None  # a lone surrogate
    # Why floats stay with encode: orjson writes these differently from json.dumps.
    assert pretty._orjson_items([1e16, float("nan")]) != ",\n  ".join(pretty.encode(v, 1) for v in (1e16, float("nan")))


def test_list_json_keeps_floats_and_nan_of_a_legacy_record_as_json_dumps_writes_them(repo: Repo) -> None:
    relation_map = {key: [] for key in validate.LEGACY_RELATION_KEYS} | {"overrides": {}}
    raw = {"id": "d7", "weight": 1e16, "ratio": 0.1, "odd": float("nan"), "inf": float("-inf")}
    plain = [rec(f"c{n}", f"premise {n}", state="accepted") for n in range(1, 2101)]  # a second slice past 2000
    legacy = rec("d2101", "Migrated", legacy={"source_id": "d7", "raw": raw, "relation_map": relation_map})
    lines = [*plain[:1500], legacy, *plain[1500:]]
    for n, record in enumerate(lines, 1):
        record["id"] = f"{record['kind'][0]}{n}"
    repo.write_ledger(lines)
    records = repo.records()
    out = repo.ok("list", "--json").out
    assert '"weight": 1e+16' in out and '"odd": NaN' in out
    assert out == json.dumps(project.project(records), indent=2, ensure_ascii=False) + "\n"
