"""rebase.merge: the one merge semantics, as a pure function over records."""

from __future__ import annotations

import json

import pytest

from docket_git.ledger import canonical, validate
from docket_git.ledger.validate import Index, check_line
from docket_git.merging import rebase
from docket_git.merging.rebase import MergeRefused, RawLedger, content_key, merge
from tests.conftest import rec


def valid(records: list[dict]) -> None:
    """Assert records form a valid ledger (every read rule)."""
    index = Index()
    for record in records:
        check_line(record)
        index.check(record)
        index.add(record, 0)


def merged(base, ours, theirs, **kw):
    tail, moved, conflicts = merge(base, ours, theirs, **kw)
    valid(ours + tail)
    return tail, moved, conflicts


def test_basic_renumber_rewrites_inner_references_and_prose():
    c1 = rec("c1", "Shared")
    ours = [c1, rec("c2", "Mine")]
    theirs = [
        c1,
        rec("c2", "Their premise"),
        rec("d3", "Builds on c2, not c1's sibling", supports=[["c2"], ["c1"]], depends_on=["c2"], rationale="c2 holds"),
    ]
    tail, moved, conflicts = merged([c1], ours, theirs)
    assert moved == {"c2": "c3", "d3": "d4"}
    assert [r["id"] for r in tail] == ["c3", "d4"]
    assert tail[1]["supports"] == [["c3"], ["c1"]]
    assert tail[1]["depends_on"] == ["c3"]
    assert tail[1]["text"] == "Builds on c3, not c1's sibling"
    assert tail[1]["rationale"] == "c3 holds"
    assert conflicts == []


def test_prose_tokens_are_looked_up_once_no_chaining():
    # theirs c2 -> c3 and c3 -> c4: "c2 then c3" must become "c3 then c4", not "c4 then c4".
    ours = [rec("c1", "Mine")]
    theirs = [rec("c1", "Theirs one"), rec("c2", "Theirs two"), rec("c3", "Says c1 then c2, not c3x or xc2")]
    tail, moved, _ = merged([], ours, theirs)
    assert moved == {"c1": "c2", "c2": "c3", "c3": "c4"}
    assert tail[2]["text"] == "Says c2 then c3, not c3x or xc2"


def test_alternatives_choice_revisit_and_cost_are_rewritten():
    ours = [rec("c1", "Mine")]
    theirs = [
        rec("c1", "Theirs"),
        rec(
            "d2",
            "Go with c1",
            choice="c1 wins",
            alternatives=["drop c1"],
            revisit="when c1 changes",
            cost_if_wrong="c1 breaks",
        ),
    ]
    tail, _, _ = merged([], ours, theirs)
    d = tail[1]
    assert (d["text"], d["choice"], d["alternatives"], d["revisit"], d["cost_if_wrong"]) == (
        "Go with c2",
        "c2 wins",
        ["drop c2"],
        "when c2 changes",
        "c2 breaks",
    )


def test_references_into_the_shared_prefix_never_change():
    prefix = [rec("c1", "Shared"), rec("q2", "Open")]
    ours = [*prefix, rec("c3", "Mine")]
    theirs = [*prefix, rec("c3", "Answers q2 with c1", state="accepted", answers=["q2"], supports=[["c1"]])]
    tail, moved, _ = merged(prefix, ours, theirs)
    assert moved == {"c3": "c4"}
    assert tail[0]["answers"] == ["q2"] and tail[0]["supports"] == [["c1"]]
    assert tail[0]["text"] == "Answers q2 with c1"


def test_empty_base_merges_two_new_ledgers():
    tail, moved, _ = merged([], [rec("c1", "Ours")], [rec("c1", "Theirs")])
    assert moved == {"c1": "c2"}
    assert tail[0]["text"] == "Theirs"


def test_identical_histories_merge_to_nothing():
    ledger = [rec("c1", "A"), rec("d2", "B")]
    assert merge(ledger, ledger, ledger) == ([], {}, [])


def test_repeated_merges_in_both_directions_never_duplicate():
    c1 = rec("c1", "Shared")
    a = [c1, rec("c2", "On A"), rec("d3", "A decides on c2", depends_on=["c2"])]
    b = [c1, rec("c2", "On B", ts="2026-01-02T00:00:00+00:00"), rec("q3", "B asks about c2")]
    tail, _, _ = merged([c1], a, b)
    a2 = a + tail
    tail, _, _ = merged([c1], b, a2)
    b2 = b + tail
    assert sorted(content_key(r, supersedes=False) for r in a2) != []  # sanity
    assert len(a2) == len(b2) == 5
    # Again, both ways, with the newer bases git would pass: nothing more.
    assert merge(b, a2, b2)[0] == []
    assert merge(a, b2, a2)[0] == []
    # And with no base at all.
    assert merge([], a2, b2)[0] == []
    assert merge([], b2, a2)[0] == []


