"""Schema-1 ledgers for the migration tests."""

from __future__ import annotations

import json


def s1(rid: str, state: str, question: str, answer: str = "", **fields) -> dict:
    """A schema-1 record as Docket before 0.8 wrote it."""
    record = {
        "id": rid,
        "ts": f"2025-03-0{int(rid[1:]) % 9 + 1}T10:00:00Z",
        "state": state,
        "question": question,
        "answer": answer,
        "because": [],
        "supersedes": [],
        "cost_if_wrong": "",
        "session": "sess-1",
        "author": "alice",
        "branch": "main",
    }
    record.update(fields)
    return record


def jsonl(records: list[dict]) -> bytes:
    """Records as ledger bytes, one compact line each (as schema-1 Docket wrote them)."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()


def every_shape() -> list[dict]:
    """Every state, both edge fixes, both because forms, depends_on and answers."""
    return [
        s1("d1", "open", "Where do retry keys live?"),
        s1("d2", "settled", "Keep retry keys in Redis", "Redis", because=[], cost_if_wrong="lost retries"),
        s1("d3", "ruled-out", "Do not store retry keys in Postgres", "Not Postgres", because=["d2"]),
        # supersedes a question: becomes an answers edge
        s1("d4", "settled", "Retry keys expire after a day", "24h TTL", supersedes=["d1"], because=["d2", "d3"]),
        # because names a question: edge dropped; OR form (d2) | (d1 AND d3)
        s1("d5", "settled", "Use one Redis for keys and locks", "shared Redis", because=[["d2"], ["d1", "d3"]]),
        s1("d6", "open", "Should locks expire too?", "maybe", because=["d5"]),
        s1("d7", "settled", "Locks expire after a minute", "60s", depends_on=["d5"], answers=["d6"]),
        s1("d8", "settled", "Retry keys expire after an hour", "1h TTL", supersedes=["d4"], because=["d1"]),
    ]
