"""Generate realistic schema-2 ledgers for benchmarks: deterministic, valid, sized 1k to 100k.

A generated ledger mixes the three kinds, path/directory/glob/component
scopes over a synthetic source tree, supports formulas, prerequisites,
answers and supersessions (mostly to recent records, some far back), pins,
evidence and rationales. Every ledger is checked by the core's validator
before it is written.

    python bench/gen.py 10000 -o bench/out/ledger-10k.jsonl [--seed 7]
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from docket_git.ledger import canonical, store

AREAS = ["api", "billing", "auth", "storage", "search", "ui", "infra", "jobs", "reports", "sync"]
MODULES = ["core", "models", "views", "cache", "client", "handlers", "schema", "utils", "tasks", "config"]
WORD_TEXT = (
    "cache invalidation retry idempotency key token session queue worker timeout latency schema "
    "migration index shard replica lock lease batch stream event webhook payload quota limit "
    "backoff checksum encryption rotation audit export import tenant region failover snapshot "
    "rollback deploy flag rollout metric alert budget page render hydrate prefetch cursor offset"
)
WORDS = WORD_TEXT.split()
RARE = ["zephyr", "quokka", "basalt", "tamarind", "obsidian", "marlin", "juniper", "cobalt"]
AUTHORS = ["claude", "codex", "gemini", "alice", "bob"]
BRANCHES = ["main", "main", "main", "feature/search", "fix/billing"]


#: Files in the synthetic source tree by default: 10 areas of 10 modules (about 150 distinct scope strings).
FILES = 100


def modules(files: int = FILES) -> list[str]:
    """The module names of each area in a tree of about ``files`` files (MODULES, then mod10, mod11, ...)."""
    return MODULES + [f"mod{i}" for i in range(len(MODULES), files // len(AREAS))]


def source_files(files: int = FILES) -> list[str]:
    """The synthetic source tree that scopes point into (and the bench repositories contain)."""
    return [f"src/{a}/{m}.py" for a in AREAS for m in modules(files)]


def _scope(rng: random.Random, mods: list[str]) -> list[str]:
    roll = rng.random()
    area, module = rng.choice(AREAS), rng.choice(mods)
    if roll < 0.40:
        return [f"src/{area}/{module}.py"]
    if roll < 0.62:
        return [f"src/{area}/"]
    if roll < 0.74:
        return [rng.choice([f"src/{area}/**", f"src/{area}/*.py", f"src/*/{module}.py"])]
    if roll < 0.84:
        return [area]
    if roll < 0.90:
        return [f"src/{area}/{module}.py", f"src/{rng.choice(AREAS)}/"]
    return []


def _sentence(rng: random.Random, lo: int, hi: int) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(lo, hi))]
    if rng.random() < 0.05:
        words.insert(rng.randrange(len(words)), rng.choice(RARE))
    text = " ".join(words)
    return text[0].upper() + text[1:]


def _pick(rng: random.Random, pool: list[str], count: int) -> list[str]:
    """Mostly recent targets, sometimes far back; distinct, in pick order."""
    out: dict[str, None] = {}
    for _ in range(count * 3):
        if len(out) >= count or not pool:
            break
        recent = rng.random() < 0.8
        ref = pool[-1 - min(len(pool) - 1, int(rng.expovariate(1 / 30)))] if recent else rng.choice(pool)
        out.setdefault(ref, None)
    return list(out)


def generate(n: int, seed: int = 7, files: int = FILES) -> list[dict]:
    """n valid schema-2 records, the same for the same (n, seed, files).

    ``files``: the source tree's size; a larger tree spreads the same scope shapes over more distinct
    scope strings (a structure kept per scope string shows its cost only there)."""
    mods = modules(files)
    rng = random.Random(seed * 1_000_003 + n)
    records: list[dict] = []
    by_kind: dict[str, list[str]] = {"claim": [], "decision": [], "question": []}
    grounds: list[str] = []  # claims and decisions, in order
    retired: set[str] = set()
    for i in range(1, n + 1):
        roll = rng.random()
        kind = "claim" if roll < 0.5 else ("decision" if roll < 0.8 else "question")
        rid = f"{kind[0]}{i}"
        text = _sentence(rng, 5, 22)
        if kind != "question":
            text = text.rstrip("?")
        else:
            text += "?"
        r: dict = {"schema": 2, "kind": kind, "id": rid, "text": text}
        if kind == "claim":
            r["state"] = rng.choices(["accepted", "unassessed", "disputed", "rejected"], [55, 30, 10, 5])[0]
        elif kind == "decision":
            r["state"] = "adopted" if rng.random() < 0.9 else "revoked"
            r["choice"] = _sentence(rng, 1, 4)
            r["alternatives"] = [_sentence(rng, 1, 3)] if rng.random() < 0.6 else []
            r["decided_by"] = rng.choice(AUTHORS) if rng.random() < 0.3 else ""
        else:
            r["state"] = "open"
        r["ts"] = f"2026-{1 + i * 11 // (n + 1):02d}-{1 + (i * 7) % 28:02d}T{(i // 60) % 24:02d}:{i % 60:02d}:00+00:00"
        r["author"] = rng.choice(AUTHORS)
        r["session"] = f"s{i // 25}"
        r["branch"] = rng.choice(BRANCHES)
        r["scope"] = _scope(rng, mods)
        r["rationale"] = _sentence(rng, 6, 18) if rng.random() < 0.5 else ""
        questions = by_kind["question"]
        r["supports"] = []
        if grounds and kind != "question" and rng.random() < 0.3:
            r["supports"] = [_pick(rng, grounds, rng.randint(1, 2))]
            alternative = _pick(rng, grounds, 1)
            if rng.random() < 0.15 and alternative != r["supports"][0]:
                r["supports"].append(alternative)
        r["depends_on"] = _pick(rng, grounds, rng.randint(1, 3)) if kind == "decision" and rng.random() < 0.4 else []
        r["answers"] = _pick(rng, questions, 1) if kind != "question" and questions and rng.random() < 0.2 else []
        r["supersedes"] = []
        same = by_kind[kind]
        if same and rng.random() < 0.08:
            target = next((t for t in _pick(rng, same, 3) if t not in retired), None)
            if target is not None:
                r["supersedes"] = [target]
                retired.add(target)
        r["evidence"] = [{"ref": f"https://example.com/pr/{i}"}] if rng.random() < 0.1 else []
        r["revisit"] = "after the next release" if rng.random() < 0.03 else ""
        r["cost_if_wrong"] = _sentence(rng, 3, 8) if rng.random() < 0.2 else ""
        r["pinned"] = rng.random() < 0.005
        records.append(r)
        same.append(rid)
        if kind != "question":
            grounds.append(rid)
    return records


def ledger_bytes(records: list[dict]) -> bytes:
    """The ledger file for records, one canonical line each."""
    return b"".join(canonical.line(r) for r in records)


def write(n: int, path: Path, seed: int = 7, files: int = FILES) -> Path:
    """Generate, validate with the core's validator, and write a ledger of n records."""
    data = ledger_bytes(generate(n, seed, files))
    snap = store.parse(path, data)  # raises LedgerError on any fault
    assert len(snap.records) == n
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, help="number of records")
    parser.add_argument("-o", "--out", type=Path, required=True, help="ledger file to write")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--files", type=int, default=FILES, help=f"source files scopes point into (default {FILES})")
    args = parser.parse_args()
    path = write(args.n, args.out, args.seed, args.files)
    print(f"{path}: {args.n} records, {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