def test_a_match_consumes_one_record_only():
    twin = rec("c2", "Twin", ts="2026-01-05T00:00:00+00:00")
    ours = [rec("c1", "Shared"), rec("c2", "Mine"), {**twin, "id": "c3"}]
    theirs = [rec("c1", "Shared"), twin, {**twin, "id": "c3"}]
    tail, moved, _ = merged([], ours, theirs)
    assert moved == {"c3": "c4"}
    assert [r["text"] for r in tail] == ["Twin"]


def test_content_key_ignores_id_and_masks_prose_ids_but_keeps_relations():
    a = rec("d5", "Builds on c2", depends_on=["c2"])
    b = rec("d9", "Builds on c7", depends_on=["c2"])
    c = rec("d9", "Builds on c7", depends_on=["c7"])
    assert content_key(a) == content_key(b)
    assert content_key(a) != content_key(c)
    assert content_key(rec("c1", "x")) != content_key(rec("c1", "y"))


def test_match_cuts_the_pool_to_equal_timestamps_and_finds_what_keying_every_record_finds():
    """``rebase.match`` keys only pool records with a wanted ``ts``: sound because the content key keeps ``ts``
    (both with and without supersedes), so records stamped differently never match."""
    one = rec("c1", "Same text")
    later = {**rec("c1", "Same text"), "ts": "2026-01-02T00:00:00+00:00"}
    assert content_key(one) != content_key(later)
    assert content_key(one, supersedes=False) != content_key(later, supersedes=False)
    pool = [{**rec(f"c{n}", f"Filler {n}"), "ts": f"2026-02-{n % 28 + 1:02d}T00:00:00+00:00"} for n in range(10, 400)]
    pool[150:150] = [{**later, "id": "c500"}, {**one, "id": "c501"}, {**one, "id": "c502"}]
    cites = rec("d2", "Builds on c1", depends_on=["c1"])
    pool.append({**cites, "id": "d503", "depends_on": ["c501"], "text": "Builds on c501"})
    found = rebase.match([one, {**one, "id": "c3"}, cites], pool)
    assert found == {"c1": "c501", "c3": "c502", "d2": "d503"}


def test_cherry_pick_base_records_ours_lacks_are_not_reimported():
    # base: the picked commit's parent on another branch; theirs: the picked commit.
    prefix = [rec("c1", "Shared")]
    base = [*prefix, rec("c2", "Other branch first"), rec("c3", "Other branch second")]
    theirs = [*base, rec("c4", "The picked record")]
    ours = [*prefix, rec("c2", "Ours")]
    tail, moved, _ = merged(base, ours, theirs)
    assert [r["text"] for r in tail] == ["The picked record"]
    assert moved == {"c4": "c3"}


def test_cherry_pick_of_a_record_citing_unpicked_history_is_refused():
    prefix = [rec("c1", "Shared")]
    base = [*prefix, rec("c2", "Other branch premise")]
    theirs = [*base, rec("d3", "Relies on c2", depends_on=["c2"])]
    ours = [*prefix, rec("c2", "Ours")]
    with pytest.raises(MergeRefused, match="d3 cites c2, which this side does not have"):
        merge(base, ours, theirs)


def _both_supersede():
    prefix = [rec("c1", "Shared", scope=["src/a/"])]
    ours = [*prefix, rec("c2", "Ours replaces c1", supersedes=["c1"], scope=["src/b/"])]
    theirs = [
        *prefix,
        rec("c2", "Theirs replaces c1", supersedes=["c1"], scope=["src/c/"], ts="2026-01-03T00:00:00+00:00"),
    ]
    return prefix, ours, theirs


def test_both_supersede_keeps_every_record_and_asks_a_question():
    prefix, ours, theirs = _both_supersede()
    tail, moved, conflicts = merged(prefix, ours, theirs)
    assert moved == {"c2": "c3"}
    incoming, question = tail
    assert incoming["text"] == "Theirs replaces c1" and incoming["supersedes"] == []
    assert question["kind"] == "question" and question["id"] == "q4"
    assert question["author"] == "docket-merge"
    assert question["text"] == ("Both branches superseded c1: c2 here and c3 from the merged branch. Which one stands?")
    assert question["scope"] == ["src/b/", "src/c/"]
    assert question["evidence"] == [{"ref": "dropped relation: c3 supersedes c1"}]
    assert [(c.target, c.ours, c.theirs_was, c.theirs, c.question) for c in conflicts] == [
        ("c1", "c2", "c2", "c3", "q4")
    ]


