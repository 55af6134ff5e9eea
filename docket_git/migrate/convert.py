"""Schema 1 -> 2: classification map, conversion, edge fixes; and the safe file swap.

The conversion is a pure function of the schema-1 bytes and the map: it never
reads the clock, the user, the branch or the machine, so two clones that
migrate the same ledger write the same bytes (which is what lets the merge
driver and the pre-commit check recognise a migration, see ``is_migration_of``).

A schema-1 line has no ``schema`` field::

    {"id": "dN", "ts", "state": "settled|ruled-out|open", "question", "answer",
     "because", "supersedes", "depends_on", "answers", "cost_if_wrong", ...}

``because`` is a flat ID list (one AND set) or a list of ID lists (OR sets).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from docket_git.ledger import model
from docket_git.ledger.store import LedgerError
from docket_git.ledger.validate import OLD_ID_RE, Index, Invalid, check_line

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
CRASH_ENV = "DOCKET_TEST_CRASH_AFTER"


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


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block (migration builds no cycles)."""
    # Building 100k records makes millions of containers and none of them cycles:
    # the cyclic collector would rescan them all repeatedly (over a second in total).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


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


# -- the classification map ------------------------------------------------------------


def derive_map(records: list[dict]) -> tuple[dict[str, dict], list[str]]:
    """The classification map derived from the schema-1 state alone, and the problems.

    A record the derivation cannot classify gets a placeholder entry (kind and
    state null) and a problem naming it; the map is complete either way.
    """
    entries: dict[str, dict] = {}
    unknown: dict[str, list[str]] = {}
    problems: list[str] = []
    for record in records:
        rid = record["id"]
        state = record["state"]
        text = record.get("question", "")
        answer = record.get("answer", "")
        entry: dict = {"kind": None, "state": None, "text": text, "overrides": {}}
        entry["source_state"] = state
        entry["source_answer"] = answer
        if state not in DERIVED:
            unknown.setdefault(state, []).append(rid)
        elif not text.strip():
            problems.append(f"{rid} has an empty question, so no text can be derived")
        elif DERIVED[state][0] == "decision" and not answer.strip():
            problems.append(f"{rid} is {state} with an empty answer, so no choice can be derived")
        else:
            entry["kind"], entry["state"] = DERIVED[state]
        entries[rid] = entry
    head = [f"unrecognised schema-1 state(s) {state}: {', '.join(ids)}" for state, ids in unknown.items()]
    return entries, head + problems


