"""``--strict``: where gh-aw's own projection of a typed ledger would fail, with gh-aw's message.

docket skips an invalid operation and lists it as a diagnostic; gh-aw fails the whole projection
(the reference, section 4). ``docket ledger query/check --strict`` (and ``strict = true`` in a
ledger's declaration) ask this module whether gh-aw would fail, and why.
"""

from __future__ import annotations

from pathlib import Path

import docket_git.typed.write as write
from docket_git.ledger.store import LedgerError
from docket_git.typed.api import line_name, query
from docket_git.typed.declare import Ledger

#: gh-aw's error text for each operation docket skips, found by docket's own wording (the reference,
#: section 5); an operation docket refuses in words not listed here fails with docket's detail.
GH_AW_ERRORS = (
    ("already exists; use update or upsert", "Table key already exists"),
    ("does not exist; insert it first", "Table key does not exist"),
    ("would leave the safe integer range", "Counter exceeds safe integer range"),
    ("the vote references a missing note", "Vote references a missing note"),
    ("larger than one replay cell", "Replay cell exceeds size limit"),
    ("duplicate note record ID", "Duplicate note record ID"),
    ("does not match the schema of ledger", "Ledger value does not match schema"),
    ("must be an object with a string primary key", "Table row must contain a string primary key"),
    ("patch must", "Table patch must be an object without the primary key"),
    ("amount must be a nonnegative safe integer", "Counter requires a nonnegative safe integer amount and a name"),
    ("name must be a nonempty string", "Counter requires a nonnegative safe integer amount and a name"),
    ("key must be a string", "Ledger key must be a string"),
    ("unknown field", "Invalid ledger operation fields"),
    ("needs the field", "Invalid ledger operation fields"),
    ("operation must be one of", "Unsupported ledger operation"),
)
#: What gh-aw's projection says when reconstructing the history gave any diagnostic.
GH_AW_INVALID_HISTORY = "Ledger branch contains invalid canonical records"


def strict_failure(root: Path, ledger: Ledger) -> str | None:
    """Why gh-aw's projection of this ledger would fail (its message, then where), or None when it would not.

    gh-aw never skips (the reference, section 4): any diagnostic of reading and ordering the records
    fails it with one message; otherwise the first operation that fails in its replay order (notes
    before votes, each in canonical order) fails it with the reducer's message.
    """
    found = query(
        root,
        ledger,
        "SELECT d.code, d.line, d.id, d.detail, r.ordinal, "
        "(r.type = 'vote' OR (r.type = 'ledger_append' AND json_extract(r.payload, '$.operation') = 'vote')) "
        "FROM diagnostics d LEFT JOIN records r ON r.line = d.line AND d.code = 'invalid-operation' "
        "ORDER BY d.code = 'invalid-operation', 6, r.ordinal, d.line",
    )[1]
    if not found or found[0][0] == "invalid-operation":  # gh-aw refuses these before any operation
        older = _older_records_gh_aw_refuses(root, ledger)
        if older:
            return older

    if not found:
        return None
    code, line, rid, detail, _, _ = found[0]
    where = line_name(root, ledger)(line) if line else "the ledger"
    if code != "invalid-operation":
        return f"{GH_AW_INVALID_HISTORY} ({where}: {code}: {detail})"
    text = next((gh for ours, gh in GH_AW_ERRORS if ours in detail), None)
    detail = detail.removesuffix("; skipped")
    return f"{text} ({where}, {rid}: {detail})" if text else f"{detail} ({where}, {rid})"


def _older_records_gh_aw_refuses(root: Path, ledger: Ledger) -> str | None:
    """What gh-aw refuses in docket's older records, which docket still replays: more than 64 parents
    (an ``invalid-envelope`` to gh-aw), and a note whose citations hold docket's pins then kept there
    (gh-aw's citation check allows no other keys; it is reported before any later failing operation)."""
    over = query(
        root,
        ledger,
        f"SELECT r.line, r.id, count(*) FROM parents p JOIN records r ON r.sha = p.child_sha "
        f"GROUP BY p.child_sha HAVING count(*) > {write.MAX_PARENTS} ORDER BY r.line LIMIT 1",
    )[1]
    if over:
        line, rid, count = over[0]
        return (
            f"{GH_AW_INVALID_HISTORY} (line {line}: invalid-envelope: record {rid} of docket's older format names "
            f"{count} parents, gh-aw's limit is {write.MAX_PARENTS})"
        )
    if ledger.type != "notes":
        return None
    pinned = query(
        root,
        ledger,
        "SELECT r.line, r.id FROM records r, json_each(r.payload, '$.citations') c WHERE r.type = 'note' "
        "AND (json_type(c.value, '$.commit') IS NOT NULL OR json_type(c.value, '$.content_sha256') IS NOT NULL) "
        "ORDER BY r.ordinal LIMIT 1",
    )[1]
    if pinned:
        line, rid = pinned[0]
        return (
            f"a note gh-aw's citation check refuses (line {line}, {rid}: docket's older format kept the pins, "
            f"commit and content_sha256, in the citations, and gh-aw allows only type, path, start_line, end_line)"
        )
    return None


def strict_error(root: Path, ledger: Ledger) -> LedgerError | None:
    """The refusal ``--strict`` gives for this ledger, or None when gh-aw's projection would succeed."""
    why = strict_failure(root, ledger)
    if why is None:
        return None
    return LedgerError(
        f"ledger '{ledger.name}' fails under --strict, where gh-aw's projection fails: {why}; "
        f"'docket ledger check {ledger.name}' lists every diagnostic"
    )
