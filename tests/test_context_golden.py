"""Golden briefings: byte-exact output for fixed ledgers, each also held to a hand-written statement
of what it must show (tests/golden/statements.toml; workflow at the top of tests/golden/regenerate.py)."""

from __future__ import annotations

import pytest

from .ctx import block_text
from .golden.cases import CASES
from .golden.regenerate import OUT
from .golden.statements import broken, load

STATEMENTS = load()


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name: str) -> None:
    expected = (OUT / f"{name}.txt").read_text(encoding="utf-8")
    assert CASES[name]() == expected


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_keeps_its_statement(name: str) -> None:
    """The committed golden shows what its statement says, so refreshed bytes cannot drop a promised record."""
    text = (OUT / f"{name}.txt").read_text(encoding="utf-8")
    assert broken(STATEMENTS[name], text) == []


def test_every_golden_has_a_statement() -> None:
    assert sorted(STATEMENTS) == sorted(CASES)


def test_no_stray_golden_files() -> None:
    assert sorted(p.stem for p in OUT.glob("*.txt")) == sorted(CASES)


def test_a_statement_notices_a_dropped_block_a_wrong_tier_and_a_broken_ceiling() -> None:
    """The checks bite: each edit below, made to a copy of a golden, breaks its statement."""
    text = (OUT / "payments_file.txt").read_text(encoding="utf-8")
    statement = STATEMENTS["payments_file"]
    dropped = text.replace(block_text(text, "c5") + "\n\n", "")
    assert "no full-text block 'c5 unassessed [related record]'" in broken(statement, dropped)
    relabelled = text.replace("[fallback pin, pinned]", "[selected, pinned]")
    assert "no full-text block 'c7 unassessed [fallback pin, pinned]'" in broken(statement, relabelled)
    swapped = text.replace(block_text(text, "c1"), "@").replace(block_text(text, "q2"), block_text(text, "c1"))
    assert any("not in the stated order" in p for p in broken(statement, swapped.replace("@", block_text(text, "q2"))))
    narrow = (OUT / "n60_b512.txt").read_text(encoding="utf-8")
    assert any("over 512" in p for p in broken(STATEMENTS["n60_b512"], narrow + "# one line too many\n"))
    assert any("c24 must not be shown" in p for p in broken(STATEMENTS["n60_b512"], narrow.replace("d53,", "c24,")))
