"""Schema-2 validation with Docket-compatible messages.

``RULES`` states the per-line rules once and ``check_line`` applies them in Docket's order; ``Index`` holds
what the cross-record rules need about the records before a line (and is
exactly what the store caches, so a grown file validates only its new lines).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

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


# -- the per-line rules, stated once --------------------------------------------------------------
#
# ``RULES`` is the one statement of what a field of a record may hold. ``check_line``
# applies it (after the record's schema, kind and ID), in order, to every record: the
# first rule a record breaks raises its message. Every reader, writer and build
# validates through ``check_line``, so a rule changed here changes every path
# (tests/test_validate_fast.py); a faster second form made a cold build no faster (q195).


class Rule(Plain):
    """One per-line rule: in a record of one of ``kinds``, field ``field`` passes ``test``.

    ``message`` says why a value fails (``{value}`` and ``{kind}`` are filled in), or is
    a function of the value giving it; ``missing`` is the message when the field is
    absent (None: the field may be absent). A field may have several rules: the first
    one a record breaks, in ``RULES``' order, is the one reported.
    """

    __slots__ = ("field", "kinds", "message", "missing", "test")

    def __init__(
        self,
        field: str,
        test: Callable[[object], bool],
        message: str | Callable[[object], str],
        kinds: tuple[str, ...] = model.KINDS,
        missing: str | None = None,
    ) -> None:
        self.field = field
        self.test = test
        self.message = message
        self.kinds = kinds
        self.missing = missing


def _string(value: object) -> bool:
    return type(value) is str


def _text(value: object) -> bool:
    """A non-empty string."""
    return type(value) is str and value != ""


def _ids(value: object) -> bool:
    """A list of non-empty strings (ID lists, scope, alternatives)."""
    if type(value) is not list:
        return False
    for item in value:  # noqa: SIM110 - a loop: all() over a generator costs twice as much here
        if type(item) is not str or not item:
            return False
    return True


def _groups(value: object) -> bool:
    """A list of non-empty lists of non-empty strings: supports' conjunctive ID sets."""
    if type(value) is not list:
        return False
    for group in value:  # noqa: SIM110
        if not group or not _ids(group):
            return False
    return True


def _evidence_fault(evidence: object) -> str | None:
    """Why an evidence list is refused, or None."""
    if type(evidence) is not list:
        return "evidence must be a list of objects"
    if not evidence:
        return None
    if not all(type(e) is dict for e in evidence):
        return "evidence must be a list of objects"
    for item in evidence:
        ref = item.get("ref")
        if type(ref) is not str or not ref:
            return "each evidence object needs a non-empty ref"
        if not model.EVIDENCE_KEYS.issuperset(item):
            return "evidence only permits ref, checked_at, and commit"
        for key in ("checked_at", "commit"):
            if key in item and type(item[key]) is not str:
                return f"evidence {key} must be a string"
    return None


def _too_long(text: object) -> str:
    return (
        f"text is {len(str(text).encode('utf-8', 'surrogatepass'))} bytes; a record's text holds at most "
        f"{MAX_TEXT_BYTES} (32 KiB): state it briefly and cite the long material with --evidence"
    )


def _never(value: object) -> bool:
    """A field this kind of record may not hold at all."""
    return False


def _empty(value: object) -> bool:
    return not value


_NOT_DECISIONS = ("claim", "question")

#: Every per-line rule on a record's fields, in the order ``check_line`` applies them.
RULES: tuple[Rule, ...] = (
    Rule("text", _text, "text must be a non-empty string", missing="text must be a non-empty string"),
    Rule("text", lambda text: not text_too_long(text), _too_long),  # type: ignore[arg-type]
    *(
        Rule(
            "state",
            model.STATES[kind].__contains__,
            "questions have recorded state open; resolution is derived from answers"
            if kind == "question"
            else "invalid {kind} state '{value}'",
            (kind,),
            missing=f"state is missing; a {kind} records one of: {', '.join(model.STATES[kind])}",
        )
        for kind in model.KINDS
    ),
    *(
        Rule(name, _string, f"{name} must be a string", missing=f"{name} must be a string" if required else None)
        for name in model.STRING_FIELDS
        for required in (name in model.REQUIRED_FIELDS,)
    ),
    Rule("pinned", lambda value: type(value) is bool, "pinned must be boolean"),
    Rule("scope", _ids, "scope must be a list of non-empty strings"),
    *(Rule(name, _ids, f"{name} must be a list of non-empty ID strings") for name in model.FLAT_RELATIONS),
    Rule("supports", _groups, "supports must be a list of conjunctive ID lists"),
    Rule("evidence", lambda value: _evidence_fault(value) is None, _evidence_fault),  # type: ignore[arg-type]
    Rule(
        "choice",
        _text,
        "decision choice must be a non-empty string",
        ("decision",),
        missing="decision choice must be a non-empty string",
    ),
    Rule("alternatives", _ids, "decision alternatives must be a list of non-empty strings", ("decision",)),
    Rule("decided_by", _string, "decision decided_by must be a string", ("decision",)),
    Rule("choice", _never, "choice and alternatives are decision-only fields", _NOT_DECISIONS),
    Rule("alternatives", _never, "choice and alternatives are decision-only fields", _NOT_DECISIONS),
    Rule("decided_by", _never, "decided_by is a decision-only field", _NOT_DECISIONS),
    Rule("answers", _empty, "questions cannot answer other questions", ("question",)),
    Rule("depends_on", _empty, "only decisions may have depends_on", _NOT_DECISIONS),
)

_MISSING = object()


def by_kind(rules: tuple[Rule, ...]) -> dict[str, tuple[tuple, ...]]:
    """Kind -> (field, test, message, missing) of each rule that applies to it, in ``RULES``' order."""
    return {
        kind: tuple((r.field, r.test, r.message, r.missing) for r in rules if kind in r.kinds) for kind in model.KINDS
    }


