"""Citations that can be checked: pinned at write time, verified against the working tree later.

When a note is written each repository citation is pinned to the commit
HEAD names and to the SHA-256 of the cited lines as they are in the working
tree (the whole file when no lines are given). ``verify`` later says whether
the evidence still holds: unchanged, moved (the same lines elsewhere in the
file), changed, or missing.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from docket_git.errors import LedgerError
from docket_git.repo import files
from docket_git.typed.ops import OpError

MAX_BYTES = 16 * 1024 * 1024


def _read(root: Path, rel: str) -> bytes | None:
    """The cited file's bytes, or None when it is missing, not a regular file (a FIFO never blocks
    the open), over MAX_BYTES, or reached through a symlink (``repo.files.read_bytes``)."""
    try:
        return files.read_bytes(root / rel, root, MAX_BYTES)
    except (OSError, LedgerError):
        return None


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n")


def _hash(lines: list[bytes]) -> str:
    return hashlib.sha256(b"\n".join(lines)).hexdigest()


def line_range(citation: dict) -> tuple[int, int | None] | None:
    """The cited lines (first, last; last None: to the end of a start-only citation's line), None: the whole file.

    gh-aw's citation rules: both lines optional, ``end_line >= start_line`` when both are given, and an
    ``end_line`` alone means lines 1 to ``end_line``. A start-only citation cites that one line.
    """
    start, end = citation.get("start_line"), citation.get("end_line")
    if start is None and end is None:
        return None
    return (start or 1, end if end is not None else start)


def format_lines(citation: dict) -> str:
    """``:START-END``, ``:LINE`` or nothing (the whole file), as ``--cite`` takes it."""
    lines = line_range(citation)
    if lines is None:
        return ""
    first, last = lines
    return f":{first}" if first == last else f":{first}-{last}"


def pin(root: Path, citation: dict, commit: str | None, where: str) -> dict:
    """The citation with ``commit`` and ``content_sha256`` added; raises ``OpError`` when it cites nothing."""
    data = _read(root, citation["path"])
    if data is None:
        raise OpError(f"{where}.path {citation['path']!r} is not a regular file in the working tree")
    out = {k: v for k, v in citation.items() if k not in ("commit", "content_sha256")}  # fresh pins, never the caller's
    cited = line_range(citation)
    if cited is None:
        digest = hashlib.sha256(data).hexdigest()
    else:
        start, end = cited
        lines = _lines(data)
        if end > len(lines):
            raise OpError(f"{where}: {citation['path']} has {len(lines)} lines; line {end} does not exist")
        digest = _hash(lines[start - 1 : end])
    if commit:
        out["commit"] = commit
    out["content_sha256"] = digest
    return out


def verify(root: Path, citation: dict) -> tuple[str, str]:
    """(status, detail) of a citation now: unchanged, moved, changed, missing or unpinned.

    An unpinned citation (a note gh-aw wrote: its pins file holds nothing for it) is checked against
    the cited lines only: ``missing`` when the file or the lines are gone, else ``unpinned``.
    """
    data = _read(root, citation["path"])
    if data is None:
        return "missing", f"{citation['path']} is not in the working tree"
    pinned = citation.get("content_sha256")
    cited = line_range(citation)
    if not pinned:
        # A note gh-aw wrote (or one whose pins are lost): nothing to compare, but the cited lines must exist.
        if cited is not None and cited[1] > len(_lines(data)):
            have = len(_lines(data))
            return "missing", f"not pinned, and {citation['path']} has {have} lines; line {cited[1]} is gone"
        if cited is None:
            where = "the file exists, read it"
        elif cited[0] == cited[1]:
            where = f"line {cited[0]} exists, read it"
        else:
            where = f"lines {cited[0]}-{cited[1]} exist, read them"
        return "unpinned", f"not pinned: no content hash was taken when it was written; {where}"
    if cited is None:
        ok = hashlib.sha256(data).hexdigest() == pinned
        return ("unchanged", "") if ok else ("changed", "the file's content differs from when the note was written")
    start, end = cited
    lines = _lines(data)
    width = end - start + 1
    if end <= len(lines) and _hash(lines[start - 1 : end]) == pinned:
        return "unchanged", ""
    for first in range(0, max(0, len(lines) - width + 1)):
        if _hash(lines[first : first + width]) == pinned:
            return "moved", f"now at lines {first + 1}-{first + width}"
    return "changed", f"lines {start}-{end} no longer hold the cited content"
