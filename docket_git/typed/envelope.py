"""Typed ledger records: the hashed envelope, parsing a ledger file, and the canonical replay order.

A record is one canonical-JSON line with exactly ``version`` (1), ``id``
(``ldg-`` and a UUIDv4 shape), ``type`` (``ledger_append``, or the operation
in docket's older records), ``timestamp`` (UTC, milliseconds, ``Z``),
``parents`` (the sorted ``sha256:`` digests of the heads it was written on),
``payload`` (the operation) and ``sha`` (``sha256:`` of the canonical record
without ``sha``). Replay order is the layered topological order by parents
with SHA-256 order inside a layer, so it depends only on the set of records.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import json.scanner
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from docket_git.typed import canonical

VERSION = 1
#: A record names at most this many parents (the heads it was written on): gh-aw's limit, for every
#: ``ledger_append`` record (the format docket writes). Real histories have a handful.
MAX_PARENTS = 64
#: docket's older record form (the operation as ``type``) allowed this many; such records still replay.
LEGACY_MAX_PARENTS = 1024
#: The envelope type of gh-aw's record format (``typed.write``).
GH_AW_TYPE = "ledger_append"


def max_parents(rtype: str) -> int:
    """How many parents a record of this envelope type may name."""
    return MAX_PARENTS if rtype == GH_AW_TYPE else LEGACY_MAX_PARENTS


ID = re.compile(r"ldg-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
SHA = re.compile(r"sha256:[0-9a-f]{64}")
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
TYPE = re.compile(r"[^\x00-\x1f\x7f]{1,128}")
FIELDS = frozenset({"version", "id", "type", "timestamp", "parents", "payload", "sha"})


@dataclass(slots=True)
class Record:
    """One valid record as read from a ledger file, with its 1-based line number."""

    sha: str
    id: str
    type: str
    timestamp: str
    parents: tuple[str, ...]
    payload: object
    payload_text: str
    line: int
    raw: bytes


@dataclass(slots=True)
class Diagnostic:
    """Why a line or record did not take part in replay (or a warning about it)."""

    code: str
    line: int | None
    id: str | None
    detail: str

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "ledger"
        ident = f" ({self.id})" if self.id else ""
        return f"{where}{ident}: {self.code}: {self.detail}"


def record_id(txn: str, index: int) -> str:
    """The deterministic record ID of the index-th operation of transaction txn."""
    h = list(hashlib.sha256(f"{txn}:{index}".encode()).hexdigest()[:32])
    h[12] = "4"
    h[16] = "89ab"[int(h[16], 16) & 3]
    s = "".join(h)
    return f"ldg-{s[:8]}-{s[8:12]}-{s[12:16]}-{s[16:20]}-{s[20:]}"


def now() -> str:
    """The current UTC time as a record timestamp (milliseconds, ``Z``)."""
    stamp = datetime.now(UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


def seal(rid: str, rtype: str, timestamp: str, parents: list[str], payload: object) -> tuple[Record, bytes]:
    """A new record and its line (newline included); raises ``canonical.NotCanonical`` for a bad payload."""
    body = {
        "version": VERSION,
        "id": rid,
        "type": rtype,
        "timestamp": timestamp,
        "parents": parents,
        "payload": payload,
    }
    text = canonical.dumps(body, "payload")
    sha = canonical.digest(text)
    cut = text.rindex(',"timestamp":"')
    line = f'{text[:cut]},"sha":"{sha}"{text[cut:]}'
    payload_text = _payload_text(line)
    raw = (line + "\n").encode("utf-8")
    return Record(sha, rid, rtype, timestamp, tuple(parents), payload, payload_text, 0, raw), raw


def _payload_text(line: str) -> str:
    # Keys are sorted: id, parents, payload, sha, ... Neither id nor parents can hold the marker, and the
    # top-level sha is the last ',"sha":"' (the values after it, timestamp/type/version, cannot hold a quote).
    start = line.index(',"payload":') + 11
    return line[start : line.rindex(',"sha":"')]


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


#: Floats and long integers seen by the last decode: the only numbers json.dumps may not write canonically.
_UNUSUAL: list[str] = []
_DECODER = json.JSONDecoder(
    parse_constant=_reject_constant,
    parse_float=lambda s: _UNUSUAL.append(s) or float(s),
    parse_int=lambda s: int(s) if len(s) < 16 else _UNUSUAL.append(s) or int(s),
)


def parse_line_reference(raw: bytes, number: int) -> Record | Diagnostic:
    """The record on one line (without its newline), or the diagnostic saying why it is not one.

    The definition: decode the line, check every field, re-encode it canonically and compare, hash it.
    ``parse_line`` gives the same answer faster and falls back to this whenever a line is unusual.
    """
    unusual = _UNUSUAL
    unusual.clear()
    try:
        text = raw.decode("utf-8")
        data = _DECODER.decode(text)
    except (UnicodeDecodeError, ValueError) as exc:
        return Diagnostic("invalid-json", number, None, f"not a JSON line ({exc})")
    if not isinstance(data, dict):
        return Diagnostic("invalid-envelope", number, None, "a record is a JSON object")
    rid = data.get("id") if isinstance(data.get("id"), str) else None
    if data.get("version") != VERSION or type(data.get("version")) is not int:
        return Diagnostic("unsupported-version", number, rid, f"version must be {VERSION}")
    if set(data) != FIELDS:
        missing, extra = sorted(FIELDS - set(data)), sorted(set(data) - FIELDS)
        detail = f"missing field {missing[0]!r}" if missing else f"unknown field {extra[0]!r}"
        return Diagnostic(
            "invalid-envelope", number, rid, detail + f"; a record has exactly {', '.join(sorted(FIELDS))}"
        )
    fault = _envelope_fault(data)
    if fault:
        return Diagnostic("invalid-envelope", number, rid, fault)
    if unusual or text.count("[") + text.count("{") > canonical.MAX_DEPTH:
        expected = canonical.dumps_parsed(data)
    else:  # plain strings, small integers, shallow: json.dumps writes the canonical form
        expected = canonical.dumps_trusted(data)
    if expected is None:
        try:
            canonical.check(data, "record")
            detail = "the record has no canonical JSON form"
        except canonical.NotCanonical as exc:
            detail = str(exc)
        return Diagnostic("invalid-envelope", number, rid, detail)
    if expected != text:
        return Diagnostic(
            "not-canonical", number, rid, "the line is not in canonical JSON form (see docs/typed-ledgers.md)"
        )
    sha = data["sha"]
    cut = text.rindex(',"sha":"')
    body = text[:cut] + text[cut + 8 + len(sha) + 1 :]
    if canonical.digest(body) != sha:
        return Diagnostic("invalid-sha", number, rid, "sha does not match the record's content")
    return Record(
        sha, data["id"], data["type"], data["timestamp"], tuple(data["parents"]), data["payload"],
        _payload_text(text), number, raw,
    )  # fmt: skip


_HEX = rb'"sha256:[0-9a-f]{64}"'
#: Everything before the payload, in the one canonical form a record can have (keys in code point order).
_HEAD = re.compile(
    rb'\{"id":"(ldg-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})",'
    rb'"parents":\[((?:' + _HEX + rb"(?:," + _HEX + rb')*)?)\],"payload":'
)
#: Everything after it: a type that needs no JSON escape (other types take the reference path).
_TAIL = re.compile(
    rb',"sha":"(sha256:[0-9a-f]{64})","timestamp":"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}'
    rb'\.[0-9]{3}Z)","type":"([^"\\\x00-\x1f\x7f]{1,128})","version":1\}'
)
_SHA_FIELD = b',"sha":"sha256:'
#: 16 digits in a row: possibly an integer beyond the safe range (or just a long digit string): reference path.
_LONG_DIGITS = re.compile(r"[0-9]{16}")
_FLOATS: list[str] = []
_SCAN = json.scanner.make_scanner(
    json.JSONDecoder(parse_float=lambda s: _FLOATS.append(s) or float(s), parse_constant=_reject_constant)
)
_ENCODE = canonical.dumps_trusted


def parse_line(raw: bytes, number: int) -> Record | Diagnostic:
    """``parse_line_reference``'s answer for one line, in one pass over its bytes for a usual record.

    A line is a record iff it is its own canonical encoding with a matching hash. The envelope has
    one canonical form, matched on the bytes; only the payload is decoded and re-encoded; the hash
    is taken over the line's bytes without the sha field. Anything unusual (a float, a long digit
    run, deep nesting, an escaped type, any mismatch at all) goes to the reference, so the two
    agree on every line (``tests/test_typed_replay.py`` checks it).
    """
    found = _usual(raw, number)
    if found is not None and _canonical_payload(found):
        return found
    return parse_line_reference(raw, number)


def parse_lines(lines: list[tuple[int, bytes]]) -> list[Record | Diagnostic]:
    """``parse_line`` of every (number, line), with one re-encoding of all the usual payloads at once.

    Each usual payload text is exactly one JSON value, and no JSON value is a proper prefix of
    another followed by "," or "]", so the joined texts equal the encoding of the list of payloads
    iff each text equals its payload's encoding.
    """
    found = [_usual(raw, number) for number, raw in lines]
    usual = [r for r in found if r is not None]
    joined = "[" + ",".join([r.payload_text for r in usual]) + "]"
    if _long_digits(joined) or _ENCODE([r.payload for r in usual]) != joined:
        found = [r if r is not None and _canonical_payload(r) else None for r in found]
    return [
        r if r is not None else parse_line_reference(raw, number) for r, (number, raw) in zip(found, lines, strict=True)
    ]


def _canonical_payload(record: Record) -> bool:
    """The usual record's payload text is its canonical encoding (without a possibly unsafe integer)."""
    return not _LONG_DIGITS.search(record.payload_text) and _ENCODE(record.payload) == record.payload_text


