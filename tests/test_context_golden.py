"""Golden briefings: byte-exact output for fixed ledgers (regenerate: python -m tests.golden.regenerate)."""

from __future__ import annotations

import pytest

from .golden.cases import CASES
from .golden.regenerate import OUT


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name: str) -> None:
    expected = (OUT / f"{name}.txt").read_text(encoding="utf-8")
    assert CASES[name]() == expected


def test_no_stray_golden_files() -> None:
    assert sorted(p.stem for p in OUT.glob("*.txt")) == sorted(CASES)
