"""Building new records: provenance, scope normalisation, evidence, batches, ID allocation."""

from __future__ import annotations

import os
import posixpath
from datetime import UTC, datetime
from pathlib import Path

from docket_git.errors import LedgerError, UsageError
from docket_git.ledger import model
from docket_git.ledger.validate import Index, Invalid, check_line, check_new, parse_line


def split_ids(values: list[str] | None) -> list[str]:
    """Flatten repeatable, comma-separated ID options into one list."""
    out: list[str] = []
    for value in values or []:
        out.extend(part.strip() for part in value.split(",") if part.strip())
    return list(dict.fromkeys(out))


def detect_author(where: Path | None = None) -> tuple[str, bool]:
    """The recording author and whether it had to fall back to "unknown".

    ``DOCKET_AUTHOR``, then the agent's own variables, then ``USER``, then git's
    ``user.name`` (or ``user.email``) for the repository at ``where``.
    """
    env = os.environ
    if env.get("DOCKET_AUTHOR"):
        return env["DOCKET_AUTHOR"], False
    if env.get("AI_AGENT"):
        return env["AI_AGENT"].split("_", 1)[0], False
    if env.get("CODEX_SANDBOX") or env.get("CODEX_HOME"):
        return "codex", False
    if env.get("USER"):
        return env["USER"], False
    while where is not None and not where.is_dir():  # before init: .docket/ does not exist yet
        where = where.parent if where.parent != where else None
    if where is not None:
        from docket_git.repo.gitio import run_git

        for key in ("user.name", "user.email"):
            out = run_git(where, "config", key)
            name = out.decode("utf-8", "replace").strip() if out else ""
            if name:
                return name, False
    return "unknown", True


def detect_session() -> str:
    """The agent session ID from the environment, or ""."""
    for name in ("CLAUDE_SESSION_ID", "CLAUDE_CODE_BRIDGE_SESSION_ID", "SESSION_ID"):
        if os.environ.get(name):
            return os.environ[name]
    return ""


def now() -> str:
    """UTC ISO-8601 to the second, e.g. ``2026-09-12T10:00:00+00:00``."""
    return datetime.now(UTC).replace(microsecond=0).isoformat()


def provenance(ledger: Path, author: str | None = None) -> dict:
    """ts, author, session and branch for a record written to ledger (``author``: already detected)."""
    from docket_git.repo.gitio import current_branch

    if author is None:
        author, _ = detect_author(ledger.parent)
    return {
        "ts": now(),
        "author": author,
        "session": detect_session(),
        "branch": current_branch(ledger.parent),
    }


def normalize_scope(scope: str, root: Path) -> str:
    """A repository-relative, normalised path scope; component names pass through."""
    value = scope.strip()
    if not value:
        raise UsageError("--scope needs a non-empty path, glob or component name")
    if "\x00" in value or "\n" in value:
        raise UsageError(f"--scope {value!r} contains a control character")
    if os.path.isabs(value):
        try:
            value = Path(value).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            raise UsageError(f"--scope {scope} is outside the repository at {root}") from None
        if Path(scope).is_dir():
            value += "/"
    value = value.replace("\\", "/")
    trailing = value.endswith("/")
    norm = posixpath.normpath(value)
    if norm == ".." or norm.startswith("../"):
        raise UsageError(f"--scope {scope} points outside the repository; use a path inside it")
    if norm == ".":
        return "./" if trailing else "."
    return norm + "/" if trailing else norm


def parse_evidence(value: str) -> dict:
    """``--evidence``: a plain reference, or a JSON object with ref/checked_at/commit."""
    text = value.strip()
    if text.startswith("{"):
        try:
            obj = parse_line(text.encode())
        except ValueError as exc:
            raise UsageError(f"--evidence is not a valid JSON object: {exc}") from None
        if not isinstance(obj, dict):
            raise UsageError("--evidence JSON must be an object with a ref")
        return obj
    if not text:
        raise UsageError("--evidence needs a non-empty reference")
    return {"ref": text}


def draft(kind: str, text: str, fields: dict, prov: dict) -> dict:
    """A record without its ID: defaults, then provenance, then the given fields."""
    record: dict = {"schema": model.SCHEMA, "kind": kind, "text": text, "state": model.DEFAULT_STATE[kind]}
    record.update(prov)
    defaults = {**model.COMMON_DEFAULTS, **(model.DECISION_DEFAULTS if kind == "decision" else {})}
    record.update({k: (list(v) if isinstance(v, list) else v) for k, v in defaults.items()})
    record.update({k: v for k, v in fields.items() if v is not None})
    return model.ordered(record)