#: Digits to "0", every other byte to "x": a run of 16 zeros is a run of 16 digits.
_DIGITS_ZERO = bytes(0x30 if 0x30 <= b <= 0x39 else 0x78 for b in range(256))


def _long_digits(text: str) -> bool:
    """Somewhere in text are 16 digits in a row (fast over megabytes, unlike the regex)."""
    return b"0" * 16 in text.encode("utf-8").translate(_DIGITS_ZERO)


#: Record types seen, so that 100k records of a few types hold a few strings.
_TYPES: dict[str, str] = {}


def _usual(raw: bytes, number: int) -> Record | None:
    """The record on a usual line, checked except for the payload's canonical form; None: ask the reference."""
    head = _HEAD.match(raw)
    if head is None:
        return None
    cut = raw.rfind(_SHA_FIELD)
    if cut <= head.end() or _TAIL.fullmatch(raw, cut) is None:
        return None
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    # The envelope's fields sit at fixed offsets from the line's start and from the sha field (the
    # patterns fix their widths). Before the payload the line is ASCII, so offsets there are the same
    # in bytes and characters; from the sha field on they count from its position in characters.
    at = cut if len(line) == len(raw) else line.rfind(',"sha":"sha256:')
    text = line[head.end() : at]
    if text.count("[") + text.count("{") > canonical.MAX_DEPTH - 2:
        return None
    _FLOATS.clear()
    try:
        payload, end = _SCAN(text, 0)
    except (StopIteration, ValueError):
        return None
    if end != len(text) or _FLOATS:
        return None
    sha = line[at + 8 : at + 79]
    digest = hashlib.sha256(raw[:cut])
    digest.update(raw[cut + 80 :])
    if "sha256:" + digest.hexdigest() != sha:
        return None
    listed = line[60 : head.end() - 12]
    if not listed:
        parents: tuple[str, ...] = ()
    elif len(listed) == 73:
        parents = (listed[1:72],)
    else:
        parents = tuple(listed[1:-1].split('","'))
        if len(parents) > MAX_PARENTS or any(a >= b for a, b in itertools.pairwise(parents)):
            return None  # the reference path decides (an older record may name up to 1024)
    rtype = line[at + 128 : -14]
    rtype = _TYPES.setdefault(rtype, rtype)
    return Record(sha, line[7:47], rtype, line[at + 94 : at + 118], parents, payload, text, number, raw)


