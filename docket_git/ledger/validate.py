"""Schema-2 validation with Docket-compatible messages.

``check_line`` applies the per-line rules in Docket's order; ``Index`` holds
what the cross-record rules need about the records before a line (and is
exactly what the store caches, so a grown file validates only its new lines).
"""

from __future__ import annotations

import json
import operator
import re

from docket_git.ledger import model
from docket_git.plain import Plain

LEGACY_MESSAGE = "legacy format is unsupported; run 'docket migrate' to convert it to schema 2"
CONFLICT_MARKERS = (b"<<<<<<<", b"=======", b">>>>>>>", b"|||||||")
CONFLICT_MESSAGE = (
    "git conflict marker: a merge, rebase or cherry-pick left this ledger conflicted (git printed why). "
    "Run 'docket resolve-conflict': it merges both sides as the merge driver does, or says why it cannot "
    "(if the markers were committed, run 'docket repair')"
)
CRLF_MESSAGE = (
    "the line ends with CR LF; ledger lines end with LF only (a CR changes the line's bytes and digest). "
    "Convert it with: sed -i 's/\\r$//' .docket/ledger.jsonl, and run 'docket init' so .gitattributes marks "
    "ledgers -text and git never converts them"
)


class Invalid(Exception):
    """A record breaks a rule. ``where`` is its ID, or ``record``/``schema``."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


class Fault(Plain):
    """One problem found on one line of a ledger file."""

    __slots__ = ("line", "message")

    def __init__(self, line: int, message: str) -> None:
        self.line = line
        self.message = message

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


def _strings(value: object, *, non_empty: bool) -> bool:
    if type(value) is list and not value:
        return True  # most relation lists are empty: spare the generator (a cold 100k read calls this 450k times)
    return isinstance(value, list) and all(isinstance(v, str) and (v or not non_empty) for v in value)


def _check_evidence(rid: str, evidence: object) -> None:
    if not isinstance(evidence, list) or not all(isinstance(e, dict) for e in evidence):
        raise Invalid(rid, "evidence must be a list of objects")
    for item in evidence:
        ref = item.get("ref")
        if not isinstance(ref, str) or not ref:
            raise Invalid(rid, "each evidence object needs a non-empty ref")
        if set(item) - model.EVIDENCE_KEYS:
            raise Invalid(rid, "evidence only permits ref, checked_at, and commit")
        for key in ("checked_at", "commit"):
            if key in item and not isinstance(item[key], str):
                raise Invalid(rid, f"evidence {key} must be a string")


LEGACY_KEYS = frozenset({"source_id", "raw", "relation_map"})
#: The relation_map keys ``docket migrate`` writes: the schema-1 relations as found,
#: the schema-2 relations they became, and the map's overrides (in old IDs).
LEGACY_SOURCE_KEYS: tuple[str, ...] = ("source_because", "source_depends_on", "source_answers", "source_supersedes")
LEGACY_RELATION_KEYS: frozenset[str] = frozenset(
    (*LEGACY_SOURCE_KEYS, *(f"mapped_{r}" for r in model.RELATIONS), "overrides")
)
OLD_ID_RE = re.compile(r"^d[1-9][0-9]{0,17}\Z")


def _overrides(value: object) -> bool:
    """True for either shape of ``legacy.relation_map.overrides``: docket-git's object keyed by relation, or
    Docket's migrator's sorted list of the relation names it overrode (usually ``[]``)."""
    if isinstance(value, dict):
        return set(value) <= set(model.RELATIONS)
    return (
        isinstance(value, list)
        and all(isinstance(name, str) and name in model.RELATIONS for name in value)
        and value == sorted(set(value))
    )


def _check_legacy(rid: str, record: dict) -> None:
    legacy = record["legacy"]
    if not isinstance(legacy, dict) or set(legacy) != LEGACY_KEYS:
        raise Invalid(rid, "legacy must be an object with source_id, raw, and relation_map")
    source_id = legacy["source_id"]
    if not isinstance(source_id, str) or not OLD_ID_RE.match(source_id):
        raise Invalid(rid, "legacy source_id must be a schema-1 id such as d12")
    if not isinstance(legacy["raw"], dict) or legacy["raw"].get("id") != source_id:
        raise Invalid(rid, "legacy raw must be the schema-1 record whose id is source_id")
    relation_map = legacy["relation_map"]
    if not isinstance(relation_map, dict) or set(relation_map) != LEGACY_RELATION_KEYS:
        raise Invalid(
            rid,
            "legacy relation_map must hold exactly " + ", ".join(sorted(LEGACY_RELATION_KEYS)),
        )
    for key in LEGACY_SOURCE_KEYS:
        if not isinstance(relation_map[key], list):
            raise Invalid(rid, f"legacy relation_map {key} must be a list")
    if not _overrides(relation_map["overrides"]):
        raise Invalid(
            rid,
            "legacy relation_map overrides must be an object keyed by relation or a sorted list of relation names",
        )
    for relation in model.RELATIONS:
        key = f"mapped_{relation}"
        if relation_map[key] != record.get(relation, []):
            raise Invalid(rid, f"legacy relation_map {key} must equal {relation}")


#: The most UTF-8 bytes a record's text may hold: the order of gh-aw's 32 KiB record. A briefing,
#: a list line and a merge read every text; one pasted log must not become every reader's cost.
MAX_TEXT_BYTES = 32 * 1024


def text_too_long(text: str) -> bool:
    """True when text's UTF-8 form passes ``MAX_TEXT_BYTES`` (the rule every validation path asks here)."""
    if len(text) <= MAX_TEXT_BYTES // 4:  # a character is at most 4 bytes: nearly every text stops here
        return False
    return len(text) > MAX_TEXT_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES


