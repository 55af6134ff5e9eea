"""Schema 1 -> 2 conversion, and recognising a conversion after the fact.

The conversion is a pure function of the schema-1 bytes and the map: it never
reads the clock, the user, the branch or the machine, so two clones that
migrate the same ledger write the same bytes (which is what lets the merge
driver and the pre-commit check recognise a migration, see ``is_migration_of``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from docket_git.ledger import model
from docket_git.ledger.jsonl import gc_paused
from docket_git.ledger.validate import Index, Invalid, check_line
from docket_git.migrate.mapping import check_map, derive_map
from docket_git.migrate.schema1 import (
    CARRIED,
    OPTIONAL_FIELDS,
    PROVENANCE,
    MigrationError,
    _schema_of_line,
    parse,
    schema_of,
    sources,
)

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
