"""The driver never leaves a silently wrong file: ours stays a byte prefix of what it writes, or markers."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docket_git.ledger import model, validate
from docket_git.merging import driver as git_driver
from docket_git.merging.rebase import RawLedger, match
from tests.conftest import rec
from tests.hypothesis_helpers import profile
from tests.test_merge_driver import (
    Driver,
    driver,  # noqa: F401  (the fixture)
    ledger,
    records,
)

C1 = rec("c1", "Shared")


def test_ours_without_a_final_newline_stays_a_prefix(driver: Driver):  # noqa: F811  (the fixture)
    ours = ledger(C1, rec("c2", "Mine")).rstrip(b"\n")
    code, result, err = driver.run(ledger(C1), ours, ledger(C1, rec("c2", "Theirs")))
    assert code == 0, err
    assert result.startswith(ours)
    assert [r["text"] for r in records(result)] == ["Shared", "Mine", "Theirs"]
    assert [r["id"] for r in records(result)] == ["c1", "c2", "c3"]


def test_an_internal_error_leaves_conflict_markers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def broken(target: str, base: bytes, ours: bytes, theirs: bytes):
        raise KeyError("a bug")

    monkeypatch.setattr(git_driver, "_merge_claims", broken)
    paths = [tmp_path / n for n in ("O", "A", "B")]
    ours = ledger(C1, rec("c2", "Mine"))
    for path, data in zip(paths, (ledger(C1), ours, ledger(C1, rec("c2", "Theirs"))), strict=True):
        path.write_bytes(data)
    monkeypatch.chdir(tmp_path)
    assert git_driver.main([*map(str, paths), ".docket/ledger.jsonl"]) == 1
    left = paths[1].read_bytes()
    assert left != ours
    assert b"<<<<<<<" in left and b">>>>>>>" in left
    assert b'"Mine"' in left and b'"Theirs"' in left


# -- the byte-prefix property, over real files and the driver's own write ----------------------------


def _serialise(draw, record: dict) -> bytes:
    """One record as some writer might have put it: any spacing, any key order, LF end."""
    items = list(record.items())
    if draw(st.booleans()):
        items = draw(st.permutations(items))
    separators = draw(st.sampled_from([(",", ":"), (", ", ": "), (",", ": ")]))
    return json.dumps(dict(items), separators=separators, ensure_ascii=draw(st.booleans())).encode()


def _side(draw, prefix: list[dict], label: str) -> list[dict]:
    out = list(prefix)
    for i in range(draw(st.integers(0, 5))):
        top = max((model.seq(r["id"]) for r in out), default=0)
        kind = draw(st.sampled_from(["claim", "decision", "question"]))
        rid = model.make_id(kind, top + 1)
        fields: dict = {}
        premises = [r["id"] for r in out if r["kind"] != "question"]
        if kind == "decision" and premises and draw(st.booleans()):
            fields["depends_on"] = [draw(st.sampled_from(premises))]
        shared = draw(st.integers(0, 4)) == 0  # the same record on both sides (a cherry-pick)
        out.append(rec(rid, "twin é" if shared else f"{label}{i} on {rid} ü", **fields))
    return out


@st.composite
def sides(draw):
    prefix = _side(draw, [], "p")
    ours, theirs = _side(draw, prefix, "a"), _side(draw, prefix, "b")
    # Each side wrote its own bytes (the shared records may be spelled differently on each).
    ours_bytes = b"".join(_serialise(draw, r) + b"\n" * draw(st.integers(1, 2)) for r in ours)
    theirs_bytes = b"".join(_serialise(draw, r) + b"\n" for r in theirs)
    if ours_bytes and draw(st.booleans()):
        ours_bytes = ours_bytes.rstrip(b"\n")  # no final newline
    base_bytes = b"".join(_serialise(draw, r) + b"\n" for r in prefix)
    return base_bytes, ours_bytes, theirs_bytes


@profile(30, 300)
@given(sides())
def test_the_driver_output_starts_with_ours_bytes_and_holds_theirs(three):
    _, ours, theirs = three
    with tempfile.TemporaryDirectory() as work:
        paths = [Path(work) / n for n in ("O", "A", "B")]
        for path, data in zip(paths, three, strict=True):
            path.write_bytes(data)
        code = git_driver.main([*map(str, paths), ".docket/ledger.jsonl"])
        result = paths[1].read_bytes()
    if code != 0:  # a refusal must leave markers, never an unmarked file
        assert b"<<<<<<<" in result
        return
    assert result.startswith(ours)
    lines = [(n, raw) for n, raw in enumerate(result.split(b"\n"), start=1) if raw.strip()]
    faults, _ = validate.check_all(lines)
    assert not faults, faults
    merged = list(RawLedger(result))
    theirs_records = list(RawLedger(theirs))
    found = match(theirs_records, merged)
    assert set(found) == {r["id"] for r in theirs_records}
    assert len(set(found.values())) == len(found)
