"""Find, lock, read and append the ledger file; keep the validated-prefix cache.

A read validates only what the cache has not seen: the cache remembers the
byte length and SHA-256 of the last fully validated prefix plus the index the
cross-record rules need. If the file only grew, the new lines are validated
against that index; if anything else changed, the whole file is validated
again. The cache is never trusted over the file.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import marshal
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from docket_git.errors import LedgerError, NoLedger, notice
from docket_git.ledger import cachefile, canonical, jsonl, model, recording
from docket_git.ledger.validate import Index, Invalid, check_line, parse_line

LEDGER_DIR = ".docket"
LEDGER_NAME = "ledger.jsonl"
CACHE_VERSION = 3
#: The cache is marshal data (several times faster to load than JSON at 100k IDs), whose
#: format may change between Python versions: a cache is read only by the one that wrote it.
_FORMAT = f"{CACHE_VERSION}/py{sys.version_info[0]}.{sys.version_info[1]}"


NO_LEDGER = "no ledger here; run 'docket init' in a git repository"


# -- discovery -------------------------------------------------------------


def _ancestors(start: Path) -> Iterator[Path]:
    start = start.resolve()
    yield start
    yield from start.parents


def find_ledger(start: Path) -> Path | None:
    """The nearest existing ``.docket/ledger.jsonl`` at or above start."""
    for directory in _ancestors(start):
        candidate = directory / LEDGER_DIR / LEDGER_NAME
        if candidate.is_file():
            return candidate
    return None


def find_repo_root(start: Path) -> Path | None:
    """The nearest directory at or above start holding ``.git`` (dir or file)."""
    for directory in _ancestors(start):
        if (directory / ".git").exists():
            return directory
    return None


def locate(start: Path) -> Path:
    """Where the ledger is, or would be created: existing ledger, ``.docket/``, repo root."""
    found = find_ledger(start)
    if found is not None:
        return found
    root = find_repo_root(start)
    for directory in _ancestors(start):
        if (directory / LEDGER_DIR).is_dir():
            return directory / LEDGER_DIR / LEDGER_NAME
        if directory == root:
            break
    if root is None:
        raise NoLedger(NO_LEDGER)
    return root / LEDGER_DIR / LEDGER_NAME


# -- locking ----------------------------------------------------------------


@contextlib.contextmanager
def locked(path: Path, *, exclusive: bool) -> Iterator[None]:
    """Hold the ledger's lock file (shared for reads, exclusive for writes)."""
    lock_path = path.with_name(path.name + ".lock")
    try:
        handle = open(lock_path, "a")  # noqa: SIM115 - held for the block
    except OSError:
        if exclusive:
            raise
        yield  # a read-only checkout can still be read
        return
    try:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        handle.close()


# -- the validated-prefix cache ------------------------------------------------


def _cache_file(path: Path) -> Path:
    return cachefile.cache_path("prefix", cachefile.ledger_key(path), "marshal")


@dataclass
class _Prefix:
    length: int
    lines: int
    index: Index
    digest: str = ""


def _load_cache(path: Path, data: bytes) -> _Prefix | None:
    """The cached prefix if the file still starts with it; else the longest checkpoint it still starts with.

    A branch switch or a rebase rewrites the ledger past some point; the
    checkpoints (at 1/2, 3/4, 7/8, ... of the cached prefix) let a read
    re-validate only from the last one the bytes still match.
    """
    try:
        raw = marshal.loads(_cache_file(path).read_bytes())
        if raw.get("version") != _FORMAT or raw.get("path") != str(path.resolve()):
            return None
        length = raw["length"]
        if length <= len(data) and hashlib.sha256(memoryview(data)[:length]).hexdigest() == raw["digest"]:
            retired_at = raw["retired"]
            index = Index(raw["max_seq"], raw["ids"], set(retired_at), raw["count"], retired_at)
            return _Prefix(length, raw["lines"], index, raw["digest"])
        return _from_checkpoint(raw, data)
    except Exception:  # missing, damaged or foreign: validate again, as without a cache
        return None


def _from_checkpoint(raw: dict, data: bytes) -> _Prefix | None:
    best = None
    digest = hashlib.sha256()
    pos = 0
    for end, line, expected in raw["checkpoints"]:
        if end > len(data):
            break
        digest.update(memoryview(data)[pos:end])
        pos = end
        if digest.hexdigest() != expected:
            break  # prefixes nest: no later checkpoint can match either
        best = (end, line, expected)
    if best is None:
        return None
    end, line, expected = best
    ids = {rid: n for rid, n in raw["ids"].items() if n <= line}
    retired_at = {rid: n for rid, n in raw["retired"].items() if n <= line}
    max_seq = model.seq(next(reversed(ids))) if ids else 0  # IDs only increase along the file
    return _Prefix(end, line, Index(max_seq, ids, set(retired_at), len(ids), retired_at), expected)


