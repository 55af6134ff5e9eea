"""--since: resolving a baseline, and the delta between two record lists."""

from __future__ import annotations

import hashlib

from docket_git.context import compose_delta
from docket_git.context.config import defaults
from docket_git.context.delta import delta, parse_since, resolve_baseline
from docket_git.ledger import canonical

from .conftest import rec
from .ctx import blocks, snapshot


def ledger() -> list[dict]:
    return [
        rec("c1", "keys expire after a day", state="accepted"),
        rec("d2", "keep keys in redis", depends_on=["c1"]),
        rec("c3", "an unassessed guess"),
        # baseline d2 / c3 ends here
        rec("c4", "keys expire after a week", state="accepted", supersedes=["c1"]),
        rec("c5", "a newer guess", supersedes=["c3"]),
        rec("q6", "who owns the cache?"),
    ]


def digest_through(records: list[dict], i: int) -> str:
    return hashlib.sha256(b"".join(canonical.line(r) for r in records[: i + 1])).hexdigest()


def test_parse_since() -> None:
    assert parse_since("d2") == ("d2", None)
    assert parse_since(" d2@abc ") == ("d2", "abc")


def test_resolve_baseline_by_id_and_digest() -> None:
    records = ledger()
    snap = snapshot(records)
    full = digest_through(records, 2)
    assert [r["id"] for r in resolve_baseline(snap, "c3")] == ["c1", "d2", "c3"]
    assert resolve_baseline(snap, f"c3@{full[:12]}") == records[:3]
    assert resolve_baseline(snap, f"c3@{full[:8].upper()}") == records[:3]
    assert resolve_baseline(snap, f"c3@{full}") == records[:3]


def test_unknown_or_stale_baselines() -> None:
    records = ledger()
    snap = snapshot(records)
    assert resolve_baseline(snap, "c99") is None
    assert resolve_baseline(snap, "nonsense") is None
    assert resolve_baseline(snap, f"c3@{digest_through(records, 1)[:12]}") is None  # another record's digest
    assert resolve_baseline(snap, "c3@1234567") is None  # too short to trust
    assert resolve_baseline(snap, "c3@not-hex!") is None


def test_digest_ignores_later_derived_changes() -> None:
    # Superseding c1 later changes c1's derived state, not the bytes through c3: the baseline holds.
    records = ledger()
    before = digest_through(records[:3], 2)
    assert resolve_baseline(snapshot(records), f"c3@{before[:12]}") is not None


def test_delta_added_and_no_longer_available() -> None:
    records = ledger()
    change = delta(records[:3], records)
    assert [v["id"] for v in change.added] == ["c4", "c5", "q6"]
    # c1 was accepted and current, d2 applicable; both lost that. c3 was never available: no change.
    assert [v["id"] for v in change.lost] == ["c1", "d2"]
    assert change.lost[0]["retired_by"] == "c4"
    assert change.lost[1]["applicable"] is False


def test_delta_with_an_id_map() -> None:
    # A baseline taken before a merge renumbered c3 to c7: the map names it.
    baseline = [rec("c1", "a", state="accepted"), rec("c3", "b", state="accepted")]
    current = [rec("c1", "a", state="accepted"), rec("c5", "new"), rec("c7", "b", state="accepted")]
    change = delta(baseline, current, {"c3": "c7"})
    assert [v["id"] for v in change.added] == ["c5"]
    assert change.lost == []


def test_delta_briefing() -> None:
    records = ledger()
    snap = snapshot(records)
    text = compose_delta(snap, defaults(), records[:3], "c3", identity="repo")
    rev = digest_through(records, len(records) - 1)[:12]
    lines = text.splitlines()
    assert lines[0] == f"# docket: repo | revision: {rev} | latest: q6@{rev} | since: c3"
    assert lines[1] == "# changed: 3 added, 2 no longer available."
    assert blocks(text) == ["c4", "c5", "q6", "c1", "d2"]
    assert "### c1 | claim | accepted [changed, historical]" in text
    assert "change: added after c3" in text and "change: no longer available since c3" in text
    assert "# full text" not in text  # no footer


def test_latest_baseline_has_no_changes() -> None:
    records = ledger()
    text = compose_delta(snapshot(records), defaults(), records, "q6", identity="repo")
    assert text.splitlines()[1] == "# changed: 0 added, 0 no longer available."
    assert len(text.splitlines()) == 2


def test_delta_degrades_to_index_lines_within_the_ceiling() -> None:
    base = [rec("c1", "start")]
    records = base + [rec(f"c{i}", f"change number {i} " * 8) for i in range(2, 80)]
    for limit in (512, 900, 3000):
        text = compose_delta(snapshot(records), defaults(), base, "c1", identity="repo", max_chars=limit)
        assert len(text) <= limit and text.endswith("\n")
        assert "# changed: 78 added, 0 no longer available." in text
        assert "more changed records" in text and "more; docket list" in text


def test_revision_through_the_index_is_the_digest_of_the_bytes(env: dict[str, str], tmp_path) -> None:
    from docket_git.ledger import index

    path = tmp_path / "repo" / ".docket" / "ledger.jsonl"
    path.parent.mkdir(parents=True)
    records = ledger()
    data = b"".join(canonical.line(r) for r in records[:3])
    path.write_bytes(data)
    first = index.read(path)  # validates everything, builds the index
    second = index.read(path)  # proven current: nothing validated
    assert first.revision() == second.revision() == hashlib.sha256(data).hexdigest()
    with index.opened(path) as ix:
        assert index.revision(ix) == (hashlib.sha256(data).hexdigest(), len(data))  # computed once, then filed
    assert index.read(path).hashed == (len(data), hashlib.sha256(data).hexdigest())
    grown = data + b"".join(canonical.line(r) for r in records[3:]) + b"\n"  # and a blank line
    path.write_bytes(grown)
    assert index.read(path).revision() == hashlib.sha256(grown[:-1]).hexdigest()
    with index.opened(path) as ix:
        assert index.revision(ix)[0] == hashlib.sha256(grown[:-1]).hexdigest()
    assert index.read(path).prefix_digest(2) == hashlib.sha256(data).hexdigest()
