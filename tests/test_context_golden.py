"""Golden briefings: byte-exact output for fixed ledgers, each also held to a hand-written statement
of what it must show (tests/golden/statements.toml; workflow at the top of tests/golden/regenerate.py)."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest

from .ctx import block_text
from .golden.cases import CASES
from .golden.regenerate import OUT, main
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


def test_regenerate_refuses_a_golden_whose_new_output_breaks_its_statement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """regenerate.py writes a changed golden only when named, its statement holds, and the statement changed."""
    goldens = tmp_path / "context"
    shutil.copytree(OUT, goldens)
    stale = (goldens / "payments_file.txt").read_text(encoding="utf-8").replace("[fallback pin, pinned]", "[old]")
    (goldens / "payments_file.txt").write_text(stale, encoding="utf-8")  # as if the code's output had moved

    def run(*argv: str, statements: dict = STATEMENTS, committed: dict = STATEMENTS) -> int:
        return main(list(argv), goldens=goldens, statements=statements, committed=committed)

    assert run() == 1 and "payments_file: output changed; it keeps its statement" in capsys.readouterr().out
    assert run("payments_file") == 1  # the statement is the one in HEAD: say what changed, or that it holds
    assert "its statement is unchanged since HEAD" in capsys.readouterr().err
    promised = copy.deepcopy(STATEMENTS)
    promised["payments_file"]["shows"].append("d3 adopted [selected]")
    assert run("payments_file", "--statement-holds", statements=promised) == 1
    assert "breaks its statement: no full-text block 'd3 adopted [selected]'" in capsys.readouterr().err
    assert (goldens / "payments_file.txt").read_text(encoding="utf-8") == stale  # nothing written
    edited = copy.deepcopy(STATEMENTS)
    edited["payments_file"]["why"] += " (edited)"
    assert run("payments_file", statements=edited) == 0
    assert (goldens / "payments_file.txt").read_text(encoding="utf-8") == CASES["payments_file"]()
    assert run() == 0


def test_a_misspelt_key_or_a_missing_why_is_refused(tmp_path: Path) -> None:
    """A typo must not turn a statement into one that checks nothing."""
    path = tmp_path / "statements.toml"
    path.write_text('[payments_file]\nwhy = "x"\nshow = ["d4 adopted [selected]"]\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"\[payments_file\] has unknown keys \['show'\]"):
        load(path)
    path.write_text('[payments_file]\nshows = ["d4 adopted [selected]"]\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"\[payments_file\] needs a `why`"):
        load(path)
