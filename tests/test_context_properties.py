"""Property tests over random ledgers, tasks and budgets."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from docket_git.context import compose_delta
from docket_git.context.config import defaults
from docket_git.ledger.project import project
from tests.hypothesis_helpers import profile

from .conftest import rec
from .ctx import brief, indexed, snapshot

SCOPES = ["src/a.py", "src/b.py", "src/", "src/**", "lib/*.py", "billing", "docs/guide.md"]
FILES = ["src/a.py", "src/b.py", "lib/x.py", "docs/guide.md", "elsewhere/z.py"]
WORDS = ["cache", "retry", "key", "redis", "module", "3", "zeta", "Ünïcode", "長い"]

TEXT = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=120),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=40).map(" ".join),
).filter(lambda t: t.strip())


@st.composite
def ledgers(draw: st.DrawFn) -> list[dict]:
    """A valid schema-2 ledger with every relation kind, supersessions, pins and odd text."""
    n = draw(st.integers(1, 70))
    records: list[dict] = []
    retired: set[str] = set()
    seq = 0
    for _ in range(n):
        seq += draw(st.integers(1, 2))
        kind = draw(st.sampled_from(["claim", "claim", "decision", "question"]))
        rid = f"{kind[0]}{seq}"
        fields: dict = {
            "scope": draw(st.lists(st.sampled_from(SCOPES), max_size=2, unique=True)),
            "pinned": draw(st.booleans()) and draw(st.booleans()),
        }
        if kind == "claim":
            fields["state"] = draw(st.sampled_from(["unassessed", "accepted", "accepted", "disputed", "rejected"]))
        elif kind == "decision":
            fields["state"] = draw(st.sampled_from(["adopted", "adopted", "adopted", "revoked"]))
        grounds = [r["id"] for r in records if r["kind"] != "question"]
        questions = [r["id"] for r in records if r["kind"] == "question"]
        if grounds and kind != "question" and draw(st.booleans()):
            fields["supports"] = draw(
                st.lists(
                    st.lists(st.sampled_from(grounds), min_size=1, max_size=3, unique=True), min_size=1, max_size=2
                )
            )
        if grounds and kind == "decision" and draw(st.booleans()):
            fields["depends_on"] = draw(st.lists(st.sampled_from(grounds), min_size=1, max_size=3, unique=True))
        if questions and kind != "question" and draw(st.booleans()):
            fields["answers"] = draw(st.lists(st.sampled_from(questions), min_size=1, max_size=2, unique=True))
        same = [r["id"] for r in records if r["kind"] == kind and r["id"] not in retired]
        if same and draw(st.integers(0, 4)) == 0:
            target = draw(st.sampled_from(same))
            fields["supersedes"] = [target]
            retired.add(target)
        if draw(st.integers(0, 5)) == 0:
            fields["rationale"] = draw(TEXT)
        if draw(st.integers(0, 8)) == 0:
            fields["evidence"] = [{"ref": "https://example.com/pr/1"}]
        records.append(rec(rid, draw(TEXT), **fields))
    return records


REQUESTS = st.fixed_dictionaries(
    {},
    optional={
        "query": st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
        "files": st.lists(st.sampled_from(FILES), max_size=3, unique=True).map(tuple),
        "all": st.booleans(),
        "max_chars": st.integers(512, 6000),
    },
)

SETTINGS = profile(37, 750)


def current_ids(records: list[dict]) -> list[str]:
    return [v["id"] for v in project(records) if not v["retired_by"]]


@SETTINGS
@given(ledgers(), REQUESTS)
def test_briefing_invariants(records: list[dict], request: dict) -> None:
    text = brief(records, **request)
    ceiling = request.get("max_chars", 24000)
    assert 0 < len(text) <= ceiling
    assert text.endswith("\n")
    assert text == brief(records, **request), "reruns must be byte-identical"
    if text.startswith("# docket revision: "):  # the last resort names nothing
        return

    current = current_ids(records)
    views = {v["id"]: v for v in project(records)}
    block_ids = re.findall(r"^### (\S+) \| ", text, re.M)
    current_blocks = [b for b in block_ids if b in current]
    named = indexed(text)
    assert len(block_ids) == len(set(block_ids))
    assert len(named) == len(set(named)) and not set(named) & set(block_ids)
    assert set(named) <= set(current)
    # Retired records only appear as cited, historical blocks.
    for rid in set(block_ids) - set(current):
        assert re.search(rf"^### {rid} \| .*historical\]$", text, re.M)

    tally = re.search(r"^# full text: (\d+); index: (\d+); retired: (\d+)\.$", text, re.M)
    assert tally, text
    assert int(tally[1]) == len(current_blocks)
    assert int(tally[2]) == len(named)
    assert int(tally[3]) == len(records) - len(current)
    unlisted = re.search(r"^# (?:and|index:) (\d+) more; docket list$", text, re.M)
    rest = int(unlisted[1]) if unlisted else 0
    # Each current record exactly once across the tiers, or counted as not listed.
    assert len(current_blocks) + len(named) + rest == len(current)

    # No block is cut: each ends with its selection line and carries the whole text.
    for chunk in re.split(r"\n(?=### )", text)[1:]:
        block = chunk.split("\n\n")[0]
        rid = block.split(" ", 2)[1]
        assert block.splitlines()[-1].startswith("selection: score "), block
        body = views[rid]["text"].replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\n  ")
        assert f"\ntext: {body}\n" in block + "\n"


@SETTINGS
@given(ledgers(), st.integers(512, 4000), st.data())
def test_delta_invariants(records: list[dict], limit: int, data: st.DataObject) -> None:
    cut = data.draw(st.integers(1, len(records)))
    baseline = records[:cut]
    since = baseline[-1]["id"]
    text = compose_delta(snapshot(records), defaults(), baseline, since, identity="repo", max_chars=limit)
    assert len(text) <= limit and text.endswith("\n")
    assert text == compose_delta(snapshot(records), defaults(), baseline, since, identity="repo", max_chars=limit)
    added = len(records) - cut
    assert f"# changed: {added} added, " in text


#: The footer's lines at their longest, per the documented format (docs/context.md): every optional
#: line present, the longest coverage line, numbers as wide as the ledger's record count allows.
def _footer_bound(records: int) -> int:
    n = "9" * len(str(records))
    lines = [
        f"# full text: {n}; index: {n}; retired: {n}.",
        f"# Not listed: {n}; reach them with docket list.",
        f"# Related records in index only: {n}; formulas remain complete.",
        "# Coverage: task matches and their prerequisites covered. Selected ledger data only.",
        "# Declared grounds; evidence not freshly verified.",
        "# Retrieve full record: docket show RECORD_ID --json",
    ]
    return sum(len(line) + 1 for line in lines)


@SETTINGS
@given(ledgers(), REQUESTS, st.integers(512, 6000))
def test_top_record_is_in_full_when_its_block_fits(records: list[dict], request: dict, budget: int) -> None:
    """For any budget: if the top-ranked record's block plus the header and footer fit, it is in full text."""
    request = {k: v for k, v in request.items() if k != "max_chars"}
    roomy = brief(records, max_chars=10**7, **request)
    first = re.search(r"^### (\S+) \| [^\n]*\[selected", roomy, re.M)
    if first is None:  # task mode with no match: no ranked root (fallback pins are not the task's top)
        return
    top = first[1]
    assert block_ids(roomy)[0] == top  # roots come first, in score order
    header = roomy[: roomy.index("### ")]
    block = re.search(rf"^### {re.escape(top)} \|.*?\n(?=\n|\Z)", roomy, re.M | re.S)[0]
    count_line = f"# index: {len(records)} more; docket list\n"
    # header (ends in its blank line), the block, a blank, the index at its smallest, a blank, the footer
    needed = len(header) + len(block) + 1 + len(count_line) + 1 + _footer_bound(len(records))
    text = brief(records, max_chars=budget, **request)
    if needed <= budget:
        assert top in block_ids(text), (top, budget, needed, text)
        assert re.search(rf"^### {re.escape(top)} \| .*\[selected", text, re.M)


def block_ids(text: str) -> list[str]:
    return re.findall(r"^### (\S+) \| ", text, re.M)
