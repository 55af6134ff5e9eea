"""The hand-written statements of what each golden briefing must show (tests/golden/statements.toml).

A golden's bytes come from the code's own output, so a byte comparison alone only proves the output
did not change. Each statement says, from the rules in docs/context.md and the ledger in cases.py,
which records the briefing must show, in which tier and with which label, and why. `broken` checks
a briefing against its statement; tests/test_context_golden.py and regenerate.py both call it.

Keys of a statement (all but `why` optional):

- `why`: the reasoning, in words, for a reviewer.
- `header`: lines the header (the first paragraph) must hold, exactly.
- `shows`: full-text blocks as `"<id> <state> [<label>]"`, matched against the heading
  `### <id> | <kind> | <state> [<label>]`, in this order (others may sit between them
  unless `exactly = true`, which makes `shows` the whole full-text tier in order).
- `omits`: IDs that have neither a block nor an index entry.
- `index`: IDs the index names (as lines or bare names), in this order.
- `lines`: lines the briefing holds, exactly (a score line, a `blocked:` line, the footer).
- `absent`: substrings the briefing must not hold.
- `max_chars`: the briefing is at most this many characters and ends with a newline.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from ..ctx import indexed

PATH = Path(__file__).resolve().parent / "statements.toml"
KEYS = {"why", "header", "shows", "exactly", "omits", "index", "lines", "absent", "max_chars"}
HEADING = re.compile(r"^### (\S+) \| \S+ \| (\S+) \[([^\]]*)\]$", re.M)


def load(path: Path = PATH) -> dict[str, dict]:
    """Every statement, by golden name; an unknown key or a missing `why` is an error."""
    statements = tomllib.loads(path.read_text(encoding="utf-8"))
    for name, statement in statements.items():
        unknown = set(statement) - KEYS
        if unknown:
            raise ValueError(f"{path.name}: [{name}] has unknown keys {sorted(unknown)}")
        if not str(statement.get("why", "")).strip():
            raise ValueError(f"{path.name}: [{name}] needs a `why`")
    return statements


def _in_order(wanted: list[str], got: list[str]) -> bool:
    """wanted is a subsequence of got."""
    it = iter(got)
    return all(any(w == g for g in it) for w in wanted)


def broken(statement: dict, text: str) -> list[str]:
    """The parts of a statement the briefing text does not satisfy ([] when it holds)."""
    problems: list[str] = []
    heads = [f"{rid} {state} [{label}]" for rid, state, label in HEADING.findall(text)]
    block_ids = [h.split(" ", 1)[0] for h in heads]
    index_ids = indexed(text)
    lines = text.splitlines()
    header = text.split("\n\n", 1)[0].splitlines()
    for line in statement.get("header", []):
        if line not in header:
            problems.append(f"header lacks {line!r}")
    shows = statement.get("shows", [])
    missing = [want for want in shows if want not in heads]
    for want in missing:
        problems.append(f"no full-text block {want!r}")
    if not missing and not _in_order(shows, heads):
        problems.append(f"full-text blocks not in the stated order: {heads}")
    if statement.get("exactly") and heads != shows:
        problems.append(f"the full-text tier is {heads}, stated exactly {shows}")
    for rid in statement.get("omits", []):
        if rid in block_ids or rid in index_ids:
            problems.append(f"{rid} must not be shown, but is in {'full text' if rid in block_ids else 'the index'}")
    want_index = statement.get("index", [])
    for rid in want_index:
        if rid not in index_ids:
            problems.append(f"the index does not name {rid} (it names {index_ids})")
    if not _in_order(want_index, index_ids):
        problems.append(f"the index does not name {want_index} in that order: {index_ids}")
    for line in statement.get("lines", []):
        if line not in lines:
            problems.append(f"no line {line!r}")
    for part in statement.get("absent", []):
        if part in text:
            problems.append(f"holds {part!r}")
    limit = statement.get("max_chars")
    if limit is not None and (len(text) > limit or not text.endswith("\n")):
        problems.append(f"{len(text)} characters, over {limit} or without a final newline")
    return problems
