"""Fixed ledgers and requests whose briefings are kept byte for byte in tests/golden/context/."""

from __future__ import annotations

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
CASES["n60_all_default"] = lambda: brief(related_ledger(60), all=True)
CASES["n60_b512"] = lambda: brief(related_ledger(60), max_chars=512)
CASES["payments_file"] = lambda: brief(payments_ledger(), files=("src/payments/store.py",))
CASES["payments_query"] = lambda: brief(payments_ledger(), query="retry worker")
CASES["payments_unscoped"] = lambda: brief(payments_ledger())
CASES["payments_tuned"] = lambda: brief(payments_ledger(), settings=tuned(weights={"text": 400}), query="redis")
CASES["payments_since_c2"] = lambda: compose_delta(
    snapshot(payments_ledger()), defaults(), payments_ledger()[:2], "c2", identity="repo"
)