def check_line(record: object) -> str:
    """Apply every single-record rule in order; return the record's ID."""
    if not isinstance(record, dict):
        raise Invalid("record", "each JSONL line must be an object")
    schema = record.get("schema")
    if "schema" not in record or (schema == 1 and type(schema) is int):
        raise Invalid("schema", LEGACY_MESSAGE)
    if not model.KNOWN_FIELDS.issuperset(record):
        unknown = sorted(set(record) - model.KNOWN_FIELDS)
        raise Invalid("record", f"unknown field(s): {', '.join(unknown)}")
    if type(schema) is not int or schema != model.SCHEMA:
        raise Invalid("schema", f"expected schema {model.SCHEMA}, got {json.dumps(schema)}")
    kind = record.get("kind")
    if kind not in model.KINDS:
        raise Invalid("record", "kind must be one of claim, decision, question")
    rid = record.get("id")
    if not model.is_id(rid):
        raise Invalid("record", "id must match cN, dN, or qN with a positive sequence number")
    if rid[0] != model.PREFIX[kind] or model.seq(rid) == 0:
        raise Invalid("record", f"{kind} id '{rid}' has the wrong prefix or sequence")
    text = record.get("text")
    if not isinstance(text, str) or not text:
        raise Invalid(rid, "text must be a non-empty string")
    if text_too_long(text):
        raise Invalid(
            rid,
            f"text is {len(text.encode('utf-8', 'surrogatepass'))} bytes; a record's text holds at most "
            f"{MAX_TEXT_BYTES} (32 KiB): state it briefly and cite the long material with --evidence",
        )
    state = record.get("state")
    if "state" not in record:
        allowed = ", ".join(model.STATES[kind])
        raise Invalid(rid, f"state is missing; a {kind} records one of: {allowed}")
    if state not in model.STATES[kind]:
        if kind == "question":
            raise Invalid(rid, "questions have recorded state open; resolution is derived from answers")
        raise Invalid(rid, f"invalid {kind} state '{state}'")
    for name in model.STRING_FIELDS:
        if (name in model.REQUIRED_FIELDS or name in record) and not isinstance(record.get(name), str):
            raise Invalid(rid, f"{name} must be a string")
    if "pinned" in record and type(record["pinned"]) is not bool:
        raise Invalid(rid, "pinned must be boolean")
    if "scope" in record and not _strings(record["scope"], non_empty=True):
        raise Invalid(rid, "scope must be a list of non-empty strings")
    for name in model.FLAT_RELATIONS:
        if name in record and not _strings(record[name], non_empty=True):
            raise Invalid(rid, f"{name} must be a list of non-empty ID strings")
    if "supports" in record:
        supports = record["supports"]
        if not isinstance(supports, list) or not all(
            isinstance(group, list) and group and _strings(group, non_empty=True) for group in supports
        ):
            raise Invalid(rid, "supports must be a list of conjunctive ID lists")
    if "evidence" in record:
        _check_evidence(rid, record["evidence"])
    if kind == "decision":
        choice = record.get("choice")
        if not isinstance(choice, str) or not choice:
            raise Invalid(rid, "decision choice must be a non-empty string")
        if "alternatives" in record and not _strings(record["alternatives"], non_empty=True):
            raise Invalid(rid, "decision alternatives must be a list of non-empty strings")
        if "decided_by" in record and not isinstance(record["decided_by"], str):
            raise Invalid(rid, "decision decided_by must be a string")
    else:
        if "choice" in record or "alternatives" in record:
            raise Invalid(rid, "choice and alternatives are decision-only fields")
        if "decided_by" in record:
            raise Invalid(rid, "decided_by is a decision-only field")
    if kind == "question" and record.get("answers"):
        raise Invalid(rid, "questions cannot answer other questions")
    if kind != "decision" and record.get("depends_on"):
        raise Invalid(rid, "only decisions may have depends_on")
    if "legacy" in record:
        _check_legacy(rid, record)
    found = _surrogate(record, "")
    if found is not None:
        name, char = found
        raise Invalid(
            rid,
            f"{name or 'a field name'} holds U+{ord(char):04X}, half of a UTF-16 surrogate pair, which is not text "
            "and cannot be stored: write the character itself (a lone \\u escape in the line, or an argument "
            "that was not UTF-8)",
        )
    return rid


