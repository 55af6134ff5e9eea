"""Fixed ledgers and requests whose briefings are kept byte for byte in tests/golden/context/."""

from __future__ import annotations

import random
from collections.abc import Callable

from docket_git.context import compose_delta
from docket_git.context.config import defaults

from ..conftest import rec
from ..ctx import brief, module_ledger, snapshot, tuned


def related_ledger(n: int) -> list[dict]:
    """The module ledger with relations: a blocked chain, grounds, an answer, a pin, a supersession."""
    records = module_ledger(n)
    by_id = {r["id"]: r for r in records}

    def edit(rid: str, **fields: object) -> None:
        if rid in by_id:
            by_id[rid].update(fields)

    edit("c1", state="accepted")
    edit("c6", state="accepted")
    edit("c9", pinned=True, rationale="Pinned because every change touches it")
    edit("d13", supports=[["c6", "c11"]])
    edit("c14", state="accepted", answers=["q12"], evidence=[{"ref": "docs/adr/0014.md"}])
    edit("d18", depends_on=["c1", "c16"], supports=[["c1"], ["c6"]])
    edit("c29", supersedes=["c24"], rationale="Module 24 merged into 29")
    edit("d53", depends_on=["c4"])
    edit("d58", depends_on=["d53", "c6"], cost_if_wrong="Module 58 ships without its guard")
    return records


def payments_ledger() -> list[dict]:
    """A small realistic ledger: premises, a resolved question, a decision and its history."""
    return [
        rec(
            "c1",
            "The payments API requires an idempotency key on every POST",
            state="accepted",
            scope=["src/payments/"],
            rationale="Stated in the provider's API guide",
            evidence=[{"ref": "https://example.com/provider/api#idempotency", "checked_at": "2026-01-02"}],
        ),
        rec("q2", "Where do we keep idempotency keys between retries?", scope=["src/payments/"]),
        rec(
            "d3",
            "Keep idempotency keys in Postgres",
            choice="Postgres",
            alternatives=["Redis"],
            depends_on=["c1"],
            scope=["src/payments/store.py"],
        ),
        rec(
            "d4",
            "Keep idempotency keys in Redis with a 24 h TTL",
            choice="Redis",
            alternatives=["Postgres"],
            depends_on=["c1"],
            answers=["q2"],
            supersedes=["d3"],
            scope=["src/payments/store.py"],
            rationale="Keys are short-lived; TTL expiry is free in Redis",
            cost_if_wrong="Duplicate charges on retry",
            decided_by="alice",
        ),
        rec("c5", "Redis in staging is not yet provisioned", scope=["infra"]),
        rec("d6", "Run the retry worker against Redis", choice="Redis worker", depends_on=["d4", "c5"]),
        rec("c7", "Docs live in docs/", scope=["docs/"], pinned=True),
    ]


WORDS = [
    "cache",
    "invalidation",
    "retry",
    "idempotency",
    "key",
    "token",
    "session",
    "queue",
    "worker",
    "timeout",
    "latency",
    "schema",
    "migration",
    "index",
    "shard",
    "replica",
    "lock",
    "lease",
    "batch",
    "stream",
    "event",
    "webhook",
    "payload",
    "quota",
    "limit",
    "backoff",
    "checksum",
    "encryption",
    "rotation",
]


def bench_like_ledger(n: int, seed: int = 15) -> list[dict]:
    """A bench/gen.py-like ledger: mixed kinds and states, long texts, relations, retirements, a few pins.

    Its own small generator (not bench/gen.py), so tuning the benchmarks never moves these goldens.
    """
    rng = random.Random(seed)
    records: list[dict] = []
    grounds: list[str] = []
    questions: list[str] = []
    live: dict[str, list[str]] = {"c": [], "d": [], "q": []}

    def sentence(lo: int, hi: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi))).capitalize()

    def recent(pool: list[str]) -> str:
        return pool[-1 - min(len(pool) - 1, int(rng.expovariate(1 / 20)))]

    for i in range(1, n + 1):
        roll = rng.random()
        prefix = "c" if roll < 0.5 else ("d" if roll < 0.8 else "q")
        rid = f"{prefix}{i}"
        fields: dict = {"ts": f"2026-10-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00+00:00", "author": "bench"}
        if prefix == "c":
            fields["state"] = rng.choice(["accepted", "accepted", "unassessed", "disputed"])
        if prefix == "d":
            fields["choice"] = f"option {i}"
            fields["alternatives"] = [f"option {i}b"] if rng.random() < 0.5 else []
            if grounds and rng.random() < 0.4:
                fields["depends_on"] = sorted({recent(grounds) for _ in range(rng.randint(1, 2))})
        if prefix != "q" and grounds and rng.random() < 0.3:
            fields["supports"] = [sorted({recent(grounds) for _ in range(rng.randint(1, 2))})]
        if prefix != "q" and questions and rng.random() < 0.2:
            fields["answers"] = [recent(questions)]
        if live[prefix] and rng.random() < 0.08:
            target = recent(live[prefix])
            live[prefix].remove(target)
            fields["supersedes"] = [target]
        if rng.random() < 0.5:
            fields["rationale"] = sentence(6, 16)
        if rng.random() < 0.5:
            fields["scope"] = [f"src/{rng.choice(WORDS)}/"]
        fields["pinned"] = rng.random() < 0.01
        text = sentence(5, 20) + ("?" if prefix == "q" else "")
        records.append(rec(rid, text, **fields))
        live[prefix].append(rid)
        (questions if prefix == "q" else grounds).append(rid)
    return records


def _module_case(n: int, query: str, files: bool, budget: int) -> Callable[[], str]:
    def make() -> str:
        return brief(
            related_ledger(n),
            query=query,
            files=("lib/mod3/cache.py",) if files else (),
            max_chars=budget,
        )

    return make


CASES: dict[str, Callable[[], str]] = {}
for n in (5, 60):
    for query in ("", "module 3"):
        for files in (False, True):
            for budget in (900, 8000):
                key = f"n{n}_q{'none' if not query else 'module3'}_f{'yes' if files else 'no'}_b{budget}"
                CASES[key] = _module_case(n, query, files, budget)
# A tight ceiling on a large unscoped ledger keeps its best records in full (issue 15).
for budget in (1000, 2000, 3000, 4000):
    CASES[f"n300_unscoped_b{budget}"] = lambda budget=budget: brief(bench_like_ledger(300), max_chars=budget)
CASES["n60_all_default"] = lambda: brief(related_ledger(60), all=True)
CASES["n60_b512"] = lambda: brief(related_ledger(60), max_chars=512)
CASES["payments_file"] = lambda: brief(payments_ledger(), files=("src/payments/store.py",))
CASES["payments_query"] = lambda: brief(payments_ledger(), query="retry worker")
CASES["payments_unscoped"] = lambda: brief(payments_ledger())
CASES["payments_tuned"] = lambda: brief(payments_ledger(), settings=tuned(weights={"text": 400}), query="redis")
CASES["payments_since_c2"] = lambda: compose_delta(
    snapshot(payments_ledger()), defaults(), payments_ledger()[:2], "c2", identity="repo"
)