_BY_KIND = by_kind(RULES)


def check_line(record: object, line: bytes | None = None) -> str:
    """Apply every single-record rule in order; return the record's ID.

    ``line``: the UTF-8 line record was decoded from, when the caller has it
    (a line with no ``\\ud`` escape decodes to no lone surrogate: that walk is skipped).
    """
    if type(record) is not dict:
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
    rules = _BY_KIND.get(kind) if type(kind) is str else None
    if rules is None:
        raise Invalid("record", "kind must be one of claim, decision, question")
    rid = record.get("id")
    if type(rid) is not str or model.ID_RE.match(rid) is None:
        raise Invalid("record", "id must match cN, dN, or qN with a positive sequence number")
    if rid[0] != model.PREFIX[kind] or rid[1] == "0":
        raise Invalid("record", f"{kind} id '{rid}' has the wrong prefix or sequence")
    get = record.get
    for name, test, message, missing in rules:
        value = get(name, _MISSING)
        if value is _MISSING:
            if missing is not None:
                raise Invalid(rid, missing)
        elif not test(value):
            raise Invalid(rid, message(value) if callable(message) else message.format(value=value, kind=kind))
    if "legacy" in record:
        _check_legacy(rid, record)
    if line is None or b"\\ud" in line or b"\\uD" in line:
        found = _surrogate(record, "")
        if found is not None:
            name, char = found
            raise Invalid(
                rid,
                f"{name or 'a field name'} holds U+{ord(char):04X}, half of a UTF-16 surrogate pair, which is not "
                "text and cannot be stored: write the character itself (a lone \\u escape in the line, or an "
                "argument that was not UTF-8)",
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


#: The cross-record rule on each relation's targets: the ID prefixes they may have ("": the citing
#: record's own), and the message when one has another. Every target must also be an earlier record's.
TARGET_KINDS: dict[str, tuple[str, str]] = {
    "supports": ("cd", "{name} target '{target}' is not a claim or decision"),
    "depends_on": ("cd", "{name} target '{target}' is not a claim or decision"),
    "answers": ("q", "answers target '{target}' is not a question"),
    "supersedes": ("", "supersedes target '{target}' is a different kind"),
}


class Index:
    """What the cross-record rules need to know about the records so far."""

    __slots__ = ("count", "lines", "max_seq", "retired")

    def __init__(
        self, max_seq: int = 0, lines: dict[str, int] | None = None, retired: set[str] | None = None, count: int = 0
    ) -> None:
        self.max_seq = max_seq
        #: ID -> 1-based line number where it was recorded (a mapping: the merge driver's reads the prefix).
        self.lines: dict[str, int] = {} if lines is None else lines
        #: IDs some record supersedes.
        self.retired: set[str] = set() if retired is None else retired
        self.count = count

    def check(self, record: dict) -> None:
        """Apply the cross-record rules to a record that passed ``check_line``."""
        rid = record["id"]
        if rid in self.lines:
            raise Invalid(rid, "duplicate ID")
        if int(rid[1:]) <= self.max_seq:
            raise Invalid(rid, "global sequence must increase monotonically; gaps are allowed")
        get = record.get
        supports = get("supports")
        if supports:
            for group in supports:
                for target in group:
                    self._cite(rid, "supports", target)
        for name in model.FLAT_RELATIONS:
            targets = get(name)
            if targets:
                for target in targets:
                    self._cite(rid, name, target)

    def _cite(self, rid: str, name: str, target: str) -> None:
        """The cross-record rules on one relation's target: earlier, of a kind ``TARGET_KINDS`` allows, current."""
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
        allowed, message = TARGET_KINDS[name]
        if target[0] not in (allowed or rid[0]):
            raise Invalid(rid, message.format(name=name, target=target))
        if name == "supersedes" and target in self.retired:
            raise Invalid(rid, f"supersedes target '{target}' is already retired")

    def add(self, record: dict, line: int) -> None:
        """Take a checked record into the index."""
        rid = record["id"]
        self.lines[rid] = line
        self.max_seq = max(self.max_seq, model.seq(rid))
        supersedes = record.get("supersedes")
        if supersedes:
            self.retired.update(supersedes)
        self.count += 1

    def next_id(self, kind: str) -> str:
        """The ID the next record of ``kind`` gets."""
        return model.make_id(kind, self.max_seq + 1)


#: Deepest nesting a record may have (a real one has 3 levels: supports is a list of lists).
MAX_DEPTH = 32
#: A key's closing quote and its colon; inside a string a quote is escaped, so this never undercounts keys.
_KEY_END = re.compile(rb'"[ \t\r\n]*:')
#: A key's closing quote, whitespace, its colon: a line without one has its every key end counted by ``'":'``.
_SPACED_KEY_END = re.compile(rb'"[ \t\r\n]+:')


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
            if item:  # an empty one holds no key (most relation lists are empty: a call saved each)
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
    # Each key, a field given twice and each escaped quote before a colon in a string end in '"' and ':'
    # (spaced or not): as many key ends as keys proves no field is given twice, and any doubt asks json.
    keys = _keys(value)
    spaced = _SPACED_KEY_END.search(raw) is not None
    if keys != (len(_KEY_END.findall(raw)) if spaced else raw.count(b'":')):
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
    choice = record.get("choice")
    if isinstance(text, str) and text and not text.strip():
        raise Invalid("record", "text is blank; state the claim, decision or question in words")
    if kind == "decision" and isinstance(choice, str) and choice and not choice.strip():
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
    if kind != "decision" or not isinstance(choice, str) or not isinstance(text, str):
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
