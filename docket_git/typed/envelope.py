"""Typed ledger records: the hashed envelope, parsing a ledger file, and the canonical replay order.

A record is one canonical-JSON line with exactly ``version`` (1), ``id``
(``ldg-`` and a UUIDv4-shaped digest of the writer's transaction and index),
``type`` (the operation), ``timestamp`` (UTC, milliseconds, ``Z``),
``parents`` (the sorted ``sha256:`` digests of the heads it was written on),
``payload`` (the operation) and ``sha`` (``sha256:`` of the canonical record
without ``sha``). Replay order is the layered topological order by parents
with SHA-256 order inside a layer, so it depends only on the set of records.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from docket_git.typed import canonical

VERSION = 1
ID = re.compile(r"^ldg-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
SHA = re.compile(r"^sha256:[0-9a-f]{64}$")
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
TYPE = re.compile(r"^[^\x00-\x1f\x7f]{1,128}$")
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


def parse_line(raw: bytes, number: int) -> Record | Diagnostic:
    """The record on one line (without its newline), or the diagnostic saying why it is not one."""
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


def _envelope_fault(data: dict) -> str | None:
    if not isinstance(data["id"], str) or not ID.match(data["id"]):
        return "id must be ldg- and a UUIDv4-shaped hex digest"
    if not isinstance(data["type"], str) or not TYPE.match(data["type"]):
        return "type must be 1 to 128 characters without control characters"
    if not isinstance(data["timestamp"], str) or not TIMESTAMP.match(data["timestamp"]):
        return "timestamp must be UTC with milliseconds, e.g. 2026-01-01T00:00:00.000Z"
    parents = data["parents"]
    if type(parents) is not list or not all(type(p) is str and SHA.match(p) for p in parents):
        return "parents must be a list of sha256:<64 hex> digests"
    if any(a >= b for a, b in itertools.pairwise(parents)):
        return "parents must be unique and sorted"
    if not isinstance(data["sha"], str) or not SHA.match(data["sha"]):
        return "sha must be sha256:<64 hex>"
    return None


def split_lines(data: bytes) -> list[tuple[int, bytes]]:
    """(1-based line number, bytes) of every nonblank line; a torn last line is included."""
    out = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if raw.strip():
            out.append((number, raw))
    return out


def read(data: bytes) -> tuple[list[Record], list[Diagnostic]]:
    """Every valid record of a ledger file (duplicates and conflicting IDs resolved) and the diagnostics."""
    records: dict[str, Record] = {}
    by_id: dict[str, Record] = {}
    diagnostics: list[Diagnostic] = []
    torn = len(data.split(b"\n")) if data and not data.endswith(b"\n") else None
    for number, raw in split_lines(data):
        found = parse_line(raw, number)
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
    a layer. Rounds are found with in-degree counts, so the cost is O(n log n), not O(n·depth).
    """
    present = {r.sha: r for r in records}
    children: dict[str, list[str]] = {}
    waiting: dict[str, int] = {}
    diagnostics: list[Diagnostic] = []
    referenced: set[str] = set()
    for r in records:
        count = 0
        for p in r.parents:
            referenced.add(p)
            if p in present:
                children.setdefault(p, []).append(r.sha)
                count += 1
            else:
                diagnostics.append(Diagnostic("missing-parent", r.line, r.id, f"parent {p} is not in the ledger"))
        waiting[r.sha] = count
    # Kahn in rounds: a record becomes ready in the round after its last parent, so its round is its
    # layer (the longest path from a root), and each round sorted by sha is that layer in canonical order.
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
    heads = sorted(r.sha for r in ordered if r.sha not in referenced)
    return ordered, diagnostics, heads