def parse_batch(data: bytes, prov: dict) -> list[dict]:
    """Drafts from JSONL batch input; ``@N`` references are resolved on append."""
    drafts: list[dict] = []
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = parse_line(raw)
        except ValueError as exc:
            raise LedgerError(f"batch line {number}: {exc}") from None
        if not isinstance(obj, dict):
            raise LedgerError(f"batch line {number}: each JSONL line must be an object")
        if "id" in obj:
            raise LedgerError(f"batch line {number}: leave 'id' out; docket allocates IDs (use @N to cite line N)")
        if "schema" in obj and obj["schema"] != model.SCHEMA:
            raise LedgerError(f"batch line {number}: schema must be {model.SCHEMA} or left out")
        kind = obj.get("kind")
        if kind not in model.KINDS:
            raise LedgerError(f"batch line {number}: kind must be one of claim, decision, question")
        text = obj.get("text")
        fields = {k: v for k, v in obj.items() if k not in ("kind", "text")}
        drafts.append(draft(kind, text, fields, prov))
    if not drafts:
        raise LedgerError("batch is empty; give one JSON object per line")
    return drafts


#: How advice names a field: the command-line flag, or the batch's JSON field.
FLAG_NAMES = {
    "scope": "--scope",
    "alternatives": "--alternative",
    "rationale": "--rationale",
    "cost_if_wrong": "--cost",
}


def hints(record: dict, *, batch: bool = False) -> list[str]:
    """Advice about a just-written record, worst first; never an error.

    Names the flag to use (``--cost``), or for a batch the JSON field
    (``"cost_if_wrong"``).
    """
    rid = record["id"]

    def name(field: str) -> str:
        return f'"{field}"' if batch else FLAG_NAMES[field]

    out = []
    if not record.get("scope"):
        out.append(f"{rid} recorded without {name('scope')}: this record competes for room in every briefing")
    if record["kind"] == "decision" and not record.get("alternatives"):
        out.append(f"{rid} recorded without {name('alternatives')}: name what the choice beat, if anything did")
    if not record.get("rationale"):
        out.append(f"{rid} recorded without {name('rationale')}: say why, when the text does not")
    if not record.get("cost_if_wrong") and record["kind"] != "question":
        out.append(f"{rid} recorded without {name('cost_if_wrong')}: say what breaks if this turns out wrong")
    return out


# -- allocating IDs ------------------------------------------------------------


def _resolve_batch_refs(draft: dict, ids: list[str], position: int) -> None:
    def resolve(field: str, ref: object) -> object:
        if isinstance(ref, str) and ref.startswith("@"):
            n = ref[1:]
            if not (n.isascii() and n.isdigit() and len(n) < 19) or not 1 <= int(n) < position:
                raise Invalid(field, f"{ref[:24]} names a record that is not earlier in this batch")
            return ids[int(n) - 1]
        return ref

    for name in model.FLAT_RELATIONS:
        if isinstance(draft.get(name), list):
            draft[name] = [resolve(name, r) for r in draft[name]]
    if isinstance(draft.get("supports"), list):
        draft["supports"] = [
            [resolve("supports", r) for r in group] if isinstance(group, list) else group for group in draft["supports"]
        ]


def prepare(known: Index, drafts: list[dict]) -> list[dict]:
    """Give drafts their IDs and validate them, in order, against the index of the ledger's records.

    Each draft's ``kind`` picks its ID prefix; ``@N`` in relations names the
    Nth draft. Raises ``LedgerError`` naming the record; changes nothing on disk.
    """
    # copy(): the known IDs may be looked up in the ledger index rather than held in memory.
    index = Index(max_seq=known.max_seq, lines=known.lines.copy(), retired=known.retired.copy(), count=known.count)
    out: list[dict] = []
    ids: list[str] = []
    for position, draft in enumerate(drafts, start=1):
        record = dict(draft)
        where = f"batch line {position}: " if len(drafts) > 1 else ""
        try:
            _resolve_batch_refs(record, ids, position)
            kind = record.get("kind")
            if kind not in model.KINDS:
                raise Invalid("record", "kind must be one of claim, decision, question")
            record["id"] = index.next_id(kind)
            record = model.ordered(record)
            check_new(record)
            check_line(record)
            index.check(record)
        except Invalid as exc:
            # A refused record's ID was never allocated: name its kind, not an ID nobody will see.
            named = record.get("kind") if exc.where == record.get("id") else exc.where
            raise LedgerError(f"{where}{named}: {exc.message}") from None
        index.add(record, 0)
        ids.append(record["id"])
        out.append(record)
    return out