def _envelope_fault(data: dict) -> str | None:
    if not isinstance(data["id"], str) or not ID.fullmatch(data["id"]):
        return "id must be ldg- and a UUIDv4-shaped hex digest"
    if not isinstance(data["type"], str) or not TYPE.fullmatch(data["type"]):
        return "type must be 1 to 128 characters without control characters"
    if not isinstance(data["timestamp"], str) or not TIMESTAMP.fullmatch(data["timestamp"]):
        return "timestamp must be UTC with milliseconds, e.g. 2026-01-01T00:00:00.000Z"
    parents = data["parents"]
    if type(parents) is not list or not all(type(p) is str and SHA.fullmatch(p) for p in parents):
        return "parents must be a list of sha256:<64 hex> digests"
    limit = max_parents(data["type"])
    if len(parents) > limit:
        return f"a {data['type']} record names at most {limit} parents, this one {len(parents)}"
    if any(a >= b for a, b in itertools.pairwise(parents)):
        return "parents must be unique and sorted"
    if not isinstance(data["sha"], str) or not SHA.fullmatch(data["sha"]):
        return "sha must be sha256:<64 hex>"
    return None


def split_lines(data: bytes) -> list[tuple[int, bytes]]:
    """(1-based line number, bytes) of every nonblank line; a torn last line is included."""
    return [(number, raw) for number, raw in enumerate(data.split(b"\n"), start=1) if raw and not raw.isspace()]


