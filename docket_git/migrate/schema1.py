"""Schema 1, as docket-git reads it: its fields and states, the migration's errors, detection.

A schema-1 line has no ``schema`` field::

    {"id": "dN", "ts", "state": "settled|ruled-out|open", "question", "answer",
     "because", "supersedes", "depends_on", "answers", "cost_if_wrong", ...}

``because`` is a flat ID list (one AND set) or a list of ID lists (OR sets).
``schema_of`` tells which schema a ledger's bytes are in; ``parse`` and
``sources`` read a schema-1 ledger for conversion.
"""

from __future__ import annotations

import json
import re

from docket_git.errors import LedgerError
from docket_git.ledger import model
from docket_git.ledger.jsonl import gc_paused
from docket_git.ledger.validate import OLD_ID_RE

#: Schema-1 state -> (kind, state). ``ruled-out`` stays adopted: it is a live constraint.
DERIVED: dict[str, tuple[str, str]] = {
    "settled": ("decision", "adopted"),
    "ruled-out": ("decision", "adopted"),
    "open": ("question", "open"),
}
HINT = "to classify records by hand, run 'docket migrate --emit-map FILE', edit FILE, then 'docket migrate --map FILE'"
#: Map entry fields a user may set besides kind, state, text and overrides.
OPTIONAL_FIELDS: tuple[str, ...] = (
    "choice",
    "alternatives",
    "decided_by",
    "rationale",
    "scope",
    "revisit",
    "cost_if_wrong",
    "pinned",
    "evidence",
)
#: Read-only notes written beside each emitted entry; ignored when a map is applied.
NOTE_FIELDS: tuple[str, ...] = ("source_state", "source_answer")
ENTRY_FIELDS: frozenset[str] = frozenset(("kind", "state", "text", "overrides", *OPTIONAL_FIELDS, *NOTE_FIELDS))
#: Fields carried over from the schema-1 line when the map does not set them.
CARRIED: dict[str, object] = {"scope": [], "revisit": "", "cost_if_wrong": "", "pinned": False, "evidence": []}
RELATION_NAMES: frozenset[str] = frozenset(model.RELATIONS)
PROVENANCE: tuple[str, ...] = ("ts", "author", "session", "branch")
SOURCE_RELATIONS: tuple[str, ...] = ("because", "depends_on", "answers", "supersedes")
MAX_LISTED = 50


class MigrationError(LedgerError):
    """The migration stops and writes nothing; ``messages`` name every problem found."""

    exit_code = 2

    def __init__(self, messages: list[str], *, hint: bool = False) -> None:
        if len(messages) > MAX_LISTED:
            messages = [*messages[:MAX_LISTED], f"... and {len(messages) - MAX_LISTED} more"]
        super().__init__("\n".join(messages))
        self.messages = messages
        self.hint = hint


class MixedSchemas(MigrationError):
    """Lines of more than one schema in one ledger."""


class BackupConflict(LedgerError):
    """A different ``.schema1`` backup exists; migrating again would overwrite the original."""


# -- reading ---------------------------------------------------------------------


def _by_number(ids: list[str]) -> list[str]:
    return sorted(ids, key=lambda rid: (len(rid), rid))


def _line_schema(number: int, record: object) -> int:
    if not isinstance(record, dict):
        raise MigrationError([f"malformed input at line {number}: each JSONL line must be an object"])
    if "schema" not in record:
        return 1
    schema = record["schema"]
    if type(schema) is not int or schema < 1:
        raise MigrationError([f"malformed input at line {number}: schema must be a positive integer"])
    return schema


def parse(data: bytes) -> tuple[int | None, list[tuple[int, dict]]]:
    """The ledger's schema (None when it holds no record) and its (line number, record) pairs.

    Raises ``MigrationError`` for a line that is not a JSON object and
    ``MixedSchemas`` when lines of different schemas share the file.
    """
    with gc_paused():
        return _parse(data)