def test_both_supersede_strict_refuses():
    prefix, ours, theirs = _both_supersede()
    with pytest.raises(MergeRefused, match="both histories supersede c1"):
        merge(prefix, ours, theirs, strict=True)


def test_both_supersede_merged_back_and_forth_settles_once():
    prefix, a, b = _both_supersede()
    tail, _, _ = merged(prefix, b, a)  # A's record comes into B
    b2 = b + tail
    tail, _, conflicts = merged(prefix, a, b2)  # B (with the question) comes into A
    a2 = a + tail
    assert [r["kind"] for r in a2].count("question") == 1
    assert len(a2) == len(b2) == 4
    assert conflicts and conflicts[0].question == ""  # the question was already asked
    for ours, theirs in ((a2, b2), (b2, a2)):
        assert merge(prefix, ours, theirs)[0] == []
        assert merge([], ours, theirs)[0] == []


def test_legacy_relation_map_follows_renumbering():
    relation_map = {key: [] for key in validate.LEGACY_RELATION_KEYS} | {"overrides": {}}
    legacy = {"source_id": "d7", "raw": {"id": "d7"}, "relation_map": relation_map}
    ours = [rec("c1", "Shared"), rec("c2", "Mine")]
    theirs = [rec("c1", "Shared"), rec("c2", "Theirs"), rec("d3", "Old one", depends_on=["c2"], legacy=legacy)]
    legacy["relation_map"]["mapped_depends_on"] = ["c2"]
    tail, _, _ = merged([], ours, theirs)
    assert tail[1]["depends_on"] == ["c3"]
    assert tail[1]["legacy"]["relation_map"]["mapped_depends_on"] == ["c3"]


def test_raw_ledger_compares_bytes_and_parses_only_the_tails():
    prefix = b"".join(canonical.line(rec(f"c{i}", f"Record {i}")) for i in range(1, 200))
    ours = RawLedger(prefix + canonical.line(rec("c200", "Mine")))
    theirs = RawLedger(prefix + canonical.line(rec("c200", "Theirs")))
    tail, moved, _ = merge(RawLedger(prefix), ours, theirs)
    assert moved == {"c200": "c201"} and len(tail) == 1
    assert sorted(ours._parsed) == [198, 199]  # the last prefix record (for the top ID) and the tail
    assert sorted(theirs._parsed) == [199]


def test_raw_ledger_equal_records_with_different_bytes_still_share_the_prefix():
    record = rec("c1", "Same")
    ours = RawLedger(canonical.line(record) + canonical.line(rec("c2", "Mine")))
    theirs = RawLedger(json.dumps(record, indent=None).encode() + b"\n" + canonical.line(rec("c2", "Theirs")))
    assert rebase.common_prefix(ours, theirs) == 1


def test_raw_ledger_reports_the_bad_line():
    ledger = RawLedger(canonical.line(rec("c1")) + b"\n{not json\n")
    with pytest.raises(ValueError, match="line 3: invalid JSON"):
        ledger[1]


def test_raw_ledger_skips_blank_lines_but_keeps_line_numbers():
    ledger = RawLedger(b"\n" + canonical.line(rec("c1")) + b"  \n" + canonical.line(rec("c2")) + b"\r\n")
    assert len(ledger) == 2
    assert [ledger.line_number(i) for i in range(2)] == [2, 4]
    assert ledger[1]["id"] == "c2"


def test_raw_ledger_find_binary_search_and_lenient_fallback():
    lines = [canonical.line(rec(rid)) for rid in ("c1", "q3", "d7", "c10", "c12")]
    ledger = RawLedger(b"".join(lines))
    assert [ledger.find(rid) for rid in ("c1", "q3", "d7", "c10", "c12")] == [0, 1, 2, 3, 4]
    assert ledger.find("c11") is None and ledger.find("c99") is None
    assert ledger.find("c12", end=4) is None and ledger.find("c10", end=4) == 3
    broken = RawLedger(lines[0] + b"{torn\n" + b"".join(lines[1:]), lenient=True)
    assert broken.find("c10") == 4  # the unreadable middle line sends the search to a scan
    assert broken.find("c11") is None
    assert broken.find("q3") == 2
    with pytest.raises(ValueError, match="line 2"):  # a strict ledger refuses the line it lands on
        RawLedger(lines[0] + b"{torn\n" + b"".join(lines[1:])).find("q3")
