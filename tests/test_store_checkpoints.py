"""The index as validated prefix: bytes sharing a start with the indexed ledger validate exactly as from scratch."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

from hypothesis import given
from hypothesis import strategies as st

from docket_git.errors import LedgerError
from docket_git.ledger import canonical, index, model, store
from tests.hypothesis_helpers import profile

from .conftest import rec
from .test_context_properties import ledgers
from .test_outline import cache_home, ledger_in


@contextlib.contextmanager
def small_blocks() -> Iterator[None]:
    """Checkpoints every few hundred bytes, so small generated ledgers have many of them."""
    old, index.schema.BLOCK = index.schema.BLOCK, 300
    try:
        yield
    finally:
        index.schema.BLOCK = old


def outcome(parse, *args) -> tuple:
    """(records, valid length) of a parse, or the message it refused the bytes with."""
    try:
        snap = parse(*args)
    except LedgerError as exc:
        return ("refused", str(exc))
    return (snap.records, snap.valid_length)


#: Tails that break a rule only the records before them can tell: a duplicate ID, an unknown
#: reference, a second supersession of one record, an ID that does not increase.
FAULTS = ("duplicate", "unknown", "retired-twice", "lower-id", "none")


@profile(20, 400)
@given(
    records=ledgers(),
    keep=st.integers(0, 70),
    extra=st.integers(0, 5),
    blank=st.booleans(),
    fault=st.sampled_from(FAULTS),
)
def test_bytes_sharing_the_indexed_start_validate_as_from_scratch(
    records: list[dict], keep: int, extra: int, blank: bool, fault: str
) -> None:
    keep = min(keep, len(records))
    top = max((model.seq(r["id"]) for r in records), default=0)
    # The other bytes: the shared start, then records of their own (higher IDs, citing the shared part).
    tail = [
        rec(f"c{top + i}", supports=[[records[0]["id"]]] if keep and records[0]["kind"] != "question" else [])
        for i in range(1, extra + 1)
    ]
    shared = records[:keep]
    if fault == "duplicate" and shared:
        tail.append(rec(shared[0]["id"]))
    elif fault == "unknown":
        tail.append(rec(f"c{top + 90}", supports=[["c999"]]))
    elif fault == "retired-twice":
        retired = [t for r in shared for t in r.get("supersedes") or ()]
        if retired:
            tail.append(rec(f"{retired[0][0]}{top + 95}", supersedes=[retired[0]]))
    elif fault == "lower-id" and shared:
        tail.append(rec("c1"))
    other = b"".join(canonical.line(r) for r in shared) + (b"\n" if blank else b"")
    other += b"".join(json.dumps(r).encode() + b"\n" for r in tail)
    with cache_home() as tmp, small_blocks():
        path = ledger_in(tmp, b"".join(canonical.line(r) for r in records))
        index.open_index(path).close()  # the first branch's ledger, indexed with its checkpoints
        assert outcome(index.parse, path, other) == outcome(store.parse, path, other)
        path.write_bytes(other)  # and the ledger itself switched to the other bytes
        try:
            ix = index.open_index(path)
        except LedgerError as exc:
            assert outcome(store.parse, path, other) == ("refused", str(exc))
        else:
            ix.close()
            assert outcome(store.parse, path, other)[0] != "refused"
            assert index.read(path).records == store.read(path).records
