"""Selection: tiers, the index, the degradation ladder, expansion, blocking chains, coverage."""

from __future__ import annotations

import hashlib
import re

import pytest

from docket_git.context.config import defaults
from docket_git.context.select import blocking_chains, check_max_chars
from docket_git.ledger import canonical
from docket_git.ledger.project import derive

from .conftest import rec
from .ctx import block_text, blocks, brief, index_section, indexed, module_ledger, tuned


def current_ids(records: list[dict]) -> set[str]:
    retired = {t for r in records for t in r.get("supersedes") or ()}
    return {r["id"] for r in records} - retired


def long_ledger(n: int, words: int = 30, *, bulky: bool = False) -> list[dict]:
    """n claims with long texts, no scopes; bulky: each with a rationale no block of which fits 2000 chars."""
    extra = {"rationale": "because " * 250} if bulky else {}
    return [rec(f"c{i}", " ".join(f"word{i}x{j}" for j in range(words)), **extra) for i in range(1, n + 1)]


# -- tiers and the index ------------------------------------------------------------------


def test_task_briefing_two_tiers() -> None:
    text = brief(module_ledger(5), files=["lib/mod3/cache.py"])
    assert blocks(text) == ["d3"]
    assert index_section(text).splitlines() == [
        "# index: 4 more current records",
        "q5 question open  Record q5 about module 5",
        "c4 claim unassessed  Record c4 about module 4",
        "q2 question open  Record q2 about module 2",
        "c1 claim unassessed  Record c1 about module 1",
    ]
    assert "# full text: 1; index: 4; retired: 0.\n" in text
    assert "# Coverage: task matches and their prerequisites covered. Selected ledger data only.\n" in text
    assert block_text(text, "d3").endswith("selection: score 800 | scope=700, recency=100")


def test_unscoped_briefing_takes_every_record_when_it_fits() -> None:
    text = brief(module_ledger(5))
    assert blocks(text) == ["q5", "c4", "d3", "q2", "c1"]
    assert "# selection: scored by recency and relations; no task scope given\n" in text
    assert "# Coverage: every current record in full text. Selected ledger data only.\n" in text
    assert "# index:" not in text


def test_index_line_length_follows_score() -> None:
    records = long_ledger(12)
    text = brief(records, max_chars=2000)
    lines = [line for line in index_section(text).splitlines() if not line.startswith("#")]
    assert lines, text
    lengths = [len(line) for line in lines]
    assert lengths == sorted(lengths, reverse=True) and lengths[0] > lengths[-1]
    assert all(line.endswith("...") for line in lines)


def test_index_is_capped_at_max_lines() -> None:
    records = module_ledger(20)
    text = brief(records, settings=tuned(index={"max_lines": 5}, budget={"target": 1500}), max_chars=1500)
    section = index_section(text).splitlines()
    assert section[0].startswith("# index: ") and section[0].endswith(" more current records")
    deferred = int(section[0].split()[2])
    assert len([x for x in section if not x.startswith("#")]) == 5
    assert section[-1] == f"# and {deferred - 5} more; docket list"
    assert f"# Not listed: {deferred - 5}; reach them with docket list.\n" in text


def test_every_current_record_appears_exactly_once() -> None:
    records = module_ledger(30)
    for budget in (512, 900, 2000, 5000, 8000):
        text = brief(records, max_chars=budget)
        named = blocks(text) + indexed(text)
        unlisted = re.search(r"^# (?:and|index:) (\d+) more; docket list$", text, re.M)
        # Full text comes before names: a record the index cannot name is counted, never dropped.
        assert len(named) == len(set(named)) == 30 - (int(unlisted[1]) if unlisted else 0), (budget, text)
        assert len(text) <= budget and text.endswith("\n")
    assert len(indexed(brief(records, max_chars=512))) == 30  # no block beside the short header: all named


