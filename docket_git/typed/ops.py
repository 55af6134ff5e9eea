"""Operations per ledger type: their fields, validation, and how each changes the state.

``validate`` checks an operation on its own (fields, types, the declared
value schema); ``apply`` applies a validated operation to a state, which is
either the in-memory state of a full replay or the SQLite projection itself
(an append changes only the rows it touches). Both raise ``OpError``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Protocol

from docket_git.typed import canonical
from docket_git.typed.declare import Ledger

OPERATIONS: dict[str, dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    # type -> operation -> (required fields, optional fields)
    "log": {"append": (("value",), ())},
    "set": {"add": (("value",), ()), "remove": (("value",), ())},
    "map": {"put": (("key", "value"), ()), "delete": (("key",), ())},
    "table": {
        "insert": (("value",), ()),
        "update": (("key", "patch"), ()),
        "upsert": (("value",), ()),
        "delete": (("key",), ()),
    },
    "counter": {"increment": (("name", "amount"), ()), "decrement": (("name", "amount"), ())},
    "notes": {"note": (("subject", "note", "reason", "citations"), ()), "vote": (("note_id", "vote"), ("reason",))},
}
#: Every field an operation may hold, "operation" included.
_FIELDS = {
    kind: {name: frozenset({"operation", *req, *opt}) for name, (req, opt) in table.items()}
    for kind, table in OPERATIONS.items()
}
SUBJECT_MAX, NOTE_MAX, REASON_MAX, CITATIONS_MAX, NOTE_ID_MAX = 512, 4096, 1024, 32, 128  # gh-aw's limits
#: gh-aw's limits on a table row after replay, and on a written record (the operation and its ID).
CELL_MAX, RECORD_MAX = 64 * 1024, 32 * 1024
#: What ``"id":"ldg-<36>",`` adds to an operation's canonical JSON, as gh-aw measures a record.
_ID_BYTES = len('"id":"ldg-00000000-0000-4000-8000-000000000000",')
CITATION_FIELDS = frozenset({"type", "path", "start_line", "end_line", "commit", "content_sha256"})
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_HEX40 = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class OpError(ValueError):
    """Why an operation is invalid; the message names the field."""


class State(Protocol):
    """What a reducer needs from a state: keyed values, a log, notes and votes."""

    def get(self, key: str) -> object | None: ...
    def put(self, key: str, value: object) -> None: ...
    def delete(self, key: str) -> None: ...
    def log_append(self, value: object) -> None: ...
    def has_note(self, note_id: str) -> bool: ...
    def add_note(self, note_id: str, op: dict, created_at: str, sha: str) -> None: ...
    def add_vote(self, record_id: str, op: dict, created_at: str) -> None: ...


_validators: dict[str, object] = {}
_compiled: dict[int, tuple[Ledger, Callable[[object], bool]]] = {}


def _schema_check(ledger: Ledger, value: object, field: str) -> None:
    if ledger.schema is None:
        return
    fast = _compiled.get(id(ledger))
    if fast is None or fast[0] is not ledger:
        fast = _compiled[id(ledger)] = (ledger, compile_schema(ledger.schema))
    if fast[1](value):
        return
    key = ledger.fingerprint()
    validator = _validators.get(key)
    if validator is None:
        from jsonschema import Draft202012Validator

        validator = _validators[key] = Draft202012Validator(ledger.schema)
    if validator.is_valid(value):  # type: ignore[attr-defined]
        return  # jsonschema is the authority; the fast check below is only ever stricter
    from jsonschema.exceptions import best_match

    error = best_match(validator.iter_errors(value))  # type: ignore[attr-defined]
    path = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    raise OpError(f"{field}{path} does not match the schema of ledger '{ledger.name}': {error.message}")


_JSON_TYPES = {
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "string": lambda v: type(v) is str,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "number": lambda v: type(v) in (int, float),
    "integer": lambda v: type(v) is int or (type(v) is float and v.is_integer()),
}


def compile_schema(schema: object) -> Callable[[object], bool]:
    """A fast test of a schema of the supported subset, compiled once per ledger, in front of jsonschema.

    It never accepts a value jsonschema would reject; it may reject one jsonschema
    accepts (enum, oneOf, anyOf are not compiled), and then jsonschema decides.
    """
    if schema is True:
        return lambda value: True
    if not isinstance(schema, dict) or set(schema) - {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
    }:
        return lambda value: False
    tests: list[Callable[[object], bool]] = []
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        kinds = [_JSON_TYPES[n] for n in names if n in _JSON_TYPES]
        tests.append(kinds[0] if len(kinds) == 1 else lambda v: any(k(v) for k in kinds))  # [] accepts nothing
    props = {name: compile_schema(sub) for name, sub in schema.get("properties", {}).items()}
    required = list(schema.get("required", ()))
    closed = schema.get("additionalProperties") is False
    items = compile_schema(schema["items"]) if "items" in schema else None

    def test_object(v: object) -> bool:
        if type(v) is not dict:
            return True
        for name in required:
            if name not in v:
                return False
        for name, sub in props.items():
            if name in v and not sub(v[name]):
                return False
        return not closed or all(name in props for name in v)

    if props or required or closed:
        tests.append(test_object)
    if items is not None:
        tests.append(lambda v: type(v) is not list or all(items(x) for x in v))
    if len(tests) == 1:
        return tests[0]
    if len(tests) == 2:
        first, second = tests
        return lambda v: first(v) and second(v)
    return lambda v: all(t(v) for t in tests)


def _nonempty(op: dict, field: str, limit: int, *, in_bytes: bool = False) -> str:
    """A nonempty (after trimming) string of at most limit characters, or UTF-8 bytes (gh-aw's units)."""
    value = op.get(field)
    if not isinstance(value, str) or not value.strip():
        raise OpError(f"{field} must be a nonempty string")
    if in_bytes and len(value) * 4 > limit and len(value.encode("utf-8", "surrogatepass")) > limit:
        raise OpError(f"{field} is longer than {limit} bytes of UTF-8")
    if not in_bytes and len(value) > limit:
        raise OpError(f"{field} is longer than {limit} characters")
    return value


def check_citation(citation: object, where: str) -> dict:
    """A repository citation, checked: repository-relative path, positive lines with end >= start."""
    if not isinstance(citation, dict):
        raise OpError(f"{where} must be an object {{type: repository, path, start_line?, end_line?}}")
    extra = sorted(set(citation) - CITATION_FIELDS)
    if extra:
        raise OpError(f"{where}.{extra[0]}: unknown citation field; use type, path, start_line, end_line")
    if citation.get("type") != "repository":
        raise OpError(f'{where}.type must be "repository"')
    path = citation.get("path")
    if not isinstance(path, str) or not path:
        raise OpError(f"{where}.path must be a nonempty repository-relative path")
    lowered = path.lower()
    if (
        path.startswith("/")
        or "\\" in path
        or _SCHEME.match(path)
        or any(ord(c) < 32 or ord(c) == 127 for c in path)
        or any(code in lowered for code in ("%2e", "%2f", "%5c"))
        or any(part in ("", ".", "..") for part in path.split("/"))
    ):
        raise OpError(f"{where}.path {path!r} must be repository-relative (no '..', no absolute path, no URL)")
    start, end = citation.get("start_line"), citation.get("end_line")
    for name, line in (("start_line", start), ("end_line", end)):
        if line is not None and (type(line) is not int or not 1 <= line <= canonical.SAFE_INTEGER):
            raise OpError(f"{where}.{name} must be a positive safe integer")
    # An end_line alone is valid, as gh-aw has it: lines 1 to end_line (cite.line_range).
    if start is not None and end is not None and end < start:
        raise OpError(f"{where}.end_line must not be before start_line")
    if "commit" in citation and not (isinstance(citation["commit"], str) and _HEX40.match(citation["commit"])):
        raise OpError(f"{where}.commit must be a commit hash")
    if "content_sha256" in citation and not (
        isinstance(citation["content_sha256"], str) and _HEX64.match(citation["content_sha256"])
    ):
        raise OpError(f"{where}.content_sha256 must be 64 hex digits")
    return citation


def validate(ledger: Ledger, op: object, *, trusted: bool = False) -> dict:
    """The operation, checked on its own (fields, types, schema); raises ``OpError``.

    trusted: op was parsed from a record whose canonical form is already checked.
    """
    if not isinstance(op, dict):
        raise OpError("an operation is a JSON object")
    if not trusted:
        try:
            canonical.check(op, "operation", depth=1)  # depth 1: the operation is a record's payload
        except canonical.NotCanonical as exc:
            raise OpError(str(exc)) from None
        size = len(canonical.dumps(op).encode("utf-8", "surrogatepass")) + _ID_BYTES
        if size > RECORD_MAX:
            raise OpError(f"the record would be {size} bytes; gh-aw's limit (and docket's) is {RECORD_MAX}")
    kind = ledger.type
    if kind is None:
        _schema_check(ledger, op, "record")
        return op
    name = op.get("operation")
    allowed = OPERATIONS[kind]
    if name not in allowed:
        given = "it is missing" if name is None else f"not {json.dumps(name, ensure_ascii=False)}"
        raise OpError(f"operation must be one of {', '.join(allowed)} for a {ledger.type} ledger; {given}")
    required, optional = allowed[name]
    for field in required:
        if field not in op:
            raise OpError(f"{name} needs the field '{field}'")
    if not op.keys() <= _FIELDS[kind][name]:
        extra = sorted(set(op) - _FIELDS[kind][name])
        raise OpError(f"unknown field '{extra[0]}' for {name}; it takes {', '.join(required + optional)}")
    if kind in ("log", "set") or (kind == "map" and name == "put"):
        _schema_check(ledger, op["value"], "value")
    if kind == "map" and not isinstance(op["key"], str):
        raise OpError("key must be a string")
    if kind == "table":
        if name in ("insert", "upsert"):
            value = op["value"]
            if not isinstance(value, dict) or not isinstance(value.get(ledger.key), str):
                raise OpError(f"value must be an object with a string primary key '{ledger.key}'")
            _schema_check(ledger, value, "value")
        else:
            if not isinstance(op["key"], str):
                raise OpError("key must be a string")
            if name == "update":
                patch = op["patch"]
                if not isinstance(patch, dict):
                    raise OpError("patch must be an object")
                if ledger.key in patch:
                    raise OpError(f"patch must not contain the primary key '{ledger.key}'; the key cannot change")
    if kind == "counter":
        if not isinstance(op["name"], str) or not op["name"]:
            raise OpError("name must be a nonempty string")
        amount = op["amount"]
        if type(amount) is not int or amount < 0 or amount > canonical.SAFE_INTEGER:
            raise OpError("amount must be a nonnegative safe integer (0 to 2**53-1; no strings, no fractions)")
    if kind == "notes":
        if name == "note":
            _nonempty(op, "subject", SUBJECT_MAX, in_bytes=True)
            _nonempty(op, "note", NOTE_MAX, in_bytes=True)
            _nonempty(op, "reason", REASON_MAX)
            cites = op["citations"]
            if not isinstance(cites, list) or not 1 <= len(cites) <= CITATIONS_MAX:
                raise OpError(f"citations must be a list of 1 to {CITATIONS_MAX} citation objects")
            for i, citation in enumerate(cites):
                check_citation(citation, f"citations[{i}]")
        else:
            _nonempty(op, "note_id", NOTE_ID_MAX, in_bytes=True)
            if op["vote"] not in ("up", "down"):
                raise OpError('vote must be "up" or "down"')
            if "reason" in op:
                _nonempty(op, "reason", REASON_MAX)
    return op


def identity(value: object) -> str:
    """A set member's identity: its canonical JSON."""
    return canonical.dumps(value)


def apply(ledger: Ledger, op: dict, record_id: str, timestamp: str, sha: str, state: State) -> None:
    """Apply a validated operation to state; raises ``OpError`` when the state forbids it."""
    kind, name = ledger.type, op.get("operation")
    if kind == "log":
        state.log_append(op["value"])
    elif kind == "set":
        ident = identity(op["value"])
        if name == "add":
            state.put(ident, op["value"])
        else:
            state.delete(ident)
    elif kind == "map":
        if name == "put":
            state.put(op["key"], op["value"])
        else:
            state.delete(op["key"])
    elif kind == "table":
        _apply_table(ledger, op, name, state)
    elif kind == "counter":
        current = state.get(op["name"]) or 0
        result = current + op["amount"] if name == "increment" else current - op["amount"]  # type: ignore[operator]
        if abs(result) > canonical.SAFE_INTEGER:
            raise OpError(f"counter '{op['name']}' would leave the safe integer range (±(2**53-1))")
        state.put(op["name"], result)
    elif kind == "notes":
        if name == "note":
            if state.has_note(record_id):
                raise OpError(f"duplicate note record ID {record_id}")
            state.add_note(record_id, op, timestamp, sha)
        else:
            if not state.has_note(op["note_id"]):
                raise OpError(f"the vote references a missing note {op['note_id']}")
            state.add_vote(record_id, op, timestamp)


def _cell(row: dict) -> dict:
    """A table row that fits one replay cell (gh-aw: at most 64 KiB of canonical JSON)."""
    if len(canonical.dumps(row).encode("utf-8", "surrogatepass")) > CELL_MAX:
        raise OpError(f"the row is larger than one replay cell ({CELL_MAX} bytes of canonical JSON)")
    return row


def _apply_table(ledger: Ledger, op: dict, name: str, state: State) -> None:
    if name == "insert":
        key = op["value"][ledger.key]
        if state.get(key) is not None:
            raise OpError(f"table key {key!r} already exists; use update or upsert")
        state.put(key, _cell(op["value"]))
    elif name == "upsert":
        state.put(op["value"][ledger.key], _cell(op["value"]))
    elif name == "delete":
        state.delete(op["key"])
    else:
        row = state.get(op["key"])
        if row is None:
            raise OpError(f"table key {op['key']!r} does not exist; insert it first")
        merged = {**row, **op["patch"]}  # type: ignore[dict-item]
        _schema_check(ledger, merged, "the updated row")
        _cell(merged)
        state.put(op["key"], merged)
