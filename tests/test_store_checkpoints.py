"""Cache checkpoints: a ledger whose tail was rewritten reads exactly as it would without a cache."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docket_git.ledger import canonical, model, store

from .conftest import rec
from .test_context_properties import ledgers
from .test_outline import cache_home


def facts(snap: store.Snapshot) -> tuple:
    i = snap.index
    return (list(i.lines.items()), i.retired, i.retired_at, i.max_seq, i.count, snap.records, snap.valid_length)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=ledgers(), keep=st.integers(0, 70), extra=st.integers(0, 5), blank=st.booleans())
def test_rewritten_tail_reads_as_without_a_cache(records: list[dict], keep: int, extra: int, blank: bool) -> None:
    keep = min(keep, len(records))
    top = max((model.seq(r["id"]) for r in records), default=0)
    # The other branch: the shared start, then records of its own (higher IDs, citing the shared part).
    tail = [
        rec(f"c{top + i}", supports=[[records[0]["id"]]] if keep and records[0]["kind"] != "question" else [])
        for i in range(1, extra + 1)
    ]
    shared = b"".join(canonical.line(r) for r in records[:keep])
    other = shared + (b"\n" if blank else b"") + b"".join(canonical.line(r) for r in tail)
    with cache_home() as tmp:
        path = tmp / "repo" / ".docket" / "ledger.jsonl"
        path.parent.mkdir(parents=True)
        first = b"".join(canonical.line(r) for r in records)
        store.parse(path, first)  # caches the first branch's ledger, checkpoints included
        assert facts(store.parse(path, other)) == facts(store.parse(Path(path), other, use_cache=False))
