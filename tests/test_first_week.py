"""Issue 31: the first week of a new user and of a Docket user moving over, without a rough edge."""

from __future__ import annotations

import json

import pytest

from docket_git.ledger import model, validate

from .conftest import Repo, rec


def _migrated(rid: str, overrides: object) -> dict:
    """A record as a schema-1 migration leaves it, with ``overrides`` in the shape given."""
    record = rec(rid)
    record["legacy"] = {
        "source_id": "d" + rid[1:],
        "raw": {"id": "d" + rid[1:], "question": record["text"]},
        "relation_map": {
            **{k: [] for k in validate.LEGACY_SOURCE_KEYS},
            **{f"mapped_{r}": record.get(r, []) for r in model.RELATIONS},
            "overrides": overrides,
        },
    }
    return record


# -- 1: a ledger Docket's migrator wrote (overrides as a sorted list) ---------------------------------------


@pytest.mark.parametrize("overrides", [[], ["supersedes"], ["answers", "supports"], {}, {"supersedes": []}])
def test_both_shapes_of_legacy_overrides_pass_every_path(overrides: object) -> None:
    record = _migrated("d1", overrides)
    text = json.dumps(record)
    assert validate.check_line(json.loads(text)) == "d1"
    assert validate.quick_accept(json.loads(text), text, validate.Index(), 1)


@pytest.mark.parametrize("overrides", [["supports", "answers"], ["supports", "supports"], ["because"], [1], "x"])
def test_a_list_of_overrides_is_docket_s_sorted_relation_names_only(overrides: object) -> None:
    with pytest.raises(validate.Invalid, match="sorted list of relation names"):
        validate.check_line(_migrated("d1", overrides))
    text = json.dumps(_migrated("d1", overrides))
    assert not validate.quick_accept(json.loads(text), text, validate.Index(), 1)


def test_a_ledger_docket_migrated_reads_checks_and_rebases_byte_for_byte(repo: Repo) -> None:
    data = repo.write_ledger([_migrated("d1", []), _migrated("d2", ["supports"])])
    assert "d1" in repo.ok("list").out
    repo.ok("check")
    assert "record d2" in repo.ok("context").out
    other = repo.path.parent / "other.jsonl"
    other.write_bytes(data + (json.dumps(rec("c3")) + "\n").encode())
    repo.ok("rebase", str(other))
    assert repo.ledger.read_bytes().startswith(data)
    assert repo.records()[-1]["id"] == "c3"


# -- 3: the version line, bare docket, an unknown command ---------------------------------------------------


def test_version_keeps_docket_first_and_bare_docket_prints_help(repo: Repo) -> None:
    for args in (["--version"], ["--version", "list"]):  # the entry point and Typer
        assert repo.ok(*args).out.split()[:2] == ["docket", "0.1.0"]
    bare = repo.docket()
    assert bare.code == 0 and bare.out.startswith("Usage: docket [OPTIONS] COMMAND") and bare.err == ""
    assert "context" in bare.out
    unknown = repo.docket("nosuch")
    assert unknown.code == 2 and unknown.err.startswith("docket: no such command 'nosuch'") and unknown.out == ""