_SURROGATE = re.compile("[\ud800-\udfff]")


def _surrogate(value: object, name: str) -> tuple[str, str] | None:
    """(field, character) of the first lone surrogate in a string of value (keys included), or None."""
    if type(value) is str:
        if value.isascii():
            return None
        found = _SURROGATE.search(value)
        return None if found is None else (name, found.group())
    if type(value) is list:
        for item in value:
            hit = _surrogate(item, name)
            if hit is not None:
                return hit
    elif type(value) is dict:
        for key, item in value.items():
            hit = _surrogate(key, name) or _surrogate(item, f"{name}.{key}" if name else key)
            if hit is not None:
                return hit
    return None


class Index:
    """What the cross-record rules need to know about the records so far."""

    __slots__ = ("count", "lines", "max_seq", "retired", "retired_at")

    def __init__(
        self,
        max_seq: int = 0,
        lines: dict[str, int] | None = None,
        retired: set[str] | None = None,
        count: int = 0,
        retired_at: dict[str, int] | None = None,
    ) -> None:
        self.max_seq = max_seq
        #: ID -> 1-based line number where it was recorded (a mapping: the merge driver's reads the prefix).
        self.lines: dict[str, int] = {} if lines is None else lines
        #: IDs some record supersedes.
        self.retired: set[str] = set() if retired is None else retired
        self.count = count
        #: Retired ID -> the line of the record that retired it (lets a cached index be cut back to a line).
        self.retired_at: dict[str, int] = {} if retired_at is None else retired_at

    def check(self, record: dict) -> None:
        """Apply the cross-record rules to a record that passed ``check_line``."""
        rid = record["id"]
        if rid in self.lines:
            raise Invalid(rid, "duplicate ID")
        if model.seq(rid) <= self.max_seq:
            raise Invalid(rid, "global sequence must increase monotonically; gaps are allowed")
        kind = record["kind"]
        for name, target in model.references(record):
            if target == rid:
                raise Invalid(rid, f"{name} cannot refer to itself")
            if target not in self.lines:
                message = f"{name} refers to unknown or later ID '{target}'"
                if model.is_id(target) and model.seq(target) < model.seq(rid):
                    message += (
                        f"; no earlier line records {target}: if its line was deleted by hand, restore it"
                        " (git diff -- .docket/ledger.jsonl shows the change)"
                    )
                raise Invalid(rid, message)
            target_kind = model.kind_of(target)
            if name in ("supports", "depends_on") and target_kind == "question":
                raise Invalid(rid, f"{name} target '{target}' is not a claim or decision")
            if name == "answers" and target_kind != "question":
                raise Invalid(rid, f"answers target '{target}' is not a question")
            if name == "supersedes":
                if target_kind != kind:
                    raise Invalid(rid, f"supersedes target '{target}' is a different kind")
                if target in self.retired:
                    raise Invalid(rid, f"supersedes target '{target}' is already retired")

    def add(self, record: dict, line: int) -> None:
        """Take a checked record into the index."""
        rid = record["id"]
        self.lines[rid] = line
        self.max_seq = max(self.max_seq, model.seq(rid))
        supersedes = record.get("supersedes")
        if supersedes:
            self.retired.update(supersedes)
            for target in supersedes:
                self.retired_at[target] = line
        self.count += 1

    def next_id(self, kind: str) -> str:
        """The ID the next record of ``kind`` gets."""
        return model.make_id(kind, self.max_seq + 1)


