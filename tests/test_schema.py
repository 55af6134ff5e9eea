"""The published JSON Schema agrees with the hand-written validator."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from docket_git.ledger.validate import Invalid, check_line

from .conftest import Repo, rec
from .test_validate import test_line_rules

SCHEMA = json.loads(
    (Path(__file__).resolve().parent.parent / "docket_git" / "schema" / "record-v2.schema.json").read_text()
)
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def test_schema_is_well_formed() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_every_record_the_cli_writes_matches_the_schema(repo: Repo) -> None:
    repo.ok("claim", "A premise", "--state", "accepted", "--scope", "src/", "--evidence", '{"ref":"r","commit":"c"}')
    repo.ok("question", "An inquiry", "--pin")
    repo.ok("decision", "A commitment", "--choice", "x", "--alternative", "y", "--depends-on", "c1", "--answers", "q2")
    for record in repo.records():
        VALIDATOR.validate(record)


# The validator's rejection cases, minus schema-1 lines (a migration matter, not this schema's).
REJECTED = [
    record
    for record, _ in test_line_rules.pytestmark[0].args[1]  # type: ignore[attr-defined]
    if isinstance(record, dict) and "schema" in record and record["schema"] != 1
]


@pytest.mark.parametrize("record", REJECTED)
def test_schema_rejects_what_the_validator_rejects(record: dict) -> None:
    with pytest.raises(Invalid):
        check_line(record)
    assert not VALIDATOR.is_valid(record), record


def test_valid_records_pass_both() -> None:
    for record in (rec("c1"), rec("d2", alternatives=["a"]), rec("q3")):
        check_line(record)
        VALIDATOR.validate(record)