def read(data: bytes) -> tuple[list[Record], list[Diagnostic]]:
    """Every valid record of a ledger file (duplicates and conflicting IDs resolved) and the diagnostics."""
    lines = split_lines(data)
    parsed = parse_lines(lines)
    valid = [r for r in parsed if type(r) is Record]
    if len(valid) == len(parsed) and len({r.sha for r in valid}) == len(valid) == len({r.id for r in valid}):
        return valid, []  # the usual file: every line a record, no duplicates (what the loop below finds too)
    records: dict[str, Record] = {}
    by_id: dict[str, Record] = {}
    diagnostics: list[Diagnostic] = []
    torn = data.count(b"\n") + 1 if data and not data.endswith(b"\n") else None
    for (number, _), found in zip(lines, parsed, strict=True):
        if isinstance(found, Diagnostic):
            if number == torn:
                found = Diagnostic("truncated-record", number, found.id, "the last line has no newline (a torn write)")
            diagnostics.append(found)
            continue
        if found.sha in records:
            diagnostics.append(
                Diagnostic("duplicate-record", number, found.id, "the same record appears twice; skipped")
            )
            continue
        other = by_id.get(found.id)
        if other is not None:
            # Keep the smaller sha whatever the file order, so every clone keeps the same one.
            keep, drop = (other, found) if other.sha < found.sha else (found, other)
            diagnostics.append(
                Diagnostic(
                    "duplicate-id-conflict", drop.line, drop.id, f"another record (line {keep.line}) has this ID"
                )
            )
            if drop is other:
                del records[other.sha]
            else:
                continue
        records[found.sha] = found
        by_id[found.id] = found
    return list(records.values()), diagnostics


def order(records: list[Record]) -> tuple[list[Record], list[Diagnostic], list[str]]:
    """Records in canonical replay order, the order's diagnostics, and the sorted heads.

    The order is layered Kahn: a record's layer is the longest path from a
    root (parents absent from the ledger count as done), SHA-256 order within
    a layer. When every record comes after its parents in the list (as appends
    write them), one pass gives each record's layer and a sort by (layer, sha)
    is the order; otherwise rounds are found with in-degree counts. O(n log n) either way.
    """
    present = {r.sha: r for r in records}
    diagnostics: list[Diagnostic] = []
    referenced: set[str] = set()
    layer: dict[str, int] = {}
    forward = True  # every present parent seen before its child so far
    for r in records:
        depth = 0
        for p in r.parents:
            d = layer.get(p)
            if d is not None:
                if d >= depth:
                    depth = d + 1
            elif p in present:
                forward = False
            else:
                diagnostics.append(Diagnostic("missing-parent", r.line, r.id, f"parent {p} is not in the ledger"))
        referenced.update(r.parents)
        layer[r.sha] = depth
    if forward:
        keyed = sorted([(layer[r.sha], r.sha) for r in records])
        ordered = [present[sha] for _, sha in keyed]
        heads = sorted(present.keys() - referenced)
    else:
        ordered = _rounds(records, present, diagnostics)
        heads = sorted({r.sha for r in ordered} - referenced)
    return ordered, diagnostics, heads


def _rounds(records: list[Record], present: dict[str, Record], diagnostics: list[Diagnostic]) -> list[Record]:
    """Kahn in rounds: a record becomes ready in the round after its last parent, so its round is its
    layer (the longest path from a root), and each round sorted by sha is that layer in canonical order."""
    children: dict[str, list[str]] = {}
    waiting: dict[str, int] = {}
    for r in records:
        count = 0
        for p in r.parents:
            if p in present:
                children.setdefault(p, []).append(r.sha)
                count += 1
        waiting[r.sha] = count
    ordered: list[Record] = []
    ready = sorted(s for s, n in waiting.items() if n == 0)
    while ready:
        nxt = []
        for s in ready:
            ordered.append(present[s])
            for c in children.get(s, ()):
                waiting[c] -= 1
                if waiting[c] == 0:
                    nxt.append(c)
        nxt.sort()
        ready = nxt
    for r in records:
        if waiting[r.sha] > 0:
            diagnostics.append(Diagnostic("cycle", r.line, r.id, "the record's parents form a cycle; skipped"))
    return ordered