#: Checkpoints at these fractions of the prefix: 1/2, 3/4, 7/8, ... (the last few records matter most).
CHECKPOINT_DEPTH = 16


def _checkpoints(prefix: bytes) -> tuple[str, list[tuple[int, int, str]]]:
    """The prefix's SHA-256, and (byte end, line, SHA-256) at line ends near 1/2, 3/4, 7/8, ... of it."""
    size = len(prefix)
    targets = sorted({prefix.find(b"\n", size - (size >> j)) + 1 for j in range(1, CHECKPOINT_DEPTH + 1)})
    digest = hashlib.sha256()
    view = memoryview(prefix)
    pos = line = 0
    out: list[tuple[int, int, str]] = []
    for end in targets:
        if end <= pos or end >= size:
            continue
        digest.update(view[pos:end])
        line += prefix.count(b"\n", pos, end)
        pos = end
        out.append((end, line, digest.hexdigest()))
    digest.update(view[pos:])
    return digest.hexdigest(), out


def _save_cache(path: Path, prefix_bytes: bytes, lines: int, index: Index) -> None:
    target = _cache_file(path)
    digest, checkpoints = _checkpoints(prefix_bytes)
    payload = {
        "version": _FORMAT,
        "path": str(path.resolve()),
        "length": len(prefix_bytes),
        "digest": digest,
        "lines": lines,
        "max_seq": index.max_seq,
        "count": index.count,
        "ids": index.lines,
        "retired": index.retired_at,
        "checkpoints": checkpoints,
    }
    cachefile.write(target, marshal.dumps(payload))


# -- reading ------------------------------------------------------------------


@dataclass
class Snapshot:
    """One consistent read of a ledger file."""

    path: Path
    data: bytes = b""
    #: Parsed records in file order (empty when read without records).
    records: list[dict] = field(default_factory=list)
    #: Byte offset just past each record's line (newline included).
    ends: list[int] = field(default_factory=list)
    index: Index = field(default_factory=Index)
    #: Bytes that hold valid records; a torn final line lies beyond.
    valid_length: int = 0
    #: Line number of a skipped torn final line, if any.
    torn_line: int | None = None
    #: (length, SHA-256) of a prefix already hashed while reading, so revision() need not hash it again.
    hashed: tuple[int, str] = (0, "")
    #: Read without records: the records validation parsed anyway (those past the cached
    #: prefix, from byte ``tail_from``) and the offset just past each, for callers that
    #: would otherwise decode the same lines again.
    tail: list[dict] = field(default_factory=list)
    tail_ends: list[int] = field(default_factory=list)
    tail_from: int = 0

    def position(self, record_id: str) -> int | None:
        """The index of the record with this ID in ``records``, if any."""
        for i, record in enumerate(self.records):
            if record["id"] == record_id:
                return i
        return None

    def prefix_digest(self, i: int) -> str:
        """SHA-256 of the ledger bytes up to and including record i's line."""
        return canonical.sha256(memoryview(self.data)[: self.ends[i]])

    def revision(self) -> str:
        """SHA-256 of the bytes up to and including the last record's line."""
        if not self.ends:
            return canonical.sha256(b"")
        if self.hashed[0] == self.ends[-1]:
            return self.hashed[1]
        return canonical.sha256(memoryview(self.data)[: self.ends[-1]])


def _segments(data: bytes, start: int, first_line: int) -> Iterator[tuple[int, int, bytes]]:
    """(line number, end offset, bytes) of each line from start on, newline kept in end."""
    number = first_line
    pos = start
    size = len(data)
    while pos < size:
        nl = data.find(b"\n", pos)
        end = size if nl < 0 else nl + 1
        number += 1
        yield number, end, data[pos : end if nl < 0 else nl]
        pos = end


gc_paused = jsonl.gc_paused


def parse(path: Path, data: bytes, *, records: bool = True, use_cache: bool = True) -> Snapshot:
    """Validate ledger bytes (only past the cached prefix) and build a snapshot."""
    with gc_paused():
        return _parse(path, data, records=records, use_cache=use_cache)