#: Deepest nesting a record may have (a real one has 3 levels: supports is a list of lists).
MAX_DEPTH = 32
#: A key's closing quote and its colon; inside a string a quote is escaped, so this never undercounts keys.
_KEY_END = re.compile(rb'"[ \t\r\n]*:')


def _keys(value: object, depth: int = 0) -> int:
    """How many object keys value holds at every depth; ValueError past MAX_DEPTH levels."""
    if type(value) is dict:
        count, items = len(value), value.values()
    elif type(value) is list:
        count, items = 0, value
    else:
        return 0
    for item in items:
        kind = type(item)
        if kind is dict or kind is list:
            if depth >= MAX_DEPTH:
                raise ValueError(f"nested more than {MAX_DEPTH} levels deep; a record never is")
            count += _keys(item, depth + 1)
    return count


def _refuse_duplicates(pairs: list[tuple[str, object]]) -> dict:
    seen: dict = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"field {key!r} appears twice; the line is ambiguous, keep one of them")
        seen[key] = value
    return seen


def parse_line(raw: bytes) -> object:
    """Decode one ledger line, raising ``ValueError`` with a readable reason.

    Refuses what JSON allows but a record cannot be: nesting past
    ``MAX_DEPTH`` and a field given twice (which JSON readers settle
    differently: last wins here, first elsewhere).
    """
    if raw.startswith(CONFLICT_MARKERS):
        raise ValueError(CONFLICT_MESSAGE)
    if raw.endswith(b"\r"):
        raise ValueError(CRLF_MESSAGE)
    try:
        text = raw.decode("utf-8")
        value = json.loads(text)
    except UnicodeDecodeError as exc:
        raise ValueError(f"invalid JSON: not UTF-8 ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep; a record never is") from None
    keys = _keys(value)
    if keys != raw.count(b'":') and keys != len(_KEY_END.findall(raw)):
        json.loads(text, object_pairs_hook=_refuse_duplicates)  # raises naming the field given twice
    return value


def check_all(lines: list[tuple[int, bytes]]) -> tuple[list[Fault], int]:
    """Every fault in the given (line number, bytes) lines; and the record count.

    Unlike a read, this keeps going after a fault so a user sees them all.
    """
    faults: list[Fault] = []
    index = Index()
    for number, raw in lines:
        try:
            record = parse_line(raw)
        except ValueError as exc:
            faults.append(Fault(number, str(exc)))
            continue
        try:
            rid = check_line(record)
        except Invalid as exc:
            faults.append(Fault(number, f"{exc.where}: {exc.message}"))
            continue
        if rid in index.lines:
            faults.append(Fault(number, f"duplicate id {rid}, first seen on line {index.lines[rid]}"))
            continue
        if model.seq(rid) <= index.max_seq:
            top = max(index.lines, key=model.seq)
            faults.append(Fault(number, f"id {rid} does not increase past {top}"))
            index.add(record, number)  # later lines may still cite it
            continue
        try:
            index.check(record)
        except Invalid as exc:
            faults.append(Fault(number, f"{exc.where}: {exc.message}"))
        index.add(record, number)
    return faults, index.count


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


