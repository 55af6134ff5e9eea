"""The record format docket writes: gh-aw's, so that gh-aw's persistence and projection jobs accept it.

One operation becomes one record (``docs/typed-ledgers.md``, "Records and canonical JSON"):

- envelope ``type`` is always ``ledger_append``; the operation's name lives in ``payload.operation``;
- the deterministic record ID (``envelope.record_id(txn, index)``) is ``payload.id`` and the envelope
  ``id`` is a random ``ldg-`` UUIDv4 for every ledger but notes; for notes it is the envelope ``id``
  and the payload holds no ``id``;
- a note's citations hold only ``type``, ``path``, ``start_line`` and ``end_line``: the pins docket
  takes (``commit``, ``content_sha256``) go to the pins file beside the ledger (``typed.pins``);
- at most 64 parents (gh-aw's ``Too many ledger DAG heads``), exactly seven envelope keys, canonical JSON.

``record_lines`` is the whole format as one pure function (no file, no projection), for any storage.
"""

from __future__ import annotations

import uuid

from docket_git.typed import envelope

#: The envelope type gh-aw's persistence job gives every record.
GH_AW_TYPE = envelope.GH_AW_TYPE
#: gh-aw refuses to append after more heads than this ("Too many ledger DAG heads"), and reads a record
#: naming more as ``invalid-envelope``.
MAX_PARENTS = envelope.MAX_PARENTS
#: Keys gh-aw's persistence job reserves in a record (the operation and its ``id``): an untyped record
#: (which is the operation) may not hold them.
RESERVED = frozenset({"hash", "parents", "payload_sha", "sha", "timestamp", "transaction_id", "version", "id"})
#: gh-aw's record shape at persistence: at most this many keys per object, key names of at most this many bytes.
MAX_KEYS, MAX_KEY_BYTES = 128, 256
#: The citation keys that are docket's pins, never written into a record.
PIN_FIELDS = ("commit", "content_sha256")


class TooManyHeads(ValueError):
    """More heads than a record may name as parents."""


def unpinned(op: dict) -> tuple[dict, list[dict]]:
    """(the operation as the record holds it, each citation's pins ``{commit?, content_sha256?}``).

    Only a note has citations; any other operation is returned as it is, with no pins.
    """
    cites = op.get("citations") if op.get("operation") == "note" else None
    if not isinstance(cites, list):
        return op, []
    bare, pins = [], []
    for citation in cites:
        bare.append({k: v for k, v in citation.items() if k not in PIN_FIELDS})
        pins.append({k: citation[k] for k in PIN_FIELDS if k in citation})
    return {**op, "citations": bare}, pins


def payload(ledger_type: str | None, op: dict, rid: str) -> dict:
    """The record's payload: the operation, with the record ID as ``id`` except for notes."""
    return op if ledger_type == "notes" else {**op, "id": rid}


def envelope_id(ledger_type: str | None, rid: str) -> str:
    """The envelope ``id``: the record ID for notes, else a fresh random ``ldg-`` UUIDv4 (as gh-aw draws it)."""
    return rid if ledger_type == "notes" else f"ldg-{uuid.uuid4()}"


def record_id_of(record: envelope.Record) -> str:
    """The deterministic record ID of a record in either format: ``payload.id`` of a ``ledger_append``
    record that has one, else the envelope ``id`` (gh-aw's notes, and docket's older records)."""
    found = record.payload.get("id") if record.type == GH_AW_TYPE and isinstance(record.payload, dict) else None
    return found if isinstance(found, str) else record.id


def stored_operation(ledger_type: str | None, record_type: str, stored: object) -> object:
    """The operation a stored payload holds, as docket compares a retry: no ``payload.id``, no pins.

    Works for both formats (docket's older records keep pins in a note's citations).
    """
    if isinstance(stored, dict):
        if record_type == GH_AW_TYPE and ledger_type != "notes":
            stored = {k: v for k, v in stored.items() if k != "id"}
        if ledger_type == "notes":
            stored, _ = unpinned(stored)
    return stored


def check_shape(op: object, *, untyped: bool) -> str | None:
    """Why gh-aw's persistence job would refuse this operation as a record (its shape), or None.

    Objects hold at most 128 keys with names of at most 256 bytes of UTF-8; an untyped record may not
    use a reserved key (its top level becomes the payload beside ``id``).
    """
    if untyped and isinstance(op, dict):
        taken = sorted(RESERVED & op.keys())
        if taken:
            return (
                f"the record may not hold the key '{taken[0]}': gh-aw reserves {', '.join(sorted(RESERVED))} "
                f"(the record ID is written as 'id')"
            )
    todo = [op]
    while todo:
        value = todo.pop()
        if isinstance(value, dict):
            if len(value) > MAX_KEYS:
                return f"an object holds {len(value)} keys; gh-aw's limit is {MAX_KEYS}"
            for key in value:
                if len(key) * 4 > MAX_KEY_BYTES and len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
                    return f"a key name is longer than {MAX_KEY_BYTES} bytes of UTF-8 (gh-aw's limit)"
            todo.extend(value.values())
        elif isinstance(value, list):
            todo.extend(value)
    return None


def seal_operation(
    ledger_type: str | None, op: dict, rid: str, parents: list[str], timestamp: str
) -> tuple[envelope.Record, bytes]:
    """One operation (without pins) as a sealed record and its canonical line (newline included)."""
    if len(parents) > MAX_PARENTS:
        raise TooManyHeads(f"{len(parents)} heads, more than the {MAX_PARENTS} parents a record may name")
    return envelope.seal(envelope_id(ledger_type, rid), GH_AW_TYPE, timestamp, parents, payload(ledger_type, op, rid))


def record_lines(
    ledger_type: str | None,
    ops: list[dict],
    txn: str,
    parents: list[str],
    *,
    timestamp: str | None = None,
    first_index: int = 0,
) -> list[bytes]:
    """The canonical record lines of a batch of validated operations (pins removed), each naming the one
    before as its parent (the first names ``parents``, the sorted heads); record IDs from (txn, index).

    Raises ``TooManyHeads`` for more than 64 parents and ``canonical.NotCanonical`` for a bad payload.
    Pure: storage (a ledger file, a shard on ``ledgers/<name>``) writes the lines where it keeps them.
    """
    stamp = timestamp or envelope.now()
    out: list[bytes] = []
    heads = sorted(parents)
    for i, op in enumerate(ops):
        bare = unpinned(op)[0] if ledger_type == "notes" else op
        record, raw = seal_operation(ledger_type, bare, envelope.record_id(txn, first_index + i), heads, stamp)
        heads = [record.sha]
        out.append(raw)
    return out
