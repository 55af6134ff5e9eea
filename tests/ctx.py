"""Helpers for briefing tests: ledgers built in memory, briefings composed without files."""

from __future__ import annotations

import re
from pathlib import Path

from docket_git.context import Request, compose
from docket_git.context.config import Settings, defaults, merge
from docket_git.ledger import canonical, store

from .conftest import rec

BLOCK_RE = re.compile(r"^### (\S+) \| ", re.M)
INDEX_LINE_RE = re.compile(r"^([cdq]\d+) (claim|decision|question) (\S+)  ", re.M)


def module_ledger(n: int) -> list[dict]:
    """Docket's golden ledger shape: c1, q2, d3, c4, q5, ... each scoped lib/modK/**."""
    kinds = "cqdcq"
    out = []
    for i in range(1, n + 1):
        rid = f"{kinds[(i - 1) % 5]}{i}"
        out.append(
            rec(
                rid,
                f"Record {rid} about module {i}",
                scope=[f"lib/mod{i}/**"],
                ts=f"2026-09-12T00:{i // 60:02d}:{i % 60:02d}Z",
                session="test-session",
                branch="main",
            )
        )
    return out


def snapshot(records: list[dict]) -> store.Snapshot:
    """A validated snapshot of records written as canonical ledger lines."""
    data = b"".join(canonical.line(r) for r in records)
    return store.parse(Path("repo/.docket/ledger.jsonl"), data)


def brief(records: list[dict], *, settings: Settings | None = None, **request) -> str:
    """The briefing for records, identity "repo"."""
    if "files" in request:
        request["files"] = tuple(request["files"])
    return compose(snapshot(records), settings or defaults(), Request(**request), identity="repo")


def tuned(**sections: dict) -> Settings:
    """Settings with overrides, validated as a config file's would be."""
    return merge(sections)


def blocks(text: str) -> list[str]:
    """IDs of the full-text blocks, in order."""
    return BLOCK_RE.findall(text)


def index_section(text: str) -> str:
    """The index tier's text (from its first line to the blank line after it)."""
    m = re.search(r"^# index: .*?(?=\n\n)", text, re.M | re.S)
    return m.group(0) if m else ""


def indexed(text: str) -> list[str]:
    """IDs the index tier names, as lines or bare names, in order."""
    section = index_section(text)
    ids = INDEX_LINE_RE.findall(section)
    out = [m[0] for m in ids]
    for line in section.splitlines():
        for lead in ("# index: ", "# also: "):
            if line.startswith(lead) and re.fullmatch(r"[cdq]\d+(, [cdq]\d+)*", line[len(lead) :]):
                out.extend(line[len(lead) :].split(", "))
    return out


def block_text(text: str, rid: str) -> str:
    """One block's text."""
    m = re.search(rf"^### {re.escape(rid)} \|.*?(?=\n\n|\Z)", text, re.M | re.S)
    assert m, f"no block for {rid}"
    return m.group(0)