#: Control characters a record's prose may not hold (newline and tab are prose).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def _control_field(record: dict) -> str | None:
    """The first field whose text holds a control character, or None."""
    for name, value in record.items():
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, dict):
                item = " ".join(str(v) for v in item.values())
            elif isinstance(item, list):
                item = " ".join(str(v) for v in item)
            if isinstance(item, str) and _CONTROL.search(item):
                return name
    return None


def check_new(record: dict) -> None:
    """The refusals that apply when a record is written, never when one is read."""
    kind = record.get("kind")
    text = record.get("text")
    if isinstance(text, str) and text and not text.strip():
        raise Invalid("record", "text is blank; state the claim, decision or question in words")
    if (
        kind == "decision"
        and isinstance(record.get("choice"), str)
        and record["choice"]
        and not record["choice"].strip()
    ):
        raise Invalid("record", "choice is blank; name the option chosen")
    bad = _control_field(record)
    if bad is not None:
        raise Invalid(
            "record",
            f"{bad} holds a control character; only newlines and tabs may appear in a record's text",
        )
    if kind in ("claim", "decision") and isinstance(text, str) and text.rstrip().endswith("?"):
        raise Invalid(
            "record",
            f"a {kind} must state the commitment, not ask it; record the question "
            "with 'docket question' and link it with --answers",
        )
    if kind != "decision":
        return
    choice = record.get("choice")
    if not isinstance(choice, str) or not isinstance(text, str):
        return
    alternatives = record.get("alternatives") or []
    if alternatives and all(isinstance(a, str) and _norm(a) == _norm(choice) for a in alternatives):
        raise Invalid(
            "record",
            "decision alternatives must name an option the choice beat; "
            "leave --alternative off when the decision had no contender",
        )
    if _norm(text) == _norm(choice):
        raise Invalid(
            "record",
            "decision text must carry more than the choice; name what the decision "
            "commits to and leave the option detail in --choice",
        )
    rationale = record.get("rationale")
    if isinstance(rationale, str) and rationale and _norm(rationale) in (_norm(choice), _norm(text)):
        raise Invalid(
            "record",
            "decision rationale must say why the choice won; leave --rationale off "
            "when the choice line already carries the reason",
        )


# -- the fast path: proving a clean line clean, in bulk ----------------------------------------------
#
# ``quick_accept`` answers one question: would the exact path (``parse_line``'s key count,
# ``check_line`` and ``Index.check``) accept this decoded line? It answers True only when
# it can prove so, and then adds the record to the index as ``Index.add`` would; on any
# doubt it answers False and changes nothing, and the caller runs the exact path, which
# gives the report. So it never needs to know a message, only the rules.

_REQUIRED_STRINGS = tuple(n for n in model.STRING_FIELDS if n in model.REQUIRED_FIELDS)
_OPTIONAL_STRINGS = tuple(n for n in model.STRING_FIELDS if n not in model.REQUIRED_FIELDS)
_DECISION_ONLY = ("choice", "alternatives", "decided_by")


def _ids(value: object) -> bool:
    """A list of non-empty strings (what ``_strings(value, non_empty=True)`` accepts)."""
    if type(value) is not list:
        return False
    for item in value:  # noqa: SIM110 - a loop: all() over a generator costs twice as much here
        if type(item) is not str or not item:
            return False
    return True


