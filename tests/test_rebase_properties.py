"""Property tests: random histories that fork and both record, merged both ways."""

from __future__ import annotations

import hashlib
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from docket_git.ledger import model
from docket_git.merging.rebase import MERGE_AUTHOR, content_key, merge
from tests.conftest import rec
from tests.hypothesis_helpers import profile
from tests.test_rebase import valid


def grow(draw, records: list[dict], n: int, label: str, twins: set[int]) -> list[dict]:
    """records plus n new valid records drawn at random (relations, prose IDs, supersedes, twins)."""
    out = list(records)
    for i in range(n):
        top = max((model.seq(r["id"]) for r in out), default=0)
        retired = {t for r in out for t in r["supersedes"]}
        kind = draw(st.sampled_from(model.KINDS))
        rid = model.make_id(kind, top + 1)
        twin = draw(st.integers(0, 5))
        if twin < 3 and twin not in twins:
            twins.add(twin)  # the same record recorded on both sides (e.g. a cherry-pick)
            out.append(rec(model.make_id("claim", top + 1), f"twin {twin}", ts="2026-02-02T00:00:00+00:00"))
            continue
        premises = [r["id"] for r in out if r["kind"] != "question"]
        questions = [r["id"] for r in out if r["kind"] == "question"]
        fields: dict = {}
        if premises and draw(st.booleans()):
            fields["supports"] = [draw(st.lists(st.sampled_from(premises), min_size=1, max_size=2, unique=True))]
        if kind == "decision" and premises and draw(st.booleans()):
            fields["depends_on"] = draw(st.lists(st.sampled_from(premises), min_size=1, max_size=2, unique=True))
        if kind != "question" and questions and draw(st.booleans()):
            fields["answers"] = [draw(st.sampled_from(questions))]
        same_kind = [r["id"] for r in out if r["kind"] == kind and r["id"] not in retired]
        if same_kind and draw(st.booleans()):
            fields["supersedes"] = [draw(st.sampled_from(same_kind))]
        text = f"{label}{i} records something"
        if out and draw(st.booleans()):
            text += f" about {draw(st.sampled_from([r['id'] for r in out]))}"
        out.append(rec(rid, text, **fields))
    return out


def identities(records: list[dict]) -> list[str]:
    """Each record's identity: content with cited records replaced by their identities, supersedes aside."""
    ident: dict[str, str] = {}
    out = []
    for r in records:
        resolved = {k: v for k, v in r.items() if k != "supersedes"}
        resolved["supports"] = [[ident[t] for t in g] for g in r.get("supports", [])]
        for name in ("depends_on", "answers"):
            resolved[name] = [ident[t] for t in r.get(name, [])]
        ident[r["id"]] = hashlib.sha256(content_key(resolved).encode()).hexdigest()[:16]
        out.append(ident[r["id"]])
    return out


@st.composite
def forked(draw):
    prefix = grow(draw, [], draw(st.integers(0, 5)), "p", {0, 1, 2})
    ours = grow(draw, prefix, draw(st.integers(0, 6)), "a", set())
    theirs = grow(draw, prefix, draw(st.integers(0, 6)), "b", set())
    return prefix, ours, theirs


def merge_questions(records: list[dict]) -> list[dict]:
    return [r for r in records if r["author"] == MERGE_AUTHOR]


@profile(60, 600)
@given(forked())
def test_merged_ledgers_are_valid_complete_and_settle_both_ways(history):
    prefix, ours, theirs = history
    valid(ours)
    valid(theirs)
    tail, _, conflicts = merge(prefix, ours, theirs)
    merged = ours + tail
    valid(merged)
    assert merged[: len(ours)] == ours
    assert len(merge_questions(merged)) == len(conflicts)

    # Every record of both sides exactly once.
    plain = [i for i, r in zip(identities(merged), merged, strict=True) if r["author"] != MERGE_AUTHOR]
    counts = Counter(plain)
    assert set(counts.values()) <= {1}
    assert set(counts) == set(identities(ours)) | set(identities(theirs))

    # Merging back gives the same set, questions included.
    back_tail, _, _ = merge(prefix, theirs, merged)
    back = theirs + back_tail
    valid(back)
    assert Counter(identities(back)) == Counter(identities(merged))

    # And from then on, merging either way (with any base) appends nothing.
    for base in (prefix, ours, theirs, []):
        assert merge(base, merged, back)[0] == []
        assert merge(base, back, merged)[0] == []
