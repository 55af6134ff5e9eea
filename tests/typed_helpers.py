"""Shared pieces of the typed ledger tests: the seed's declarations as TOML, helpers to run ledger commands."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Repo, Result

SEED_CONFIG = """
[ledgers.history]
type = "log"
schema = { type = "string" }

[ledgers.processed]
type = "set"

[ledgers.repositories]
type = "map"
schema = { type = "object" }

[ledgers.findings]
type = "table"
key = "id"

[ledgers.findings.schema]
type = "object"
required = ["id", "severity"]
properties = { id = { type = "string" }, severity = { type = "string" } }

[ledgers.metrics]
type = "counter"

[ledgers.knowledge]
type = "notes"

[ledgers.audit]
"""


def declare(repo: Repo, text: str = SEED_CONFIG) -> None:
    """Append ledger declarations to the repo's .docket/config.toml."""
    config = repo.path / ".docket" / "config.toml"
    old = config.read_text() if config.exists() else ""
    config.write_text(old + text)


def op(repo: Repo, name: str, operation: dict, *args: str) -> Result:
    """``docket ledger append NAME OPERATION``."""
    return repo.docket("ledger", "append", name, json.dumps(operation), *args)


def ok_op(repo: Repo, name: str, operation: dict, *args: str) -> str:
    """Append one operation that must succeed; its record ID (the first field of the line it prints)."""
    result = op(repo, name, operation, *args)
    assert result.code == 0, result.err
    return result.out.split("\t")[0]


def rows(repo: Repo, name: str, sql: str) -> list[dict]:
    """``docket ledger query NAME SQL --json``."""
    result = repo.docket("ledger", "query", name, sql, "--json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def state(repo: Repo, name: str) -> list[dict]:
    """The ledger's state table."""
    return rows(repo, name, "SELECT * FROM state ORDER BY 1")


def ledger_file(repo: Repo, name: str) -> Path:
    """The typed ledger's JSONL file."""
    return repo.path / ".docket" / "ledgers" / f"{name}.jsonl"


def snapshot(repo: Repo) -> dict[str, bytes]:
    """Every file under .docket (for byte-identical checks after refused input)."""
    base = repo.path / ".docket"
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}