def _general(record: dict, kind: str, rid: str) -> tuple | None:
    """check_line's rules for any shape of record (fields missing, legacy...): the relations and key count, or None."""
    if not model.KNOWN_FIELDS.issuperset(record):
        return None
    get = record.get
    value = get("text")
    if type(value) is not str or not value or text_too_long(value) or get("state") not in model.STATES[kind]:
        return None
    for name in _REQUIRED_STRINGS:
        if type(get(name)) is not str:
            return None
    for name in _OPTIONAL_STRINGS:
        if type(get(name, "")) is not str:
            return None
    if type(get("pinned", False)) is not bool:
        return None
    if "scope" in record and not _ids(record["scope"]):
        return None
    supports = get("supports")
    if supports is not None or "supports" in record:
        if type(supports) is not list:
            return None
        for group in supports:
            if type(group) is not list or not group or not _ids(group):
                return None
    depends_on, answers, supersedes = get("depends_on"), get("answers"), get("supersedes")
    for name, targets in (("depends_on", depends_on), ("answers", answers), ("supersedes", supersedes)):
        if (targets is not None or name in record) and not _ids(targets):
            return None
    keys = len(record)
    evidence = get("evidence")
    if evidence is not None or "evidence" in record:
        inner = _evidence_keys(evidence)
        if inner is None:
            return None
        keys += inner
    if kind == "decision":
        choice = get("choice")
        if type(choice) is not str or not choice:
            return None
        if "alternatives" in record and not _ids(record["alternatives"]):
            return None
        if type(get("decided_by", "")) is not str:
            return None
    else:
        for name in _DECISION_ONLY:
            if name in record:
                return None
        if depends_on or (kind == "question" and answers):
            return None
    if "legacy" in record:
        try:
            _check_legacy(rid, record)
            keys = _keys(record)
        except (Invalid, ValueError):
            return None
    return supports, depends_on, answers, supersedes, keys


def _evidence_keys(evidence: object) -> int | None:
    """The keys a valid evidence list's items hold (what the line's key count adds), or None: not provably valid."""
    if type(evidence) is not list:
        return None
    keys = 0
    for item in evidence:
        if type(item) is not dict or not model.EVIDENCE_KEYS.issuperset(item):
            return None
        ref = item.get("ref")
        if type(ref) is not str or not ref:
            return None
        if type(item.get("checked_at", "")) is not str or type(item.get("commit", "")) is not str:
            return None
        keys += len(item)
    return keys


#: Every field docket writes for a record of each kind: the shape nearly every line has.
_CANONICAL = {
    kind: frozenset(
        k for k in model.FIELD_ORDER if k not in model.AUDIT_FIELDS and (kind == "decision" or k not in _DECISION_ONLY)
    )
    for kind in model.KINDS
}
_TEXTS = operator.itemgetter("text", *model.STRING_FIELDS)
_LISTS = operator.itemgetter("scope", "supports", "depends_on", "answers", "supersedes", "evidence")


def _canonical(record: dict, kind: str) -> tuple | None:
    """check_line's rules for a record holding exactly ``_CANONICAL[kind]``: the relations and key count, or None."""
    texts = _TEXTS(record)
    for value in texts:
        if type(value) is not str:
            return None
    if not texts[0] or text_too_long(texts[0]) or record["state"] not in model.STATES[kind]:
        return None
    if type(record["pinned"]) is not bool:
        return None
    scope, supports, depends_on, answers, supersedes, evidence = _LISTS(record)
    if (
        type(scope) is not list
        or type(supports) is not list
        or type(depends_on) is not list
        or type(answers) is not list
        or type(supersedes) is not list
        or type(evidence) is not list
    ):
        return None
    if (scope and not _ids(scope)) or (depends_on and not _ids(depends_on)) or (answers and not _ids(answers)):
        return None
    if supersedes and not _ids(supersedes):
        return None
    for group in supports:
        if type(group) is not list or not group or not _ids(group):
            return None
    inner = _evidence_keys(evidence)
    if inner is None:
        return None
    keys = len(record) + inner
    if kind == "decision":
        choice = record["choice"]
        if type(choice) is not str or not choice or not _ids(record["alternatives"]):
            return None
        if type(record["decided_by"]) is not str:
            return None
    elif depends_on or (kind == "question" and answers):
        return None
    return supports, depends_on, answers, supersedes, keys