def dump_map(entries: dict[str, dict]) -> bytes:
    """The map as written by ``--emit-map``: indent 2, sorted keys, UTF-8."""
    return (json.dumps(entries, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def placeholders(entries: dict[str, dict]) -> list[str]:
    """Old IDs whose entry still has a null kind or state."""
    return _by_number(
        [rid for rid, e in entries.items() if isinstance(e, dict) and (e.get("kind") is None or e.get("state") is None)]
    )


def _check_ids(where: str, value: object, known: dict[str, dict], *, nested: bool) -> tuple[str | None, list[str]]:
    groups = value if nested else [value]
    if not isinstance(value, list) or not all(
        isinstance(g, list) and all(isinstance(r, str) and r for r in g) and (g or not nested) for g in groups
    ):
        shape = "a list of non-empty old-id lists" if nested else "a list of old ids"
        return f"{where} must be {shape}", []
    return None, [r for g in groups for r in g if r not in known]


def check_map(records: list[dict], entries: object) -> None:
    """Refuse a map that is not complete and valid for these records, naming every problem."""
    if not isinstance(entries, dict):
        raise MigrationError(["the map must be a JSON object keyed by old id"])
    known = {r["id"]: r for r in records}
    errors: list[str] = []
    missing = [rid for rid in known if rid not in entries]
    if missing:
        errors.append(f"missing mapping for old id(s): {', '.join(_by_number(missing))}")
    extra = [rid for rid in entries if rid not in known]
    if extra:
        errors.append(f"mapping contains unknown old id(s): {', '.join(_by_number(extra))}")
    unfilled = placeholders({rid: e for rid, e in entries.items() if rid in known})
    if unfilled:
        errors.append(
            f"mapping still has placeholder(s) with kind or state null: {', '.join(unfilled)}; "
            "give each a kind and a state"
        )
    for rid in known:
        entry = entries.get(rid)
        if entry is None or rid in unfilled:
            continue
        errors.extend(_entry_problems(rid, entry, known))
    if errors:
        raise MigrationError(errors)


def _entry_problems(rid: str, entry: object, known: dict[str, dict]) -> list[str]:
    if not isinstance(entry, dict):
        return [f"mapping for {rid} must be an object"]
    out: list[str] = []
    if not ENTRY_FIELDS.issuperset(entry):
        out.append(f"mapping for {rid} has unknown field(s): {', '.join(sorted(set(entry) - ENTRY_FIELDS))}")
    kind, state = entry.get("kind"), entry.get("state")
    if kind not in model.KINDS:
        out.append(f"mapping for {rid} has invalid kind {json.dumps(kind)}; use claim, decision or question")
    elif state not in model.STATES[kind]:
        out.append(f"mapping for {rid} has invalid state {_quote(state)} for {kind}")
    text = entry.get("text")
    if not isinstance(text, str) or not text.strip():
        out.append(f"mapping for {rid} is missing text")
    if kind in ("claim", "question"):
        for name in ("choice", "alternatives", "decided_by"):
            if entry.get(name):
                out.append(f"mapping for {rid} gives {name}, which only a decision has")
    if kind == "decision":
        choice = entry.get("choice", known[rid].get("answer", ""))
        if not isinstance(choice, str) or not choice.strip():
            out.append(f'mapping for {rid} is a decision with no choice; add a "choice"')
    overrides = entry.get("overrides", {})
    if overrides == {}:
        return out
    if not isinstance(overrides, dict) or not RELATION_NAMES.issuperset(overrides):
        out.append(f"mapping for {rid} overrides must be an object with supports, depends_on, answers or supersedes")
        return out
    for name, value in overrides.items():
        problem, missing = _check_ids(f"mapping for {rid} overrides {name}", value, known, nested=name == "supports")
        if problem:
            out.append(problem)
        elif missing:
            out.append(f"mapping for {rid} overrides {name} with unknown old id(s): {', '.join(missing)}")
    return out


def _quote(value: object) -> str:
    return f"'{value}'" if isinstance(value, str) else json.dumps(value)


# -- conversion ------------------------------------------------------------------------


@dataclass
class Migration:
    """The converted ledger and what to tell the user about it."""

    records: list[dict] = field(default_factory=list)
    #: One line per record: ``d2 -> q2 question/open``.
    report: list[str] = field(default_factory=list)
    #: The automatic edge fixes, one line each (without ``docket: warning: ``).
    warnings: list[str] = field(default_factory=list)

    @property
    def data(self) -> bytes:
        """The schema-2 ledger bytes: one canonical line per record."""
        # convert() builds each record in write order, so this equals canonical.line()
        # per record (a test pins that) at a fraction of the cost on 100k records.
        with gc_paused():
            lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in self.records]
        try:
            return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""
        except UnicodeEncodeError:
            for record, line in zip(self.records, lines, strict=True):
                try:
                    line.encode("utf-8")
                except UnicodeEncodeError:
                    source = record["legacy"]["source_id"]
                    raise MigrationError(
                        [
                            f"{source} holds text that is not valid Unicode (a lone surrogate escape such as "
                            "\\ud800); correct that line of the schema-1 ledger, then run docket migrate again"
                        ]
                    ) from None
            raise

    def counts(self) -> dict[str, int]:
        """Records per kind."""
        out = dict.fromkeys(model.KINDS, 0)
        for record in self.records:
            out[record["kind"]] += 1
        return out


def new_id(old_id: str, kind: str) -> str:
    """The schema-2 ID of an old record: the kind's letter and the old number (d2 -> q2)."""
    return model.make_id(kind, int(old_id[1:]))


def _because_groups(rid: str, because: list) -> list[list[str]]:
    if all(isinstance(r, str) and r for r in because):
        return [list(because)] if because else []
    if all(isinstance(g, list) and all(isinstance(r, str) and r for r in g) for g in because):
        return [list(g) for g in because if g]
    raise MigrationError([f"{rid}: because must be a list of ids (one AND set) or a list of id lists (OR sets)"])


def _relations(
    rid: str, kind: str, record: dict, kinds: dict[str, str], overrides: dict, warnings: list[str]
) -> tuple[list[list[str]], list[str], list[str], list[str]]:
    """supports, depends_on, answers, supersedes for one record, in old IDs."""
    if "supports" in overrides:
        supports = [list(g) for g in overrides["supports"]]
    else:
        supports = []
        for group in _because_groups(rid, record.get("because", [])):
            kept = []
            for target in group:
                if kinds.get(target) == "question":
                    warnings.append(
                        f"{rid} is justified by {target}, a question; support edge dropped "
                        "and kept in legacy.relation_map.source_because"
                    )
                else:
                    kept.append(target)
            if kept and kept not in supports:  # (d2) OR (d1 AND d2) minus question d1 is just d2
                supports.append(kept)
    answers = list(overrides.get("answers", record.get("answers", [])))
    depends_on = list(overrides.get("depends_on", record.get("depends_on", [])))
    if "supersedes" in overrides:
        supersedes = list(overrides["supersedes"])
    else:
        supersedes = []
        for target in record.get("supersedes", []):
            target_kind = kinds.get(target)
            if target_kind == "question" and kind != "question":
                warnings.append(f"{rid} supersedes {target}, a question; recorded as an answers edge")
                if "answers" not in overrides:
                    answers.append(target)
            elif target_kind is not None and target_kind != kind:
                raise MigrationError(
                    [f"cross-kind supersession {rid}->{target} requires an explicit supersedes override"]
                )
            else:
                supersedes.append(target)
    return supports, depends_on, list(dict.fromkeys(answers)), supersedes


def _mapped(ids: list[str], new_ids: dict[str, str]) -> list[str]:
    # An ID the ledger never defined keeps its old spelling; validation then names it.
    return [new_ids.get(r, r) for r in ids]


def convert(
    records: list[dict],
    entries: dict[str, dict],
    *,
    progress: Callable[[int, int], None] | None = None,
) -> Migration:
    """Convert schema-1 records with a checked, complete map and validate the result.

    Raises ``MigrationError`` naming every record the result would be invalid for.
    """
    with gc_paused():
        return _convert(records, entries, progress)


def _convert(records: list[dict], entries: dict[str, dict], progress: Callable[[int, int], None] | None) -> Migration:
    check_map(records, entries)
    kinds = {rid: entry["kind"] for rid, entry in entries.items()}
    new_ids = {rid: new_id(rid, kind) for rid, kind in kinds.items()}
    if len(set(new_ids.values())) != len(new_ids):
        raise MigrationError(["mapping produces duplicate typed IDs"])
    out = Migration()
    index = Index()
    errors: list[str] = []
    total = len(records)
    for position, source in enumerate(records, start=1):
        rid = source["id"]
        entry = entries[rid]
        kind = entry["kind"]
        nid = new_ids[rid]
        overrides = entry.get("overrides", {})
        try:
            supports, depends_on, answers, supersedes = _relations(rid, kind, source, kinds, overrides, out.warnings)
        except MigrationError as exc:
            # Keep going so one run names every such record; this one stays out of the result.
            errors.extend(exc.messages)
            supports, depends_on, answers, supersedes = [], [], [], []
        answer = source.get("answer", "")
        record: dict = {"schema": model.SCHEMA, "kind": kind, "id": nid, "text": entry["text"]}
        if kind == "decision":
            record["choice"] = entry.get("choice", answer)
            record["alternatives"] = entry.get("alternatives", [])
            record["decided_by"] = entry.get("decided_by", "")
        record["state"] = entry["state"]
        for name in PROVENANCE:
            record[name] = source.get(name, "")
        record["scope"] = entry.get("scope", source.get("scope", CARRIED["scope"]))
        record["rationale"] = entry.get("rationale", answer)
        record["supports"] = [_mapped(g, new_ids) for g in supports]
        record["depends_on"] = _mapped(depends_on, new_ids)
        record["answers"] = _mapped(answers, new_ids)
        record["supersedes"] = _mapped(supersedes, new_ids)
        for name in ("evidence", "revisit", "cost_if_wrong", "pinned"):
            record[name] = entry.get(name, source.get(name, CARRIED[name]))
        record["legacy"] = {
            "source_id": rid,
            "raw": source,
            "relation_map": {
                "source_because": source.get("because", []),
                "source_depends_on": source.get("depends_on", []),
                "source_answers": source.get("answers", []),
                "source_supersedes": source.get("supersedes", []),
                "mapped_supports": record["supports"],
                "mapped_depends_on": record["depends_on"],
                "mapped_answers": record["answers"],
                "mapped_supersedes": record["supersedes"],
                "overrides": overrides,
            },
        }
        try:
            check_line(record)
            index.check(record)
        except Invalid as exc:
            errors.append(f"{rid} (as {nid}): {exc.message}")
        if nid not in index.lines:
            index.add(record, position)
        out.records.append(record)
        out.report.append(f"{rid} -> {nid} {kind}/{entry['state']}")
        if progress is not None and (position % 2000 == 0 or position == total):
            progress(position, total)
    if errors:
        raise MigrationError(errors, hint=True)
    return out


def migrate_bytes(data: bytes, entries: dict[str, dict] | None = None) -> Migration:
    """Migrate schema-1 ledger bytes with the derived map (or the given one)."""
    schema, lines = parse(data)
    if schema != 1:
        raise MigrationError([f"not a schema 1 ledger (schema {schema})"])
    records = sources(lines)
    if entries is None:
        entries, problems = derive_map(records)
        if problems:
            raise MigrationError(problems, hint=True)
    return convert(records, entries)


def _recovered_map(new_records: list[tuple[int, dict]]) -> dict[str, dict] | None:
    """The map a migrated ledger was made with, read back from its records and legacy fields."""
    entries: dict[str, dict] = {}
    for _, record in new_records:
        legacy = record.get("legacy")
        if not isinstance(legacy, dict) or not isinstance(legacy.get("relation_map"), dict):
            return None
        rid = legacy.get("source_id")
        if not isinstance(rid, str) or rid in entries:
            return None
        entry = {k: record.get(k) for k in ("kind", "state", "text")}
        entry["overrides"] = legacy["relation_map"].get("overrides", {})
        entry.update({k: record[k] for k in OPTIONAL_FIELDS if k in record})
        entries[rid] = entry
    return entries


def is_migration_of(old_bytes: bytes, new_bytes: bytes) -> bool:
    """True when new_bytes is exactly what ``docket migrate`` writes for old_bytes.

    That is the derived run, or a ``--map`` run whose map is read back from the
    new records themselves (kind, state, text, optional fields, legacy overrides):
    every other byte must then be what the conversion derives from old_bytes.
    """
    with gc_paused():
        return _is_migration_of(old_bytes, new_bytes)


def _is_migration_of(old_bytes: bytes, new_bytes: bytes) -> bool:
    try:
        if schema_of(old_bytes) != 1 or schema_of(new_bytes) != model.SCHEMA:
            return False
        _, lines = parse(old_bytes)
        records = sources(lines)
        derived, problems = derive_map(records)
        if not problems and convert(records, derived).data == new_bytes:
            return True
        recovered = _recovered_map(parse(new_bytes)[1])
        return recovered is not None and convert(records, recovered).data == new_bytes
    except MigrationError:
        return False


def _first_schema(data: bytes) -> int | None:
    start = 0
    number = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        number += 1
        raw = data[start:end]
        if raw.strip():
            return _schema_of_line(number, raw)
        start = end + 1
    return None


def merge_schema_fault(ours: bytes, theirs: bytes) -> str | None:
    """Why the merge driver must not merge these two sides' ledgers by schema, or None.

    A side still at schema 1 has to run ``docket migrate`` on its own branch
    first. Migration converts each line on its own, so the migrated side then
    shares the other side's migrated prefix and merges like any two branches.
    Only each side's first record is read (the driver must not scan a 100k
    ledger); a side that mixes schemas further down fails validation anyway.
    """
    try:
        this, other = _first_schema(ours), _first_schema(theirs)
    except MigrationError as exc:
        return f"{exc.messages[0]}; run 'docket check' on each branch and repair it first"
    if this == 1 and other == 1:
        return (
            "both branches' ledgers are schema 1; run 'docket migrate' on each branch and commit it, "
            "then merge again (migrations of the same records are identical)"
        )
    if other == 1:
        return (
            f"the other branch's ledger is schema 1 and this branch's is schema {model.SCHEMA}; "
            "run 'docket migrate' on the other branch first, commit it, then merge again"
        )
    if this == 1:
        return (
            f"this branch's ledger is schema 1 and the other branch's is schema {model.SCHEMA}; "
            "abort this merge, run 'docket migrate' on this branch first, commit it, then merge again"
        )
    return None


# -- writing -------------------------------------------------------------------------


def backup_path(path: Path) -> Path:
    """Where the untouched schema-1 original is kept: ``ledger.jsonl.schema1``."""
    return path.with_name(path.name + ".schema1")


def temp_path(path: Path) -> Path:
    """The fully written, fsynced new ledger before it replaces the old one."""
    return path.with_name(path.name + ".migrating")


def backup_conflict(path: Path, original: bytes) -> str | None:
    """Why the backup slot is taken, or None when it is free or holds this very original."""
    backup = backup_path(path)
    try:
        kept = backup.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot read {backup}: {exc.strerror}"
    if kept == original:
        return None  # left by a crashed run: the same original
    return (
        f"{backup} already exists and differs from {path}; a second migration would overwrite the original. "
        f"Move {backup.name} aside (it is the schema-1 original of an earlier migration), then run again"
    )


def _crash_point(step: str) -> None:
    # Tests only: stop the process dead after a step to prove each step leaves a readable ledger.
    if os.environ.get(CRASH_ENV) == step:
        os._exit(75)


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _keep_backup(path: Path, original: bytes) -> None:
    backup = backup_path(path)
    if backup.exists():
        return  # backup_conflict() found it identical to the original
    try:
        os.link(path, backup)
    except OSError:
        tmp = backup.with_name(backup.name + ".tmp")
        _write_synced(tmp, original)
        os.replace(tmp, backup)


def replace_ledger(path: Path, original: bytes, new: bytes) -> Path:
    """Swap the migrated bytes in; keep the original at ``.schema1``. Caller holds the exclusive lock.

    1. write ``ledger.jsonl.migrating`` and fsync it; 2. hard-link (or copy) the
    original to ``ledger.jsonl.schema1``; 3. ``os.replace`` the temp file over
    the ledger. A crash before 3 leaves the old ledger in place and a rerun
    repeats the work; after 3 the new one. Returns the backup path.
    """
    conflict = backup_conflict(path, original)
    if conflict:
        raise BackupConflict(conflict)
    tmp = temp_path(path)
    try:
        _write_synced(tmp, new)
        _crash_point("tempfile")
        _keep_backup(path, original)
        _fsync_dir(path.parent)
        _crash_point("backup")
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise LedgerError(f"cannot migrate {path}: {exc.strerror}; the ledger is unchanged") from None
    _crash_point("replace")
    return backup_path(path)