def _parse(path: Path, data: bytes, *, records: bool, use_cache: bool) -> Snapshot:
    snap = Snapshot(path=path, data=data)
    cached = _load_cache(path, data) if use_cache else None
    start, line_no, index = (cached.length, cached.lines, cached.index) if cached else (0, 0, Index())
    snap.index = index
    snap.tail_from = start
    if cached:
        snap.hashed = (cached.length, cached.digest)
    if records and start:
        prefix_lines, snap.ends = jsonl.whole_lines(data, 0, start)
        parsed = jsonl.decode_many(prefix_lines)
        snap.records = parsed if parsed is not None else [json.loads(x) for x in prefix_lines]
    valid_end = start
    grew = False
    for number, end, raw in _segments(data, start, line_no):
        if not raw.strip():
            valid_end = end
            line_no = number
            continue
        try:
            record = parse_line(raw)
        except ValueError as exc:
            if end == len(data) and not data.endswith(b"\n"):
                snap.torn_line = number
                notice(
                    f"{path}: line {number}: skipped a torn final line "
                    "(no newline, not JSON); the next append removes it"
                )
                break
            raise LedgerError(f"line {number}: {exc}") from None
        try:
            check_line(record)
            index.check(record)
        except Invalid as exc:
            raise LedgerError(f"line {number}: {exc.where}: {exc.message}") from None
        index.add(record, number)
        if records:
            snap.records.append(record)
            snap.ends.append(end)
        else:
            snap.tail.append(record)
            snap.tail_ends.append(end)
        valid_end = end
        line_no = number
        grew = True
    snap.valid_length = valid_end
    if grew and use_cache:
        cut = data.rfind(b"\n", 0, valid_end) + 1  # cache whole lines only
        if cut == valid_end:
            _save_cache(path, data[:cut], line_no, index)
    return snap


def read(path: Path | None, *, records: bool = True, lock: bool = True) -> Snapshot:
    """Read and validate the ledger at path; a missing file reads as empty."""
    if path is None:
        return Snapshot(path=Path(LEDGER_DIR) / LEDGER_NAME)
    try:
        if lock and path.parent.is_dir():
            with locked(path, exclusive=False):
                data = path.read_bytes()
        else:
            data = path.read_bytes()
    except FileNotFoundError:
        return Snapshot(path=path)
    except OSError as exc:
        raise LedgerError(f"cannot read {path}: {exc.strerror}") from None
    return parse(path, data, records=records)


# -- appending -----------------------------------------------------------------


def append(path: Path, drafts: list[dict], *, dry_run: bool = False) -> list[dict]:
    """Allocate IDs, validate and append drafts all or nothing; return the records.

    Runs under the exclusive lock: the ledger is re-read (only its unvalidated
    tail is checked), each record validated against everything before it,
    then all lines written at once, flushed and fsynced. On any failure the
    file is left byte-identical.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with locked(path, exclusive=True):
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            data = b""
        snap = parse(path, data, records=False)
        records = recording.prepare(snap.index, drafts)
        if dry_run:
            return records
        keep = snap.valid_length
        payload = b"".join(canonical.line(r) for r in records)
        if keep and not data[:keep].endswith(b"\n"):
            payload = b"\n" + payload
        _write_at(path, data, keep, payload)
        new_bytes = data[:keep] + payload
        index = snap.index
        lines = new_bytes.count(b"\n")
        for offset, record in enumerate(records):
            index.add(record, lines - len(records) + offset + 1)
        _save_cache(path, new_bytes, lines, index)
    return records


def _write_at(path: Path, original: bytes, offset: int, payload: bytes) -> None:
    """Write payload at offset (dropping what followed), or restore the original bytes."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            os.lseek(fd, offset, os.SEEK_SET)
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            os.ftruncate(fd, offset + len(payload))
            os.fsync(fd)
        except OSError as exc:
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, original)
            os.ftruncate(fd, len(original))
            os.fsync(fd)
            reason = "disk full" if exc.errno == errno.ENOSPC else exc.strerror
            raise LedgerError(f"append: cannot write {path}: {reason}") from None
    finally:
        os.close(fd)


def write_synced(path: Path, data: bytes) -> None:
    """Write data to path (created or truncated) and fsync it before returning."""
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def fsync_dir(directory: Path) -> None:
    """Make a rename or a new file in directory durable (best effort: not every file system allows it)."""
    with contextlib.suppress(OSError):
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace path with data: temp file beside it, fsync, rename. All or nothing."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write_synced(tmp, data)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise LedgerError(f"cannot write {path}: {exc.strerror}") from None
    fsync_dir(path.parent)
