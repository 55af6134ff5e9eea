"""The git merge of a typed ledger file: union of records by sha, ours kept as a byte prefix.

Records are content-addressed and replay order comes from parents and
hashes, never from file order, so a merge is the set union: ours, then each
record of theirs that ours lacks, in theirs' order. A line of theirs that is
not a valid record, or a record of theirs whose ID ours holds with other
content, refuses the merge (the driver then leaves conflict markers).
"""

from __future__ import annotations

from docket_git.typed import envelope, write


class TypedConflict(Exception):
    """Why two versions of a typed ledger cannot be merged by union."""


def _index(data: bytes, side: str, strict: bool) -> tuple[dict[str, str], list[envelope.Record]]:
    """(record ID -> sha, records in file order) of one side; a faulty line refuses the merge when strict.

    The record ID is the deterministic one wherever the record keeps it (``write.record_id_of``): a
    transaction retried on two branches is one record ID with two contents.
    """
    ids: dict[str, str] = {}
    records: list[envelope.Record] = []
    for number, raw in envelope.split_lines(data):
        found = envelope.parse_line(raw, number)
        if isinstance(found, envelope.Diagnostic):
            if strict:
                raise TypedConflict(f"{side}, {found}")
            continue
        ids.setdefault(write.record_id_of(found), found.sha)
        records.append(found)
    return ids, records


def union(base: bytes, ours: bytes, theirs: bytes) -> bytes:
    """The bytes to append to ours so that it holds every record of both sides; raises ``TypedConflict``.

    base is not needed: a record is either in ours or it is not.
    """
    del base
    our_ids, our_records = _index(ours, "this branch's ledger", strict=False)
    our_shas = {r.sha for r in our_records}
    _, their_records = _index(theirs, "the other branch's ledger", strict=True)
    tail: list[bytes] = []
    for record in their_records:
        if record.sha in our_shas:
            continue
        rid = write.record_id_of(record)
        other = our_ids.get(rid)
        if other is not None and other != record.sha:
            raise TypedConflict(
                f"record {rid} (the other branch's line {record.line}) differs from this branch's record "
                f"with the same ID; keep one of them by hand"
            )
        our_shas.add(record.sha)
        our_ids[rid] = record.sha
        tail.append(record.raw + b"\n")
    payload = b"".join(tail)
    if payload and ours and not ours.endswith(b"\n"):
        payload = b"\n" + payload
    return payload


def is_typed_ledger(path: str) -> bool:
    """True for ``.docket/ledgers/<name>.jsonl`` (the path git passes as %P), not its pins file."""
    parts = path.replace("\\", "/").split("/")
    return (
        len(parts) >= 3
        and parts[-3:-1] == [".docket", "ledgers"]
        and parts[-1].endswith(".jsonl")
        and not parts[-1].endswith(".pins.jsonl")
    )
