"""This clone's renumberings that no merge commit records: a small journal under the git directory.

A merge's renumbering can be recomputed from the merge commit (``history.renumbering``).
A rebase, ``git pull --rebase``, a cherry-pick, ``docket resolve-conflict`` and
``docket rebase`` leave no such commit: the replayed records simply get new IDs.
So whoever renumbers writes one line per record to
``<git dir>/docket/renumbered.jsonl`` (``git rev-parse --git-dir``: each
worktree and each clone keeps its own): the old and new ID, the operation,
the time, the source, the SHA-256 of the old ledger up to the record's line
(for ``ID@DIGEST``), the old ledger's git blob ID (for ``--since``) and the
renumbered record's content key hash (to find it again). It keeps the newest
``MAX_ENTRIES`` lines. Writing never fails the operation that renumbered.

This module imports nothing heavy: the merge driver writes it in its cold start.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

#: At most this many renumberings are kept (the oldest go first).
MAX_ENTRIES = 2000
NAME = "renumbered.jsonl"


@dataclass(frozen=True)
class Entry:
    """One remembered renumbering."""

    old: str
    new: str
    #: What renumbered: "git pull --rebase", "git rebase", "git cherry-pick", "docket resolve-conflict", ...
    op: str
    #: ISO 8601 time (UTC).
    ts: str
    #: Where the old ID came from: "bob's local main", "origin/main", a file.
    source: str
    #: SHA-256 of the old ledger's bytes up to and including the record's line.
    digest: str
    #: The old ledger's git blob ID ("" when it was not a git blob).
    blob: str
    #: A hash of the renumbered record's content key (``rebase.content_key``).
    key: str

    def when(self) -> str:
        """The time as ``2026-12-04 10:31`` in local time."""
        try:
            return datetime.fromisoformat(self.ts).astimezone().strftime("%Y-%m-%d %H:%M")
        except ValueError:
            return self.ts

    def describe(self, current: str | None) -> str:
        """``q2 from bob's local main is now q4 (renumbered by 'git pull --rebase', 2026-12-04 10:31)``."""
        where = self.source or "this clone"
        how = f"renumbered by '{self.op}', {self.when()}"
        if current is None:
            return f"{self.old} from {where} is no longer in the ledger ({how} to {self.new})"
        return f"{self.old} from {where} is now {current} ({how})"


def path_for(git_dir: Path) -> Path:
    """The journal file of the repository (or worktree) whose git directory is git_dir."""
    return Path(git_dir) / "docket" / NAME


def blob_id(data: bytes) -> str:
    """git's blob ID of data (``git hash-object``), computed without git."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def key_hash(key: str) -> str:
    """A short hash of a record's content key."""
    return hashlib.sha256(key.encode()).hexdigest()[:24]


def line_ends(data: bytes) -> dict[str, int]:
    """Record ID -> the byte offset just past its line, for every readable line of a ledger."""
    out: dict[str, int] = {}
    pos = 0
    for line in data.splitlines(keepends=True):
        pos += len(line)
        start = line.find(b'"id"')
        if start < 0:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("id"), str):
            out[record["id"]] = pos
    return out


def entries(
    old_ledger: bytes, moved: dict[str, str], renumbered: Sequence[dict], *, op: str, source: str, blob: bool = True
) -> list[Entry]:
    """The journal entries for records moved from old_ledger (their old IDs) to renumbered (their new records)."""
    from docket_git.merging.rebase import content_key

    if not moved:
        return []
    ends = line_ends(old_ledger)
    by_new = {r.get("id"): r for r in renumbered if isinstance(r, dict)}
    ts = datetime.now(UTC).isoformat(timespec="seconds")
    blob_name = blob_id(old_ledger) if blob else ""
    out = []
    for old, new in moved.items():
        end = ends.get(old)
        digest = hashlib.sha256(old_ledger[:end]).hexdigest() if end is not None else ""
        record = by_new.get(new)
        key = key_hash(content_key(record)) if record is not None else ""
        out.append(Entry(old, new, op, ts, source, digest, blob_name, key))
    return out


def remember(git_dir: Path | None, new: Sequence[Entry]) -> None:
    """Append entries to the journal, keeping the newest ``MAX_ENTRIES``; never raises."""
    if git_dir is None or not new:
        return
    path = path_for(git_dir)
    try:
        path.parent.mkdir(exist_ok=True)
        lines = [json.dumps(e.__dict__, ensure_ascii=False, separators=(",", ":")) + "\n" for e in new]
        try:
            with open(path, "rb") as handle:
                kept = handle.read().splitlines(keepends=True)
        except FileNotFoundError:
            kept = []
        if len(kept) + len(lines) <= MAX_ENTRIES:
            with open(path, "a", encoding="utf-8") as handle:
                handle.writelines(lines)
            return
        keep = (
            [line.decode("utf-8", "replace") for line in kept][-(MAX_ENTRIES - len(lines)) :]
            if len(lines) < MAX_ENTRIES
            else []
        )
        temp = path.with_name(f".{NAME}.{os.getpid()}.tmp")
        with open(temp, "w", encoding="utf-8") as handle:
            handle.writelines([*keep, *lines[-MAX_ENTRIES:]])
        os.replace(temp, path)
    except OSError:
        return


def read(git_dir: Path | None) -> list[Entry]:
    """Every remembered renumbering, oldest first (unreadable lines skipped)."""
    if git_dir is None:
        return []
    try:
        data = path_for(git_dir).read_bytes()
    except OSError:
        return []
    out = []
    fields = set(Entry.__dataclass_fields__)
    for line in data.splitlines():
        try:
            raw = json.loads(line)
        except ValueError:
            continue
        if isinstance(raw, dict) and set(raw) == fields and all(isinstance(v, str) for v in raw.values()):
            out.append(Entry(**raw))
    return out


def lookup(git_dir: Path | None, record_id: str, digest: str | None = None) -> list[Entry]:
    """The remembered renumberings of record_id (with a matching digest prefix, when given), newest first."""
    found = [e for e in read(git_dir) if e.old == record_id and (digest is None or e.digest.startswith(digest))]
    return found[::-1]


def current_of(entry: Entry, records: Sequence[dict]) -> str | None:
    """The ID the renumbered record has in records now: its new ID when it still holds it, else found by content."""
    from docket_git.merging.rebase import content_key

    if not entry.key:
        return entry.new if any(r.get("id") == entry.new for r in records) else None
    for record in records:
        if record.get("id") == entry.new and key_hash(content_key(record)) == entry.key:
            return entry.new
    for record in records:
        if key_hash(content_key(record)) == entry.key:
            return record["id"]
    return None