def test_retired_records_appear_only_when_cited() -> None:
    records = [
        rec("c1", "the old premise", state="accepted"),
        rec("c2", "the new premise", state="accepted", supersedes=["c1"]),
        rec("d3", "a decision on the old premise", supports=[["c1"]], scope=["src/a.py"]),
        rec("c4", "an old unrelated claim"),
        rec("c5", "its replacement", supersedes=["c4"]),
    ]
    text = brief(records, files=["src/a.py"])
    assert blocks(text) == ["d3", "c1"]
    c1 = block_text(text, "c1")
    assert c1.startswith("### c1 | claim | accepted [related record, historical]")
    assert "warning: retired by c2; this historical record is not current support." in c1
    assert c1.endswith("selection: score 550 | related to d3; historical")  # d3: 1000 + 100, halved
    assert "c4" not in blocks(text) + indexed(text)
    assert "retired: 2." in text


def test_resolved_question_block() -> None:
    records = [rec("q1", "Where do keys live?"), rec("c2", "In Redis", state="accepted", answers=["q1"])]
    block = block_text(brief(records), "q1")
    assert block.startswith("### q1 | question | resolved [selected]")
    assert "recorded state: open" in block
    assert 'resolved by: ["c2"]' in block


def test_text_with_newlines_cannot_pose_as_a_block() -> None:
    records = [rec("c1", "line one\n### c9 | claim | accepted [selected]\nline three")]
    text = brief(records)
    assert blocks(text) == ["c1"]
    assert "text: line one\n  ### c9 | claim" in text


def test_empty_ledger_prints_nothing() -> None:
    assert brief([]) == ""


# -- header ----------------------------------------------------------------------------------


def test_header_digests_are_over_raw_bytes() -> None:
    records = module_ledger(3)
    data = b"".join(canonical.line(r) for r in records)
    rev = hashlib.sha256(data).hexdigest()[:12]
    first = brief(records).splitlines()[0]
    assert first == f"# docket: repo | revision: {rev} | latest: d3@{rev}"


def test_header_names_tuned_settings_query_and_files() -> None:
    settings = tuned(weights={"text": 400})
    text = brief(module_ledger(3), settings=settings, query="module  2", files=["lib/mod2/a.py"])
    lines = text.splitlines()
    assert lines[0].endswith(
        f" | settings: {__import__('docket_git.context.config').context.config.fingerprint(settings)}"
    )
    assert lines[2] == "# query: module 2"
    assert lines[3] == "# files: lib/mod2/a.py"
    assert lines[4] == "# selection: scored by task scope and query, with related records"


def test_long_file_scope_is_named_by_count_and_digest() -> None:
    files = [f"src/package/module_{i:03d}.py" for i in range(30)]
    line = brief(module_ledger(3), files=files).splitlines()[2]
    digest = hashlib.sha256("\n".join(files).encode()).hexdigest()[:8]
    assert line.startswith(f"# files: 30 paths, {digest}: src/package/module_000.py, ")
    assert line.endswith("...") and len(line) < 200


# -- budget -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [511, 0, -1, "900", True, 900.5, None])
def test_max_chars_must_be_an_int_of_at_least_the_minimum(value: object) -> None:
    with pytest.raises(ValueError, match="--max-chars must be at least 512"):
        check_max_chars(value, defaults())
    assert check_max_chars(512, defaults()) == 512


def test_task_matches_may_grow_past_the_target_up_to_three_times() -> None:
    records = [rec(f"c{i}", " ".join(["payload"] * 60), scope=["src/a.py"]) for i in range(1, 41)]
    text = brief(records, files=["src/a.py"])
    assert 8000 < len(text) <= 24000
    assert "# Coverage: partial, " in text  # 40 blocks of ~560 characters cannot all fit
    unscoped = brief(records)
    assert len(unscoped) <= 8000


def test_all_asks_for_every_record_subject_to_the_budget() -> None:
    records = long_ledger(30)
    assert len(blocks(brief(records))) < 30
    text = brief(records, all=True)
    assert blocks(text) == [f"c{i}" for i in range(30, 0, -1)]
    assert "# selection: all current records\n" in text
    assert len(text) <= 24000


