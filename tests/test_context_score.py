"""Integer scoring, with the reference's worked numbers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from docket_git.context import scope
from docket_git.context.config import defaults
from docket_git.context.outline import Outline
from docket_git.context.score import Score, Scoring, text_points
from docket_git.ledger.project import project
from tests.hypothesis_helpers import profile

from .conftest import rec
from .ctx import brief, module_ledger, tuned

W = defaults()["weights"]


def score_records(
    history: list[dict],
    current_ids: list[str],
    weights: dict[str, int],
    *,
    files: list[str] | None = None,
    query: str = "",
) -> dict[str, Score]:
    """Scores for the current records of a projected history (file order, retired included)."""
    outline = Outline(history)
    assert set(current_ids) == outline.current
    scoring = Scoring(outline, weights, files=files, query=query)
    return {rid: scoring[rid] for rid in outline.live}


def in_degrees(views: list[dict]) -> dict[str, int]:
    """Record ID -> references to it from any projected view's supports, depends_on, answers, resolved_by."""
    return dict(Outline(views).degrees)


def scores(records: list[dict], **task) -> dict[str, Score]:
    views = project(records)
    return score_records(views, [v["id"] for v in views if not v["retired_by"]], task.pop("weights", W), **task)


def test_worked_check_file_scope() -> None:
    s = scores(module_ledger(5), files=["lib/mod3/cache.py"])
    assert [s[r].recency for r in ("c1", "q2", "d3", "c4", "q5")] == [0, 50, 100, 150, 200]
    assert (s["d3"].total, s["d3"].scope, s["d3"].recency) == (800, 700, 100)
    assert s["d3"].parts() == "scope=700, recency=100"
    assert s["d3"].hit and not s["c4"].hit


def test_worked_check_query_with_the_0_9_text_weight() -> None:
    weights = tuned(weights={"text": 400})["weights"]
    s = scores(module_ledger(5), query="module 3", weights=weights)
    # "module" is in all 5 records: 1000 * 1 // 6 = 166; "3" only in d3: 833; d3 also holds the phrase.
    assert (s["d3"].text, s["d3"].total) == (400, 500)
    assert [s[r].text for r in ("c1", "q2", "c4", "q5")] == [66, 66, 66, 66]
    assert all(x.hit for x in s.values())


def test_term_weights_follow_rarity() -> None:
    hay = {"c1": "alpha beta", "c2": "alpha gamma", "c3": "alpha", "c4": "delta"}
    # N = 4: alpha df 3 -> 1000 * 2 // 5 = 400; gamma df 1 -> 800; phrase "alpha gamma" only in c2.
    assert text_points(hay, "alpha gamma") == {"c1": 400, "c2": 400 + 800 + 1000, "c3": 400}
    assert text_points(hay, "zzz") == {}
    assert text_points(hay, "") == {}


def test_one_word_query_phrase_bonus_reaches_the_full_weight() -> None:
    hay = {"c1": "alpha", "c2": "alpha", "c3": "beta"}
    assert text_points(hay, "alpha") == {"c1": 1500, "c2": 1500}  # 1000 * (4 - 2) // 4 + the phrase
    assert text_points(hay, "ALPHA  alpha") == {"c1": 500, "c2": 500}  # one term; "alpha alpha" is no phrase here


def test_text_is_capped_at_the_weight() -> None:
    s = scores([rec("c1", "zeta eta theta"), rec("c2", "other")], query="zeta eta theta")
    assert s["c1"].text == W["text"]


def test_substring_matching_is_literal() -> None:
    s = scores([rec("c1", "plain"), rec("d3", "plain")], query="3")
    assert s["d3"].text > 0 and s["c1"].text == 0  # "3" is in the ID d3


def test_scope_strengths() -> None:
    files = ["src/pay/api.py"]
    assert scope.strength(files, "src/pay/api.py", W) == 1000
    assert scope.strength(files, "src/pay/*.py", W) == 700
    assert scope.strength(files, "src/**", W) == 700
    assert scope.strength(files, "src/pay/", W) == 500
    assert scope.strength(files, "src/pay", W) == 500
    assert scope.strength(files, "src/payments/", W) == 0
    assert scope.strength(files, "pay", W) == 0  # a component name never matches a file
    assert scope.strength(["./SRC\\Pay\\API.py"], "src/pay/api.py", W) == 0  # callers normalise
    norm = [scope.normalize(f) for f in ["./SRC\\Pay\\API.py"]]
    assert scope.strength(norm, scope.normalize("src/pay/api.py"), W) == 1000


def test_component_scope_matches_query_not_files() -> None:
    records = [rec("c1", "Invoices round half up", scope=["billing"])]
    assert scores(records, files=["billing"])["c1"].scope == 0
    assert scores(records, query="billing")["c1"].text > 0


def test_exact_scope_outranks_query_outranks_glob() -> None:
    records = [
        rec("c1", "glob scoped", scope=["src/**"]),
        rec("c2", "matches the word kiwi"),
        rec("c3", "exact scoped", scope=["src/a.py"]),
        rec("c4", "unrelated"),
    ]
    s = scores(records, files=["src/a.py"], query="kiwi")
    assert s["c3"].scope == 1000 and s["c2"].text == 750 and s["c1"].scope == 700
    assert s["c3"].total > s["c2"].total > s["c1"].total