def quick_accept(record: object, text: str, index: Index, number: int) -> bool:
    """True when the exact rules provably accept ``record``, decoded from the line ``text``; it is then added.

    ``record`` must be what ``json.loads(text)`` gives for a line starting with
    ``{`` (so ``parse_line`` cannot refuse it for its bytes); ``number`` is its
    line. False means "not proven" (never "invalid"): the exact path decides.
    """
    if type(record) is not dict or "\\ud" in text or "\\uD" in text:
        return False  # not an object, or an escape of a UTF-16 surrogate (check_line refuses a lone one)
    get = record.get
    schema = get("schema")
    if type(schema) is not int or schema != model.SCHEMA:
        return False
    kind = get("kind")
    if type(kind) is not str or kind not in model.PREFIX:
        return False
    rid = get("id")
    if type(rid) is not str or model.ID_RE.match(rid) is None or rid[0] != model.PREFIX[kind]:
        return False
    if rid[1:2] == "0":
        return False
    shape = _canonical(record, kind) if record.keys() == _CANONICAL[kind] else _general(record, kind, rid)
    if shape is None:
        return False
    supports, depends_on, answers, supersedes, keys = shape
    if keys != text.count('":'):
        return False  # a field given twice, or a key count the exact path settles
    return linked(rid, supports, depends_on, answers, supersedes, index, number)


def linked(
    rid: str,
    supports: list[list[str]] | None,
    depends_on: list[str] | None,
    answers: list[str] | None,
    supersedes: list[str] | None,
    index: Index,
    number: int,
) -> bool:
    """True when ``Index.check``'s cross-record rules provably accept a record that passed the per-line rules.

    ``rid`` is a well-formed ID (``model.ID_RE``, sequence above 0) of the
    record's kind. On True the record is added to index as ``Index.add``
    would (line ``number``); on False nothing changes.
    """
    seq = int(rid[1:])
    lines = index.lines
    if seq <= index.max_seq or rid in lines:
        return False
    for group in supports or ():
        for target in group:
            if target not in lines or target[0] == "q":
                return False
    for target in depends_on or ():
        if target not in lines or target[0] == "q":
            return False
    for target in answers or ():
        if target not in lines or target[0] != "q":
            return False
    if supersedes:
        retired = index.retired
        for target in supersedes:
            if target not in lines or target[0] != rid[0] or target in retired:
                return False
    # Index.add
    lines[rid] = number
    index.max_seq = seq
    if supersedes:
        index.retired.update(supersedes)
        for target in supersedes:
            index.retired_at[target] = number
    index.count += 1
    return True


# -- the canonical path: a line exactly as docket writes it, proven by one regular expression -------------
#
# ``canonical.dumps`` writes a record compactly with its fields in ``model.FIELD_ORDER``; most lines of
# any ledger are such lines, and most hold no escape. For those, one ``re.fullmatch`` per line proves
# the per-line rules (the pattern admits only valid JSON whose strings hold no escape and no control
# character, each field once, of the right type: what ``quick_accept`` proves over the decoded dict, and
# stricter) and captures the fields as the decoder would give them, without building a dict. The
# cross-record rules are then ``linked``'s. Any line it does not match goes the ``quick_accept`` way.

_RX_PLAIN = r'[^"\\\x00-\x1f]'  # a string's character that needs no escape: what json.loads returns as is
_RX_STRING = rf'"({_RX_PLAIN}*)"'
_RX_TEXT = rf'"({_RX_PLAIN}+)"'  # non-empty
_RX_ID = r'"[cdq][1-9][0-9]{0,17}"'
_RX_IDS = rf"\[((?:{_RX_ID}(?:,{_RX_ID})*+)?)\]"
_RX_TEXTS = rf'\[((?:"{_RX_PLAIN}+"(?:,"{_RX_PLAIN}+")*+)?)\]'
_RX_GROUPS = rf"\[((?:\[{_RX_ID}(?:,{_RX_ID})*+\](?:,\[{_RX_ID}(?:,{_RX_ID})*+\])*+)?)\]"
_RX_EVIDENCE_ITEM = rf'\{{"ref":"{_RX_PLAIN}+"(?:,"checked_at":"{_RX_PLAIN}*")?(?:,"commit":"{_RX_PLAIN}*")?\}}'
_RX_EVIDENCE = rf"\[(?:{_RX_EVIDENCE_ITEM}(?:,{_RX_EVIDENCE_ITEM})*+)?\]"


