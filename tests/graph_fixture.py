"""A small ledger that exercises every relation the graph draws (shared by the graph, export and browser tests)."""

from __future__ import annotations

from .conftest import Repo, rec


def fixture_records() -> list[dict]:
    """AND/OR supports, a resolved and an open question, a two-step blocked chain, a retired claim, odd text."""
    return [
        rec("c1", "Payments need idempotency keys", state="accepted", scope=["src/pay/"]),
        rec("c2", "Redis is deployed in every region", state="accepted", scope=["infra/"]),
        rec("q3", "Where do retry keys live?", scope=["src/pay/"]),
        rec("c4", "Keys expire after a day", cost_if_wrong="duplicate charges"),
        rec(
            "d5",
            "Keep retry keys in Redis",
            choice="Redis",
            alternatives=["Postgres"],
            supports=[["c1", "c2"], ["c4"]],
            depends_on=["c1"],
            answers=["q3"],
            rationale="TTL expiry is free",
            scope=["src/pay/"],
        ),
        rec("d6", "Expire keys with a TTL", choice="TTL", depends_on=["d5", "c4"]),
        rec("d7", "Retry with exponential backoff", choice="backoff", depends_on=["d6"], scope=["src/pay/retry.py"]),
        rec("c8", 'Postgres "is" faster <b>than</b> Redis & co', state="rejected"),
        rec("c9", "Keys expire after a week", state="accepted", supersedes=["c4"]),
        rec("q10", "Who rotates the keys?", scope=["ops/"]),
    ]


def seed_fixture(repo: Repo) -> list[dict]:
    """Write the fixture ledger into repo and return its records."""
    records = fixture_records()
    repo.write_ledger(records)
    return records