def test_exact_scope_record_is_listed_first_and_ties_break_newer_first() -> None:
    records = [
        rec("c1", "storage in general", scope=["storage/**"]),
        rec("c2", "the database file", scope=["storage/db.py"]),
        rec("c3", "unrelated one"),
        rec("c4", "unrelated two"),
    ]
    text = brief(records, files=["storage/db.py"], max_chars=4000)
    assert text.index("### c2 ") < text.index("### c1 ")
    # Same score (no task): newer first.
    text = brief([rec("c1", "same"), rec("c2", "same")], max_chars=4000, all=True)
    assert text.index("### c2 ") < text.index("### c1 ")


def test_degree_counts_inbound_references_capped() -> None:
    records = [
        rec("c1", "ground", state="accepted"),
        rec("q2", "question"),
        rec("c3", "answer", state="accepted", supports=[["c1"]], answers=["q2"]),
        rec("d4", "decision", depends_on=["c1", "c3"], supports=[["c1"], ["c3"]]),
    ]
    views = project(records)
    degrees = in_degrees(views)
    # c1: supports (c3, d4) + depends_on (d4) = 3; c3: resolved_by of q2 + depends_on + supports = 3; q2: answers = 1
    assert degrees == {"c1": 3, "c3": 3, "q2": 1}
    s = scores(records)
    assert s["c1"].degree == 150
    capped = scores(records, weights=tuned(weights={"degree_cap": 2})["weights"])
    assert capped["c1"].degree == 100


def test_pin_and_recency_over_the_whole_history() -> None:
    records = [rec("c1", "old", pinned=True), rec("c2", "mid"), rec("c3", "new", supersedes=["c2"])]
    s = scores(records)
    assert set(s) == {"c1", "c3"}  # only current records are scored
    assert (s["c1"].pinned, s["c1"].recency, s["c1"].total) == (400, 0, 400)
    assert s["c3"].recency == 200  # position 2 of 3: 200 * 2 // 2


def test_parts_omit_zero_components() -> None:
    assert Score(0).parts() == ""
    assert Score(450, text=50, pinned=400).parts() == "text=50, pinned=400"


def _naive_points(hay: dict[str, str], query: str) -> dict[str, int]:
    terms = list(dict.fromkeys(query.casefold().split()))
    if not terms:
        return {}
    folded = {k: v.casefold() for k, v in hay.items()}
    n = len(folded)
    points = dict.fromkeys(folded, 0)
    for term in terms:
        holders = [k for k, v in folded.items() if term in v]
        for k in holders:
            points[k] += 1000 * (n + 1 - len(holders)) // (n + 1)
    phrase = " ".join(query.casefold().split())
    for k, v in folded.items():
        if phrase in v:
            points[k] += 1000
    return {k: p for k, p in points.items() if p > 0}


ALPHABET = st.sampled_from(["a", "b", "ab", " ", "ß", "SS", "\x00", "İ", "3"])


@profile(60, 600, checks=())
@given(
    st.lists(st.lists(ALPHABET, max_size=12).map("".join), min_size=1, max_size=8),
    st.lists(ALPHABET, min_size=1, max_size=6).map("".join),
)
def test_corpus_matching_equals_record_by_record(hays: list[str], query: str) -> None:
    hay = {f"c{i}": h for i, h in enumerate(hays, start=1)}
    assert text_points(hay, query) == _naive_points(hay, query)


def test_scope_strength_prefilter_keeps_fnmatch_semantics() -> None:
    from fnmatch import fnmatchcase

    from docket_git.context.scope import strength

    weights = {"scope_exact": 3, "scope_glob": 2, "scope_prefix": 1}
    files = ["src/a.py", "src/sub/b.py", "docs/x.md", "a]b.py", "src/[x].py"]
    scopes = [
        "src/*.py",
        "src/",
        "src/sub",
        "*.md",
        "docs/?.md",
        "src/[ab].py",
        "a]b.py",
        "s*/sub/*",
        "x/*",
        "src/[[]x].py",
    ]
    for pattern in scopes:
        expected = 0
        prefix = pattern.rstrip("/") + "/" if "/" in pattern else None
        for path in files:
            if path == pattern:
                expected = 3
                break
            if fnmatchcase(path, pattern):
                expected = max(expected, 2)
            elif prefix is not None and path.startswith(prefix):
                expected = max(expected, 1)
        assert strength(files, pattern, weights) == expected, pattern


_PIECES = st.sampled_from(["src", "a", "B", "b", "x.py", "*", "**", "?", "[ab]", "]", ".", "..", "", "\\"])
_PATHS = st.lists(_PIECES, min_size=1, max_size=4).map("/".join)


@profile(60, 2000)
@given(
    st.lists(st.one_of(_PATHS, _PATHS.map(lambda p: p + "/"), _PATHS.map(lambda p: "./" + p)), max_size=12),
    st.lists(_PATHS, min_size=1, max_size=4),
    st.dictionaries(_PATHS, _PATHS, max_size=3),
)
def test_matched_scopes_pass_over_only_strings_strength_would_not_match(
    scopes: list[str], files: list[str], renames: dict[str, str]
) -> None:
    """``matched_scopes`` calls ``strength`` only for globs and for a task file or a directory above one; what
    it passes over, ``strength`` would have scored 0: the result is strength's over every string."""
    norm_files = list(dict.fromkeys(scope.normalize(f) for f in files if f))
    expected: dict[str, tuple[int, bool]] = {}
    for raw in scopes:
        value = scope.strength(norm_files, scope.normalize(raw), W) if norm_files else 0
        if value:
            expected[raw] = (value, False)
        elif raw in renames and norm_files:
            value = scope.strength(norm_files, scope.normalize(renames[raw]), W)
            if value:
                expected[raw] = (value, True)
    assert scope.matched_scopes(scopes, files, W, renames) == expected
