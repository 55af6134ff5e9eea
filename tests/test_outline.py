"""The outline cache: whatever path load takes (fresh, exact hit, grown, rebuilt), it equals a full build."""

from __future__ import annotations

import contextlib
import marshal
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docket_git.context import outline as outline_mod
from docket_git.context.outline import Outline, records_end
from docket_git.ledger import canonical

from .test_context_properties import ledgers


def facts(o: Outline) -> dict:
    """Everything an outline holds, in comparable form (lists keep their order)."""
    d = o.derived
    return {
        "ids": o.ids,
        "pos": o.pos,
        "live": o.live,
        "current": o.current,
        "retired_by": d.retired_by,
        "blocked": d.blocked,
        "resolved_by": d.resolved_by,
        "degrees": o.degrees,
        "incoming": o.incoming,
        "pinned": o.pinned,
        "scopes": o.scopes,
        "depends": o.depends,
        "records": {rid: o.records[rid] for rid in o.ids},
    }


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


def loaded(path: Path, data: bytes, *, validated: bool = False) -> Outline:
    """The outline through the cache; ``validated`` also hands it the records store validation decoded."""
    from docket_git.ledger import store

    path.write_bytes(data)
    end = records_end(data, len(data))
    parsed = None
    if validated:
        snap = store.parse(path, data, records=False)
        parsed = (snap.tail_from, snap.tail, snap.tail_ends)
    return outline_mod.load(path, data, end, canonical.sha256(data[:end]), parsed)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=ledgers(),
    cuts=st.lists(st.integers(0, 70), min_size=1, max_size=3),
    blanks=st.sets(st.integers(0, 70), max_size=4),
    validated=st.booleans(),
)
def test_load_after_growth_equals_a_full_build(
    records: list[dict], cuts: list[int], blanks: set[int], validated: bool
) -> None:
    with cache_home() as tmp:
        path = tmp / "repo" / ".docket" / "ledger.jsonl"
        path.parent.mkdir(parents=True)
        # The ledger grows through each cut, then to its full length; each step loads through the cache.
        for cut in sorted(c for c in cuts if 0 < c < len(records)):
            part = records[:cut]
            assert facts(loaded(path, encode(part, blanks), validated=validated)) == facts(Outline.build(part))
        data = encode(records, blanks)
        expected = facts(Outline.build(records))
        assert facts(loaded(path, data, validated=validated)) == expected
        assert facts(loaded(path, data, validated=validated)) == expected  # the exact hit


def test_grown_ledger_extends_the_cached_outline_and_a_supersession_rebuilds(tmp_path: Path, monkeypatch) -> None:
    from .conftest import rec

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "repo" / ".docket" / "ledger.jsonl"
    path.parent.mkdir(parents=True)
    base = [
        rec("c1", "premise", state="accepted"),
        rec("q2", "open question"),
        rec("d3", "choice", depends_on=["c1"]),
    ]
    loaded(path, encode(base, set()))
    rows_file = outline_mod._cache_file(path, "rows")
    rows_before = rows_file.read_bytes()
    grown = [*base, rec("d4", "answer", answers=["q2"], depends_on=["d3"])]
    out = loaded(path, encode(grown, set()))
    assert out.derived.resolved_by == {"q2": ["d4"]}
    assert out.incoming["d4"] == ["q2"]
    assert rows_file.read_bytes() == rows_before  # extended in place: no full rebuild
    retiring = [*grown, rec("c5", "new premise", state="accepted", supersedes=["c1"])]
    out = loaded(path, encode(retiring, set()))
    assert out.derived.blocked["d3"] == ["c1"]
    assert out.derived.blocked["d4"] == ["d3", "c1"]
    assert "q2" not in out.derived.resolved_by
    assert rows_file.read_bytes() != rows_before  # rebuilt from the rows


def test_records_end_skips_trailing_blank_lines() -> None:
    assert records_end(b"", 0) == 0
    assert records_end(b"\n \n", 3) == 0
    assert records_end(b'{"a":1}\n\n  \n', 12) == 8
    assert records_end(b'{"a":1}', 7) == 7
    assert records_end(b'{"a":1}\n{"b":', 8) == 8  # a torn line past the valid bytes


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
        snap = store.parse(path, data, use_cache=False)
        rid = records[at]["id"]
        since = rid if bare else f"{rid}@{canonical.short(snap.prefix_digest(at))}"
        expected = compose_delta(snap, defaults(), records[: at + 1], since, identity="repo", max_chars=budget)
        assert build_briefing(ledger=path, since=since, max_chars=budget).text == expected


def test_a_damaged_cache_costs_a_rebuild_not_a_wrong_outline(tmp_path: Path, monkeypatch) -> None:
    from .conftest import rec

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "repo" / ".docket" / "ledger.jsonl"
    path.parent.mkdir(parents=True)
    records = [rec("c1", state="accepted"), rec("d2", depends_on=["c1"]), rec("q3")]
    data = encode(records, set())
    expected = facts(Outline.build(records))
    assert facts(loaded(path, data)) == expected
    end = records_end(data, len(data))
    digest = canonical.sha256(data[:end])
    for payload in (b"\x00garbage", marshal.dumps(("wrong", "shape")), marshal.dumps(([1, 2], b"x"))):
        # Valid headers in front of damaged payloads: both files are read, neither is trusted.
        outline_mod._write(path, "outline", end, digest, payload)
        outline_mod._write(path, "rows", 1, canonical.sha256(data[:1]), payload)
        assert facts(loaded(path, data)) == expected
    grown = [*records, rec("c4", state="accepted")]
    outline_mod._write(path, "outline", end, digest, b"\x00garbage")
    assert facts(loaded(path, encode(grown, set()))) == facts(Outline.build(grown))