def _parse(data: bytes) -> tuple[int | None, list[tuple[int, dict]]]:
    out: list[tuple[int, dict]] = []
    schemas: dict[int, int] = {}
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except UnicodeDecodeError as exc:
            raise MigrationError([f"malformed input at line {number}: not UTF-8 ({exc.reason})"]) from None
        except ValueError as exc:
            reason = getattr(exc, "msg", str(exc))
            raise MigrationError([f"malformed input at line {number}: invalid JSON: {reason}"]) from None
        schemas.setdefault(_line_schema(number, record), number)
        out.append((number, record))
    if len(schemas) > 1:
        names = ", ".join(str(s) for s in sorted(schemas))
        raise MixedSchemas([f"mixed schema versions in one ledger: {names}"], hint=1 in schemas)
    return (next(iter(schemas)) if schemas else None), out


_CANONICAL_SCHEMA = re.compile(rb'\{"schema":([1-9][0-9]*),"')


def _schema_of_line(number: int, raw: bytes) -> int:
    # Fast paths that never misread a line: a canonical schema-N line starts with its
    # schema field; a line with no "schema" text and no escape cannot hold that key.
    found = _CANONICAL_SCHEMA.match(raw)
    if found and raw.count(b'"schema"') == 1:
        return int(found.group(1))
    if b'"schema"' not in raw and b"\\" not in raw and raw.lstrip().startswith(b"{"):
        return 1
    try:
        record = json.loads(raw)
    except ValueError as exc:
        reason = getattr(exc, "msg", str(exc))
        raise MigrationError([f"malformed input at line {number}: invalid JSON: {reason}"]) from None
    return _line_schema(number, record)


def schema_of(data: bytes) -> int | None:
    """1 for a schema-1 ledger, 2 for schema 2 (N for N), None when it holds no record.

    Raises ``MixedSchemas`` (a ``MigrationError``) for a mix of schemas. This reads
    only as much of each line as it needs to tell its schema: it is no validator
    (a malformed line is refused only where it had to be parsed).
    """
    schemas: dict[int, int] = {}
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if raw.strip():
            schemas.setdefault(_schema_of_line(number, raw), number)
    if len(schemas) > 1:
        names = ", ".join(str(s) for s in sorted(schemas))
        raise MixedSchemas([f"mixed schema versions in one ledger: {names}"], hint=1 in schemas)
    return next(iter(schemas)) if schemas else None


def sources(lines: list[tuple[int, dict]]) -> list[dict]:
    """The schema-1 records, checked for well-formed, unique old IDs and field types."""
    errors: list[str] = []
    seen: dict[str, int] = {}
    out: list[dict] = []
    for number, record in lines:
        rid = record.get("id")
        if not isinstance(rid, str) or not OLD_ID_RE.match(rid):
            errors.append(f"malformed input at line {number}: invalid old id {json.dumps(rid)}; schema-1 ids are dN")
            continue
        if rid in seen:
            errors.append(f"malformed input at line {number}: duplicate old id {rid} (first on line {seen[rid]})")
            continue
        seen[rid] = number
        problem = _source_problem(record)
        if problem:
            errors.append(f"malformed input at line {number}: {rid} {problem}")
            continue
        out.append(record)
    if errors:
        raise MigrationError(errors, hint=True)
    return out


def _source_problem(record: dict) -> str | None:
    if not isinstance(record.get("state"), str):
        return "has no state string"
    for name in ("question", "answer"):
        if name in record and not isinstance(record[name], str):
            return f"{name} must be a string"
    for name in SOURCE_RELATIONS:
        if name in record and not isinstance(record[name], list):
            return f"{name} must be a list"
    for name in ("depends_on", "answers", "supersedes"):
        if not all(isinstance(ref, str) and ref for ref in record.get(name, ())):
            return f"{name} must be a list of ids"
    return None
