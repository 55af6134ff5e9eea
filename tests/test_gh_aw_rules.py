"""gh-aw's limits and rules where the typed-ledger seed is silent, each from the reference's wording.

Reference: ../shared/reference/gh-aw-ledger-records.md, section 5 ("Operation validation and limits").
"""

from __future__ import annotations

import json

import pytest

from .conftest import Repo
from .typed_helpers import declare, ok_op, op, rows


@pytest.fixture
def typed(repo: Repo) -> Repo:
    declare(repo)
    (repo.path / "src.py").write_text("".join(f"line {i}\n" for i in range(1, 21)))
    return repo


def note(subject: str = "s", text: str = "n", reason: str = "r", citations: list | None = None) -> dict:
    cites = citations if citations is not None else [{"type": "repository", "path": "src.py", "start_line": 2}]
    return {"operation": "note", "subject": subject, "note": text, "reason": reason, "citations": cites}


def refused(repo: Repo, name: str, operation: dict, words: str) -> None:
    ledger = repo.path / ".docket" / "ledgers" / f"{name}.jsonl"
    before = ledger.read_bytes() if ledger.exists() else None
    result = op(repo, name, operation)
    assert result.code == 1, result.out
    assert result.err.startswith("docket: ") and words in result.err, result.err
    assert (ledger.read_bytes() if ledger.exists() else None) == before


def test_subject_is_at_most_512_bytes_not_characters(typed: Repo) -> None:
    """'subject ≤ 512 bytes and note ≤ 4096 bytes': 300 'é' are 300 characters but 600 bytes."""
    refused(typed, "knowledge", note(subject="é" * 300), "subject is longer than 512 bytes")
    ok_op(typed, "knowledge", note(subject="s" * 512))


def test_note_is_at_most_4096_bytes_not_characters(typed: Repo) -> None:
    refused(typed, "knowledge", note(text="é" * 2100), "note is longer than 4096 bytes")
    ok_op(typed, "knowledge", note(text="é" * 2048))


def test_reason_is_counted_in_code_points(typed: Repo) -> None:
    """'reason nonempty after trim and ≤ 1024 code points': 1024 'é' (2,048 bytes) pass, 1025 do not."""
    ok_op(typed, "knowledge", note(reason="é" * 1024))
    refused(typed, "knowledge", note(reason="é" * 1025), "reason is longer than 1024 characters")


def test_a_record_is_at_most_32_kib(typed: Repo) -> None:
    """'one record: JSON.stringify(record incl. id) ≤ max_record_kb KiB' (default 32)."""
    refused(typed, "history", {"operation": "append", "value": "x" * 32_700}, "limit (and docket's) is 32768")
    ok_op(typed, "history", {"operation": "append", "value": "x" * 32_600})


def test_a_table_row_is_at_most_one_replay_cell(typed: Repo) -> None:
    """'the resulting row ... must be ≤ 65536 canonical bytes ("Replay cell exceeds size limit")'."""
    ok_op(typed, "findings", {"operation": "insert", "value": {"id": "f1", "severity": "low", "a": "x" * 30_000}})
    ok_op(typed, "findings", {"operation": "update", "key": "f1", "patch": {"b": "y" * 30_000}})
    refused(
        typed, "findings", {"operation": "update", "key": "f1", "patch": {"c": "z" * 6_000}}, "larger than one replay"
    )
    assert len(rows(typed, "findings", "SELECT value FROM state")[0]["value"]) < 65_536


def test_a_counter_name_must_be_nonempty(typed: Repo) -> None:
    """'name a nonempty string'."""
    refused(typed, "metrics", {"operation": "increment", "name": "", "amount": 1}, "name must be a nonempty string")


def test_a_citation_with_only_an_end_line_is_accepted_as_gh_aw_accepts_it(typed: Repo) -> None:
    """'end_line ≥ start_line is checked only when both are present: an end_line alone is valid'."""
    ok_op(typed, "knowledge", note(citations=[{"type": "repository", "path": "src.py", "end_line": 3}]))
    got = rows(typed, "knowledge", "SELECT start_line, end_line FROM note_citations")
    assert got == [{"start_line": None, "end_line": 3}]
    verified = typed.docket("ledger", "verify", "knowledge")
    assert verified.code == 0, verified.err
    assert "src.py:1-3" in verified.out and "None" not in verified.out


def test_cite_with_one_line_stores_a_start_only_citation(typed: Repo) -> None:
    result = typed.docket(
        "ledger", "note-add", "knowledge", "--subject", "s", "--note", "n", "--reason", "r", "--cite", "src.py:5"
    )
    assert result.code == 0, result.err
    got = rows(typed, "knowledge", "SELECT start_line, end_line FROM note_citations")
    assert got == [{"start_line": 5, "end_line": None}]
    verified = typed.docket("ledger", "verify", "knowledge")
    assert "src.py:5\t" in verified.out or verified.out.rstrip().endswith("src.py:5"), verified.out
    assert "None" not in verified.out
    (typed.path / "src.py").write_text("".join(f"line {i}\n" for i in range(1, 21)).replace("line 5\n", "five\n"))
    assert "changed" in typed.docket("ledger", "verify", "knowledge").out


@pytest.mark.parametrize("combinator", ["oneOf", "anyOf"])
def test_a_combinator_beside_other_keywords_is_refused(repo: Repo, combinator: str) -> None:
    """'compileSchema ... refuses oneOf/anyOf next to other keys'."""
    schema = {"type": "object", combinator: [{"required": ["a"]}, {"required": ["b"]}]}
    declare(repo, f'\n[ledgers.shapes]\ntype = "log"\nschema = {json.dumps(schema).replace(":", " =")}\n')
    result = op(repo, "shapes", {"operation": "append", "value": {"a": 1}})
    assert result.code == 1
    assert f"{combinator} cannot stand beside other keywords (type)" in result.err, result.err
