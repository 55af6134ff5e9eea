"""Citation pins beside a notes ledger: ``.docket/ledgers/<name>.pins.jsonl``.

gh-aw refuses a citation holding any key but ``type``, ``path``, ``start_line`` and ``end_line``, and a
record holding any key but its seven, so the pins docket takes when it writes a note (the commit HEAD
named and the SHA-256 of the cited lines) live in a file of their own, one canonical JSON line per
citation::

    {"citation":0,"commit":"<40 hex>","content_sha256":"<64 hex>","record_id":"ldg-..."}

keyed by the note's record ID and the citation's position (``commit`` is absent in a repository
without commits). The file is append-only; when one key appears twice the last line wins (a retried
write whose first attempt died after its pins). A git merge takes the union of lines (``union``); the
pre-commit check refuses a malformed line or a committed line lost (``faults``). Replay joins the pins
into ``note_citations`` (``commit_sha``, ``content_sha256``); a note with none (written by gh-aw)
reads as "not pinned" in ``docket ledger verify``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from docket_git.repo import files

SUFFIX = ".pins.jsonl"
_RID = re.compile(r"ldg-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
_COMMIT = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_KEYS = frozenset({"citation", "commit", "content_sha256", "record_id"})
#: A citation's number is below gh-aw's 32 citations a note.
_MAX_CITATIONS = 32

Pins = dict[tuple[str, int], tuple[str | None, str]]


def path_for(ledger_file: Path) -> Path:
    """The pins file of the ledger file ``.docket/ledgers/<name>.jsonl``."""
    return ledger_file.with_name(ledger_file.name.removesuffix(".jsonl") + SUFFIX)


def is_pins_file(path: str) -> bool:
    """True for ``.docket/ledgers/<name>.pins.jsonl`` (the path git passes as %P)."""
    parts = path.replace("\\", "/").split("/")
    return len(parts) >= 3 and parts[-3:-1] == [".docket", "ledgers"] and parts[-1].endswith(SUFFIX)


def line(record_id: str, citation: int, pin: dict) -> bytes:
    """One pin's canonical line (newline included); pin holds ``content_sha256`` and maybe ``commit``."""
    body = {"citation": citation, "content_sha256": pin["content_sha256"], "record_id": record_id}
    if pin.get("commit"):
        body["commit"] = pin["commit"]
    return (json.dumps(body, sort_keys=True, separators=(",", ":")) + "\n").encode()


def lines_for(record_id: str, pins: list[dict]) -> bytes:
    """The lines of one note's pins (citations without a content hash have none)."""
    return b"".join(line(record_id, i, pin) for i, pin in enumerate(pins) if pin.get("content_sha256"))


def parse_line(raw: bytes) -> tuple[str, int, str | None, str] | None:
    """(record ID, citation, commit or None, content SHA-256) of a valid pin line (its canonical form), or None."""
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if (
        not isinstance(data, dict)
        or not data.keys() <= _KEYS
        or not {"citation", "content_sha256", "record_id"} <= set(data)
    ):
        return None
    rid, number, commit, digest = data["record_id"], data["citation"], data.get("commit"), data["content_sha256"]
    if (
        not (isinstance(rid, str) and _RID.fullmatch(rid))
        or not isinstance(digest, str)
        or not _HEX64.fullmatch(digest)
    ):
        return None
    if type(number) is not int or not 0 <= number < _MAX_CITATIONS:
        return None
    if commit is not None and not (isinstance(commit, str) and _COMMIT.fullmatch(commit)):
        return None
    pin = {"content_sha256": digest} | ({"commit": commit} if commit is not None else {})
    if line(rid, number, pin) != raw + b"\n":
        return None
    return rid, number, commit, digest


def parse(data: bytes) -> Pins:
    """Every valid pin of a pins file's bytes; the last line of a key wins; other lines are ignored."""
    out: Pins = {}
    for raw in data.split(b"\n"):
        found = parse_line(raw) if raw else None
        if found is not None:
            rid, number, commit, digest = found
            out[(rid, number)] = (commit, digest)
    return out


def read(ledger_file: Path, root: Path | None) -> Pins:
    """The pins of a ledger (empty when it has no pins file)."""
    try:
        return parse(files.read_bytes(path_for(ledger_file), root, files.LEDGER_CAP))
    except FileNotFoundError:
        return {}


def stamp(ledger_file: Path) -> str:
    """What says the pins file changed, cheaply (its size and mtime): part of a notes projection's fingerprint."""
    try:
        st = os.stat(path_for(ledger_file), follow_symlinks=False)
    except FileNotFoundError:
        return "none"
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"


def append(ledger_file: Path, root: Path, data: bytes) -> None:
    """Append pin lines to the pins file (created if need be) and fsync; a torn last line a killed
    writer left (no newline) is cut off first, so it never runs into the new lines."""
    if not data:
        return
    target = path_for(ledger_file)
    fd = files.open_fd(target, os.O_RDWR | os.O_CREAT, root)
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - (1 << 16))
        tail = os.pread(fd, size - start, start) if size else b"\n"
        if not tail.endswith(b"\n"):
            if start and b"\n" not in tail:
                start, tail = 0, os.pread(fd, size, 0)
            size = start + tail.rfind(b"\n") + 1
            os.ftruncate(fd, size)
        view, at = memoryview(data), size
        while view:
            wrote = os.pwrite(fd, view, at)
            view, at = view[wrote:], at + wrote
        os.fsync(fd)
    finally:
        os.close(fd)


def union(ours: bytes, theirs: bytes) -> bytes:
    """The bytes to append to ours so that it holds every line of both (a git merge; base is not needed)."""
    have = set(ours.split(b"\n"))
    extra, seen = [], set()
    for raw in theirs.split(b"\n"):
        if raw and raw not in have and raw not in seen:
            seen.add(raw)
            extra.append(raw + b"\n")
    payload = b"".join(extra)
    if payload and ours and not ours.endswith(b"\n"):
        payload = b"\n" + payload
    return payload


def _line_faults(staged: bytes) -> list[str]:
    for number, raw in enumerate(staged.split(b"\n"), start=1):
        if raw and parse_line(raw) is None:
            return [
                f"line {number}: not a citation pin ({{citation, commit?, content_sha256, record_id}} "
                f"in canonical JSON); docket writes this file, never edit it by hand"
            ]
    return []


def faults(rel: str, staged: bytes | None, parents: list[tuple[str, bytes]]) -> list[str]:
    """What is wrong with a staged pins file: a line that is not a pin, a committed line lost."""
    from docket_git.typed.staged import append_only

    return append_only(rel, staged, parents, "citation pins", _line_faults)