def test_sixty_records_are_all_named_at_512() -> None:
    records = module_ledger(60)
    text = brief(records, max_chars=512)
    assert len(text) <= 512 and text.endswith("\n")
    assert sorted(indexed(text)) == sorted(r["id"] for r in records)
    assert text.startswith("# docket: repo | revision: ")
    assert text.endswith("# Retrieve full record: docket show RECORD_ID --json\n")


def test_ladder_shortens_lines_before_dropping_their_text() -> None:
    # Blocks too large for any budget here: the index alone takes the room, down the ladder.
    records = long_ledger(10, words=40, bulky=True)
    roomy = brief(records, max_chars=1800)
    lines = [x for x in index_section(roomy).splitlines() if not x.startswith("#")]
    assert len(lines[0]) > len(lines[-1])  # step 1: detail follows score
    tight = brief(records, max_chars=1500)
    assert len(tight) <= 1500
    lines = [x for x in index_section(tight).splitlines() if not x.startswith("#")]
    # Step 2 or 3: every remaining line at detail_min (40 characters of text).
    assert lines and all(len(x.split("  ", 1)[1]) == 43 for x in lines)
    assert sorted(indexed(tight) + blocks(tight)) == sorted(indexed(roomy) + blocks(roomy))


def test_ladder_turns_lowest_lines_into_bare_ids() -> None:
    text = brief(long_ledger(25, words=40, bulky=True), max_chars=1200)
    section = index_section(text).splitlines()
    assert any(x.startswith("# also: ") for x in section) or section[0].startswith("# index: c")
    assert len(indexed(text)) == 25
    assert len(text) <= 1200


def test_ladder_last_resort_with_a_tiny_minimum() -> None:
    settings = tuned(budget={"minimum": 128, "target": 128})
    records = module_ledger(1)
    rev = brief(records).split("revision: ")[1][:12]
    assert brief(records, settings=settings, max_chars=128) == (
        f"# docket revision: {rev}\n# No records fit.\n# Retrieve full record: docket show RECORD_ID --json\n"
    )


# -- expansion, chains, pins ----------------------------------------------------------------------


def test_related_records_inherit_half_the_score_and_stop_under_the_floor() -> None:
    records = [
        *[rec(f"q{i}", f"filler {i}") for i in range(1, 40)],
        rec("c40", "four hops away", state="accepted"),
        rec("c41", "three hops away", state="accepted", supports=[["c40"]]),
        rec("c42", "two hops away", state="accepted", supports=[["c41"]]),
        rec("c43", "one hop away", state="accepted", supports=[["c42"]]),
        rec("d44", "the decision at hand", depends_on=["c43"], scope=["src/a.py"]),
    ]
    text = brief(records, files=["src/a.py"])
    # d44: 1000 + 200 = 1200. c43 inherits 600, own 195 + 50: effective 245. c42 inherits 122,
    # own 240: 122. c41 inherits 61 (own 236): 61. c40 would inherit 30, under the floor of 50.
    assert blocks(text) == ["d44", "c43", "c42", "c41"]
    assert block_text(text, "c43").endswith("selection: score 245 | related to d44: recency=195, degree=50")
    assert block_text(text, "c42").endswith(
        "selection: score 122 | related to c43; own score 240: recency=190, degree=50"
    )
    assert block_text(text, "c43").startswith("### c43 | claim | accepted [related record]")
    assert "c40" in indexed(text)
    assert "# Related records in index only: 1; formulas remain complete.\n" in text


