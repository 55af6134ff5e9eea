"""Typed ledger declarations: the ``[ledgers.<name>]`` tables of ``.docket/config.toml``.

A declaration names the ledger's type (absent: an untyped ledger of raw
records), an optional JSON Schema for values (inline ``schema`` table or
``schema_file``, relative to the repository root) and, for tables, the
``key`` field. Anything else is refused with the ledger and key named.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from docket_git.ledger.store import LedgerError
from docket_git.repo import files
from docket_git.typed import canonical

TYPES = ("log", "set", "map", "table", "counter", "notes")
#: The seed's need -> type table, printed by ``docket ledger types``.
NEEDS = (
    ("Ordered history", "log", "append(value)", "position, value"),
    ("Unique membership", "set", "add(value), remove(value)", "identity, value"),
    ("Latest value by key", "map", "put(key, value), delete(key)", "key, value"),
    ("Mutable structured rows", "table", "insert(value), update(key, patch), upsert(value), delete(key)", "key, value"),
    ("Numeric accumulation", "counter", "increment(name, amount), decrement(name, amount)", "name, value"),
    (
        "Evidence-backed agent assertions",
        "notes",
        "note(subject, note, reason, citations), vote(note_id, vote, reason?)",
        "notes, note_citations, note_votes, note_state",
    ),
)
SCHEMA_KEYWORDS = frozenset(
    {"type", "enum", "required", "properties", "additionalProperties", "items", "oneOf", "anyOf"}
)
JSON_TYPES = ("object", "array", "string", "number", "integer", "boolean", "null")
NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
CONFIG = Path(".docket") / "config.toml"
LEDGERS_DIR = Path(".docket") / "ledgers"
SOURCES = ("file", "branch")
#: gh-aw's defaults and bounds for ``max_segment_kb`` (a shard file) and ``max_record_kb`` (one record).
SEGMENT_KB, RECORD_KB, MAX_SEGMENT_KB, MAX_RECORD_KB = 100, 32, 10240, 32


class DeclarationError(LedgerError):
    """A bad ``[ledgers.*]`` declaration; the message names the ledger and the key."""


@dataclass(frozen=True)
class Ledger:
    """One declared ledger: its name, type (None = untyped records), value schema and table key."""

    name: str
    type: str | None = None
    schema: dict | None = None
    key: str | None = None
    extra: dict = field(default_factory=dict, compare=False)
    #: ``strict = true``: query and check fail where gh-aw's projection fails (``docket ledger query --strict``).
    strict: bool = field(default=False, compare=False)
    #: Where the records live: ``"file"`` (``.docket/ledgers/<name>.jsonl`` in the work tree) or ``"branch"``
    #: (gh-aw's shard files on the branch ``ledgers/<name>``, see ``typed.branch``).
    source: str = "file"
    #: gh-aw's size limits for a branch ledger, in KiB: a shard file, and one record.
    max_segment_kb: int = SEGMENT_KB
    max_record_kb: int = RECORD_KB

    def fingerprint(self) -> str:
        """A digest of everything that changes how the ledger replays (and, for a branch ledger, where from)."""
        what = {"name": self.name, "type": self.type, "schema": self.schema, "key": self.key}
        if self.source != "file":  # file ledgers keep the digest they always had: no projection is rebuilt
            what["source"] = self.source
        return canonical.digest(canonical.dumps(what))


def _check_schema(schema: object, where: str) -> None:
    """Refuse schema keywords outside the supported subset, naming the first one found."""
    if isinstance(schema, bool):
        return
    if not isinstance(schema, dict):
        raise DeclarationError(f"{where} must be a table (a JSON Schema object)")
    for key, value in schema.items():
        if key not in SCHEMA_KEYWORDS:
            raise DeclarationError(
                f"{where}: keyword '{key}' is not supported; use only {', '.join(sorted(SCHEMA_KEYWORDS))}"
            )
        if key == "additionalProperties" and value is not False:
            raise DeclarationError(f"{where}.additionalProperties: only false is supported")
        if key == "properties":
            if not isinstance(value, dict):
                raise DeclarationError(f"{where}.properties must be a table")
            for prop, sub in value.items():
                _check_schema(sub, f"{where}.properties.{prop}")
        elif key == "items":
            _check_schema(value, f"{where}.items")
        elif key in ("oneOf", "anyOf"):
            if not isinstance(value, list) or not value:
                raise DeclarationError(f"{where}.{key} must be a nonempty list of schemas")
            if len(schema) > 1:  # gh-aw's schema compiler refuses a combinator beside other keywords
                others = ", ".join(sorted(k for k in schema if k != key))
                raise DeclarationError(
                    f"{where}: {key} cannot stand beside other keywords ({others}); move them into each branch"
                )
            for i, sub in enumerate(value):
                _check_schema(sub, f"{where}.{key}[{i}]")
        elif key == "required" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise DeclarationError(f"{where}.required must be a list of strings")
        elif key == "enum" and not isinstance(value, list):
            raise DeclarationError(f"{where}.enum must be a list")
    # The subset is checked here by hand: importing jsonschema to check it would cost every command 0.1 s.
    kinds = schema.get("type")
    names = kinds if isinstance(kinds, list) else [kinds]
    if "type" in schema and not all(name in JSON_TYPES for name in names):
        raise DeclarationError(f"{where}.type: use {', '.join(JSON_TYPES)} (or a list of them)")


def parse_one(name: str, table: object, root: Path, where: str) -> Ledger:
    """One ``[ledgers.<name>]`` table as a Ledger; raises ``DeclarationError``."""
    here = f"{where}: ledgers.{name}"
    if not NAME.match(name):
        raise DeclarationError(
            f"{here}: a ledger name is lowercase letters, digits, '-' and '_', starting with a letter"
        )
    if not isinstance(table, dict):
        raise DeclarationError(f'{here} must be a table, e.g. [ledgers.{name}] type = "log"')
    unknown = sorted(set(table) - {"type", "schema", "schema_file", "key", "strict", "source", *_LIMITS})
    if unknown:
        raise DeclarationError(
            f"{here}.{unknown[0]}: unknown key; use type, schema, schema_file, key, strict, source, "
            f"max_segment_kb or max_record_kb"
        )
    strict = table.get("strict", False)
    if not isinstance(strict, bool):
        raise DeclarationError(f"{here}.strict: must be true or false")
    source = table.get("source", "file")
    if source not in SOURCES:
        raise DeclarationError(
            f'{here}.source: use "file" (.docket/ledgers/{name}.jsonl) or "branch" (gh-aw\'s shards on '
            f"the branch ledgers/{name})"
        )
    limits = _limits(table, source, here)
    ltype = table.get("type")
    if ltype is not None and ltype not in TYPES:
        raise DeclarationError(f"{here}.type: unknown type {ltype!r}; use one of {', '.join(TYPES)}")
    key = table.get("key")
    if key is not None and ltype != "table":
        raise DeclarationError(f"{here}.key: only a table ledger has a key; remove it")
    if ltype == "table":
        if key is None:
            raise DeclarationError(f'{here}.key: a table ledger needs key = "<field>" naming its primary key')
        if not isinstance(key, str) or not KEY.match(key):
            raise DeclarationError(f"{here}.key: must be a field name (a letter, then letters, digits or '_')")
    if "schema" in table and "schema_file" in table:
        raise DeclarationError(f"{here}.schema_file: give schema or schema_file, not both")
    schema = table.get("schema")
    if "schema_file" in table:
        rel = table["schema_file"]
        if not isinstance(rel, str) or rel.startswith("/") or ".." in Path(rel).parts:
            raise DeclarationError(f"{here}.schema_file: must be a path relative to the repository root")
        import json

        try:
            schema = json.loads(files.read_bytes(root / rel, root).decode("utf-8"))
        except files.UnsafePath as exc:
            raise DeclarationError(f"{here}.schema_file: {exc}") from None
        except OSError as exc:
            raise DeclarationError(f"{here}.schema_file: cannot read {rel}: {exc.strerror}") from None
        except RecursionError:
            raise DeclarationError(f"{here}.schema_file: {rel} is nested too deeply to be a schema") from None
        except ValueError as exc:
            raise DeclarationError(f"{here}.schema_file: {rel} is not JSON: {exc}") from None
        key_name = "schema_file"
    else:
        key_name = "schema"
    if schema is not None:
        if ltype in ("counter", "notes"):
            raise DeclarationError(f"{here}.{key_name}: a {ltype} ledger takes no schema; remove it")
        _check_schema(schema, f"{here}.{key_name}")
    return Ledger(name=name, type=ltype, schema=schema, key=key, strict=strict, source=source, **limits)


_LIMITS = ("max_segment_kb", "max_record_kb")


def _limits(table: dict, source: str, here: str) -> dict[str, int]:
    """gh-aw's ``max_segment_kb`` and ``max_record_kb`` of a branch ledger, checked against gh-aw's bounds."""
    given = {k: table[k] for k in _LIMITS if k in table}
    if given and source != "branch":
        first = next(iter(given))
        raise DeclarationError(f'{here}.{first}: only a ledger with source = "branch" has gh-aw\'s size limits')
    for k, v in given.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise DeclarationError(f"{here}.{k}: must be a positive whole number of KiB")
    record = given.get("max_record_kb", RECORD_KB)
    segment = given.get("max_segment_kb", SEGMENT_KB)
    if record > MAX_RECORD_KB:
        raise DeclarationError(f"{here}.max_record_kb: gh-aw allows 1 to {MAX_RECORD_KB}")
    if not record <= segment <= MAX_SEGMENT_KB:
        raise DeclarationError(f"{here}.max_segment_kb: gh-aw allows max_record_kb ({record}) to {MAX_SEGMENT_KB}")
    return {"max_segment_kb": segment, "max_record_kb": record}


def load(root: Path) -> dict[str, Ledger]:
    """Every ledger declared in root's ``.docket/config.toml`` (none when there is no file)."""
    path = root / CONFIG
    try:
        text = files.read_bytes(path, root).decode("utf-8")
    except FileNotFoundError:
        return {}
    except files.UnsafePath:
        raise
    except OSError as exc:
        raise DeclarationError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise DeclarationError(f"cannot read {path}: not UTF-8") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DeclarationError(f"cannot read {path}: {exc}") from None
    except ValueError:  # an integer of more than 4,300 digits, which Python will not convert
        raise DeclarationError(
            f"cannot read {path}: an integer is too long (Python converts at most 4,300 digits)"
        ) from None
    ledgers = raw.get("ledgers", {})
    if not isinstance(ledgers, dict):
        raise DeclarationError(f"{CONFIG}: ledgers must be a table of [ledgers.<name>] tables")
    return {name: parse_one(name, table, root, str(CONFIG)) for name, table in ledgers.items()}