def _line_pattern(kind: str) -> re.Pattern[str]:
    prefix = model.PREFIX[kind]
    # The same group numbers for every kind: a claim's or a question's choice, alternatives and decided_by are ''.
    only = (
        rf'"choice":{_RX_TEXT},"alternatives":{_RX_TEXTS},"decided_by":{_RX_STRING},'
        if kind == "decision"
        else "()()()"
    )
    depends_on = _RX_IDS if kind == "decision" else r"\[()\]"
    answers = r"\[()\]" if kind == "question" else _RX_IDS
    return re.compile(
        rf'\{{"schema":2,"kind":"{kind}","id":"({prefix}[1-9][0-9]{{0,17}})","text":{_RX_TEXT},{only}'
        rf'"state":"({"|".join(model.STATES[kind])})","ts":{_RX_STRING},"author":{_RX_STRING},"session":{_RX_STRING},'
        rf'"branch":{_RX_STRING},"scope":{_RX_TEXTS},"rationale":{_RX_STRING},"supports":{_RX_GROUPS},'
        rf'"depends_on":{depends_on},"answers":{answers},"supersedes":{_RX_IDS},"evidence":({_RX_EVIDENCE}),'
        rf'"revisit":{_RX_STRING},"cost_if_wrong":{_RX_STRING},"pinned":(true|false)\}}'
    )


#: The first letter of the kind (``text[20]``, after ``{"schema":2,"kind":"``) -> its line's pattern;
#: compiled on first use (~18 ms: no start-up path that never builds an index pays for it).
_LINES: dict[str, re.Pattern[str]] = {}
_KIND_AT = len('{"schema":2,"kind":"')

#: The groups ``canonical_fields`` captures, in order (lists as their text between the brackets).
CANONICAL_GROUPS = (
    "id",
    "text",
    "choice",
    "alternatives",
    "decided_by",
    "state",
    "ts",
    "author",
    "session",
    "branch",
    "scope",
    "rationale",
    "supports",
    "depends_on",
    "answers",
    "supersedes",
    "evidence",
    "revisit",
    "cost_if_wrong",
    "pinned",
)


def _id_list(inner: str) -> list[str]:
    """The IDs of a list's text between its brackets (``"c1","d2"``): none holds a quote or a comma."""
    return inner[1:-1].split('","') if inner else []


def canonical_fields(text: str) -> tuple | None:
    """(kind, fields, supports, depends_on, answers, supersedes) of a line as docket writes it, or None.

    ``fields`` are the ``CANONICAL_GROUPS``' texts, each what ``json.loads``
    gives for it (a list: its text between the brackets; evidence: its JSON,
    brackets included; pinned: ``true`` or ``false``); the relations are decoded. A line that matches passes
    ``check_line`` and ``parse_line``; the cross-record rules are
    ``linked``'s. None: not such a line (the ``quick_accept`` way decides).
    """
    pattern = _LINES.get(text[_KIND_AT : _KIND_AT + 1])
    if pattern is None:
        if _LINES:
            return None
        _LINES.update((model.PREFIX[kind], _line_pattern(kind)) for kind in model.KINDS)
        return canonical_fields(text)
    match = pattern.fullmatch(text)
    if match is None:
        return None
    fields = match.groups()
    if text_too_long(fields[1]):
        return None  # check_line refuses it: the exact path gives the message
    supports = fields[12]
    return (
        model.KIND_OF_PREFIX[fields[0][0]],
        fields,
        [group[1:-1].split('","') for group in supports[1:-1].split("],[")] if supports else [],
        _id_list(fields[13]),
        _id_list(fields[14]),
        _id_list(fields[15]),
    )
