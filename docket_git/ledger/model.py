"""The ledger's vocabulary: kinds, states, fields and the ID grammar. No I/O."""

from __future__ import annotations

import re

SCHEMA = 2

KINDS: tuple[str, ...] = ("claim", "decision", "question")
PREFIX: dict[str, str] = {"claim": "c", "decision": "d", "question": "q"}
KIND_OF_PREFIX: dict[str, str] = {v: k for k, v in PREFIX.items()}

STATES: dict[str, tuple[str, ...]] = {
    "claim": ("unassessed", "accepted", "disputed", "rejected"),
    "decision": ("adopted", "revoked"),
    "question": ("open",),
}
DEFAULT_STATE: dict[str, str] = {k: v[0] for k, v in STATES.items()}
#: Every state a projected record can show, recorded or derived.
ALL_STATES: tuple[str, ...] = (*(state for states in STATES.values() for state in states), "resolved")

REQUIRED_FIELDS: tuple[str, ...] = (
    "schema",
    "kind",
    "id",
    "text",
    "state",
    "ts",
    "author",
    "session",
    "branch",
)
#: Fields every record carries, with the value the CLI writes when omitted.
COMMON_DEFAULTS: dict[str, object] = {
    "scope": [],
    "rationale": "",
    "supports": [],
    "depends_on": [],
    "answers": [],
    "supersedes": [],
    "evidence": [],
    "revisit": "",
    "cost_if_wrong": "",
    "pinned": False,
}
DECISION_DEFAULTS: dict[str, object] = {"choice": "", "alternatives": [], "decided_by": ""}
AUDIT_FIELDS: tuple[str, ...] = ("legacy",)

#: The order fields are written in: required, common, decision-only, audit.
FIELD_ORDER: tuple[str, ...] = (
    *REQUIRED_FIELDS[:4],
    "choice",
    "alternatives",
    "decided_by",
    *REQUIRED_FIELDS[4:],
    *tuple(COMMON_DEFAULTS),
    *AUDIT_FIELDS,
)
KNOWN_FIELDS: frozenset[str] = frozenset(FIELD_ORDER)

STRING_FIELDS: tuple[str, ...] = (
    "ts",
    "author",
    "session",
    "branch",
    "rationale",
    "revisit",
    "cost_if_wrong",
)
#: Relation fields holding flat ID lists.
FLAT_RELATIONS: tuple[str, ...] = ("depends_on", "answers", "supersedes")
RELATIONS: tuple[str, ...] = ("supports", *FLAT_RELATIONS)
#: Prose fields that may cite record IDs (rewritten when a merge renumbers).
PROSE_FIELDS: tuple[str, ...] = (
    "text",
    "choice",
    "alternatives",
    "rationale",
    "revisit",
    "cost_if_wrong",
)
EVIDENCE_KEYS: frozenset[str] = frozenset({"ref", "checked_at", "commit"})

#: At most 18 digits: a sequence number, never a number Python would refuse to convert.
ID_RE = re.compile(r"^[cdq](0|[1-9][0-9]{0,17})\Z")
#: An ID token inside prose: a kind letter and a number, not inside a word.
ID_TOKEN_RE = re.compile(r"(?<![\w.@-])([cdq])([1-9][0-9]*)(?![\w-])")


#: A baseline digest: 8 to 64 hex digits of the SHA-256 of the ledger up to a record's line.
DIGEST_RE = re.compile(r"^[0-9a-fA-F]{8,64}\Z")


def split_ref(value: str) -> tuple[str, str | None]:
    """``ID`` or ``ID@DIGEST`` -> (ID, digest as given, or None); nothing is checked."""
    rid, sep, digest = value.strip().partition("@")
    return rid, (digest if sep else None)


def since_fault(value: str) -> str | None:
    """Why a ``--since`` value cannot name a baseline at all (a usage error), or None.

    A baseline is ``ID``, ``ID@DIGEST`` or a git revision (``HEAD~3``, a
    branch, ``main@{1}``). One that is well formed but unknown is not a fault:
    the briefing falls back to a full one and says so.
    """
    text = value.strip()
    shown = text if len(text) <= 40 else text[:37] + "..."
    if not text:
        return "--since needs a record ID, ID@DIGEST or a git revision"
    if any(c.isspace() or ord(c) < 32 for c in text):
        return f"--since {shown!r} holds whitespace or a control character; give an ID, ID@DIGEST or a git revision"
    if "@" in text and "@{" not in text and text != "@":
        rid, digest = split_ref(text)
        if not is_id(rid) or digest is None or not DIGEST_RE.match(digest):
            return f"--since {shown!r} is not ID@DIGEST (e.g. d12@7f3a9c21e0b4: the ID and 8-64 hex digits)"
    if re.match(r"[cdq][0-9]{19,}\Z", text):
        return f"--since {shown!r}: a record ID has at most 18 digits"
    return None


def parse_ref(value: str) -> tuple[str, str | None]:
    """``ID`` or ``ID@DIGEST`` -> (ID, lower-case digest or None); ValueError if either part is malformed."""
    rid, digest = split_ref(value)
    if not is_id(rid) or (digest is not None and not DIGEST_RE.match(digest)):
        raise ValueError(f"{value!r} is not an ID or ID@DIGEST (e.g. c12 or c12@7f3a9c21e0b4)")
    return rid, digest.lower() if digest else None


def is_id(value: object) -> bool:
    """True when value is a well-formed record ID such as ``c12``."""
    return isinstance(value, str) and ID_RE.match(value) is not None


def seq(record_id: str) -> int:
    """The sequence number of a well-formed ID (``d12`` -> 12)."""
    return int(record_id[1:])


def kind_of(record_id: str) -> str:
    """The kind an ID's prefix names (``q3`` -> ``question``)."""
    return KIND_OF_PREFIX[record_id[0]]


def make_id(kind: str, number: int) -> str:
    """The ID of a record of ``kind`` with sequence ``number``."""
    return f"{PREFIX[kind]}{number}"


def ordered(record: dict) -> dict:
    """The record with its fields in the canonical write order."""
    out = {k: record[k] for k in FIELD_ORDER if k in record}
    for k in record:
        if k not in out:
            out[k] = record[k]
    return out


def support_ids(record: dict) -> list[str]:
    """Every ID named in the record's supports formula, in order, de-duplicated."""
    seen: dict[str, None] = {}
    for group in record.get("supports") or []:
        for ref in group:
            seen.setdefault(ref, None)
    return list(seen)


def references(record: dict) -> list[tuple[str, str]]:
    """(field, target) for every relation the record declares, in field order."""
    out = [("supports", ref) for group in record.get("supports") or [] for ref in group]
    for field in FLAT_RELATIONS:
        out.extend((field, ref) for ref in record.get(field) or [])
    return out


def searchable(record: dict) -> str:
    """The text a ``--query`` is matched in, before casefolding: id, text, rationale, choice, alternatives, scope."""
    parts = [record["id"], record["text"], record.get("rationale") or "", record.get("choice") or ""]
    parts.extend(record.get("alternatives") or ())
    parts.extend(record.get("scope") or ())
    return " ".join(parts)