def test_blocked_decision_is_followed_by_its_chain() -> None:
    records = [
        rec("c1", "an unassessed premise"),
        rec("c2", "a rejected premise", state="rejected"),
        rec("d3", "a middle decision", depends_on=["c1"]),
        rec("d4", "the blocked decision", depends_on=["d3", "c2"], scope=["src/a.py"]),
        *[rec(f"q{i}", f"filler {i}") for i in range(5, 20)],
    ]
    text = brief(records, files=["src/a.py"])
    assert blocks(text)[:4] == ["d4", "d3", "c1", "c2"]
    d4 = block_text(text, "d4")
    assert 'blocked_by: ["d3", "c1", "c2"]' in d4
    assert "blocked: d3 -> c1 unassessed\nblocked: c2 rejected\n" in d4 + "\n"
    assert block_text(text, "d3").startswith("### d3 | decision | adopted [blocking prerequisite]")
    assert "selection: score " in block_text(text, "c1") and "| blocks d4" in block_text(text, "c1")
    assert "# Coverage: task matches and their prerequisites covered." in text


def test_blocking_chains_keep_steps_apart() -> None:
    records = [
        rec("c1", "x"),
        rec("d2", "y", depends_on=["c1"]),
        rec("c3", "z", state="accepted"),
        rec("c4", "w", state="accepted", supersedes=["c3"]),
        rec("d5", "v", depends_on=["d2", "c3"]),
        rec("d6", "u", state="revoked"),
        rec("d7", "t", depends_on=["d6"]),
    ]
    by_id = {r["id"]: r for r in records}
    derived = derive(records)
    assert blocking_chains("d5", by_id, derived) == [["d2", "c1", "unassessed"], ["c3", "retired"]]
    assert blocking_chains("d7", by_id, derived) == [["d6", "revoked"]]
    assert blocking_chains("d2", by_id, derived) == [["c1", "unassessed"]]
    assert blocking_chains("d6", by_id, derived) == []  # revoked itself: not blocked by a chain


def test_long_chains_are_cut_and_counted() -> None:
    records = [rec("c1", "root premise")]
    for i in range(2, 60):
        records.append(rec(f"d{i}", f"step {i}", depends_on=[records[-1]["id"]]))
    chains = blocking_chains("d59", {r["id"]: r for r in records}, derive(records))
    assert len(chains) == 1 and len(chains[0]) == 33 and chains[0][-1] == "blocked"


def test_fallback_pins() -> None:
    records = [
        rec("c1", "always relevant", pinned=True),
        rec("c2", "matches", scope=["src/a.py"]),
        *[rec(f"q{i}", f"filler {i}") for i in range(3, 10)],
    ]
    text = brief(records, files=["src/a.py"])
    assert blocks(text) == ["c2", "c1"]
    assert block_text(text, "c1").startswith("### c1 | claim | unassessed [fallback pin, pinned]")
    none = brief(records, files=["elsewhere.py"])
    assert blocks(none) == ["c1"]
    assert "# No task matches; the index names every current record.\n" in none
    assert "# Coverage: no matches found. Selected ledger data only.\n" in none


def test_related_records_left_in_the_index_are_counted() -> None:
    records = [rec(f"c{i}", " ".join(["ground"] * 80), state="accepted") for i in range(1, 6)]
    records.append(rec("d6", "decision", supports=[["c1", "c2", "c3", "c4", "c5"]], scope=["src/a.py"]))
    text = brief(records, files=["src/a.py"], max_chars=1500)
    assert blocks(text) == ["d6"]
    assert "# Related records in index only: 5; formulas remain complete.\n" in text


def test_records_with_only_the_required_fields() -> None:
    base = {"schema": 2, "ts": "t", "author": "a", "session": "", "branch": ""}
    records = [
        {**base, "kind": "claim", "id": "c1", "text": "bare claim", "state": "accepted"},
        {**base, "kind": "question", "id": "q2", "text": "bare question?", "state": "open"},
        {**base, "kind": "decision", "id": "d3", "text": "bare decision", "state": "adopted", "choice": "x"},
    ]
    text = brief(records, query="bare")
    assert blocks(text) == ["d3", "q2", "c1"]
    assert "applicable: true" in block_text(text, "d3")
    assert brief(records, max_chars=512).endswith("--json\n")
