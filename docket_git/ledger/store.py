"""Find, lock, read and write the ledger file; validate its bytes from any point on.

This module knows files, locks and the batch journal; it keeps no derived
state. What has been validated already is the ledger index's to know
(``ledger.index``): it hands ``parse`` the point to start from and the
validation index of everything before it, so a reader or writer validates
only the lines the index has not seen.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

from docket_git.errors import LedgerError, NoLedger, notice
from docket_git.ledger import canonical, jsonl
from docket_git.ledger.validate import Index, Invalid, check_line, parse_line
from docket_git.repo import files, gitio

LEDGER_DIR = ".docket"
LEDGER_NAME = "ledger.jsonl"


NO_LEDGER = "no ledger here; run 'docket init' in a git repository"


# -- discovery -------------------------------------------------------------


def _ancestors(start: Path) -> Iterator[Path]:
    start = start.resolve()
    yield start
    yield from start.parents


def find_ledger(start: Path) -> Path | None:
    """The nearest ``.docket/ledger.jsonl`` at or above start (whatever it is: reading it says if it is unsafe)."""
    for directory in _ancestors(start):
        candidate = directory / LEDGER_DIR / LEDGER_NAME
        if os.path.lexists(candidate):
            return candidate
    return None


def root_of(path: Path) -> Path:
    """The directory holding the ledger's ``.docket/``: no link may stand between it and the ledger."""
    return path.parent.parent


def find_repo_root(start: Path) -> Path | None:
    """The nearest directory at or above start holding ``.git`` (dir or file)."""
    return gitio.work_tree_of(start)


def locate(start: Path) -> Path:
    """Where the ledger is, or would be created: existing ledger, ``.docket/``, repo root."""
    found = find_ledger(start)
    if found is not None:
        return found
    root = find_repo_root(start)
    for directory in _ancestors(start):
        if os.path.lexists(directory / LEDGER_DIR):
            return directory / LEDGER_DIR / LEDGER_NAME
        if directory == root:
            break
    if root is None:
        raise NoLedger(NO_LEDGER)
    return root / LEDGER_DIR / LEDGER_NAME


def no_ledger(start: Path) -> str:
    """What reading commands say in a repository with no ledger yet (they exit 0: nothing is wrong).

    Outside a git repository (and below no ledger) it raises ``NoLedger`` instead: every
    command, reading or writing, exits 1 there with the same line.
    """
    where = locate(start)
    return f"no ledger at {where} yet; run 'docket init' to start one (or record with 'docket claim ...')"


# -- creating -----------------------------------------------------------------

#: Files docket keeps beside the ledger that never belong in a commit: lock files, the
#: half-written new ledger of an interrupted `docket migrate`, and the temp file of a rewrite
#: (``.NAME.PID.HEX.tmp``) a killed process left.
IGNORED = ("*.lock", "*.migrating", "*.schema1", ".*.tmp")


def create(path: Path) -> None:
    """Create an empty ledger file (and ``.docket/``), never through a link."""
    root = root_of(path)
    files.check_dirs(path, root)
    try:
        path.parent.mkdir(exist_ok=True)
        os.close(files.open_fd(path, os.O_WRONLY | os.O_CREAT, root))
    except OSError as exc:
        raise LedgerError(f"cannot create {path}: {exc.strerror}") from None


def ensure_ignored(directory: Path) -> str | None:
    """Create ``.docket/.gitignore`` or add the patterns it lacks (other lines stay); say what changed."""
    ignore = directory / ".gitignore"
    root = directory.parent
    try:
        text = files.read_text(ignore, root)
    except FileNotFoundError:
        files.write_replace(ignore, "".join(f"{p}\n" for p in IGNORED).encode(), root)
        return f"created {ignore}"
    present = {line.strip() for line in text.splitlines()}
    missing = [p for p in IGNORED if p not in present]
    if not missing:
        return None
    lead = "" if not text or text.endswith("\n") else "\n"
    files.write_replace(ignore, (text + lead + "".join(f"{p}\n" for p in missing)).encode(), root)
    return f"added {', '.join(missing)} to {ignore}"


# -- locking ----------------------------------------------------------------


@contextlib.contextmanager
def locked(path: Path, *, exclusive: bool, leave_none: bool = False) -> Iterator[int | None]:
    """Hold the ledger's lock file (shared for reads, exclusive for writes); yield its descriptor.

    The lock file is never followed through a link. A read in a directory it
    cannot create the lock in (a read-only checkout) goes on unlocked
    (yielding None); a write cannot. ``leave_none``: a write that this call
    created the lock file for, and that fails (raises), removes the lock file
    again, so a refused write leaves no file behind. Whoever locks checks,
    once it holds the lock, that the file is still the one at the path (one
    removed meanwhile is opened again).
    """
    lock_path = path.with_name(path.name + ".lock")
    root = root_of(path)
    for attempt in range(RELOCKS + 1):
        created = False
        try:
            try:
                fd = files.open_fd(lock_path, os.O_RDWR | os.O_CREAT | (os.O_EXCL if leave_none else 0), root)
                created = leave_none
            except FileExistsError:  # (only with leave_none) kept, whoever made it
                fd = files.open_fd(lock_path, os.O_RDWR | os.O_CREAT, root)
        except OSError as exc:
            if exclusive and leave_none and isinstance(exc, FileNotFoundError):
                raise LockDirectoryGone(f"cannot lock {lock_path}: {exc.strerror}") from None
            if exclusive:
                raise LedgerError(f"cannot lock {lock_path}: {exc.strerror}") from None
            yield None  # a read-only checkout can still be read
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            if attempt == RELOCKS or _same_file(fd, lock_path):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # removed (by a refused write) while this waited: lock the file there now
    try:
        yield fd
    except BaseException:
        if created and _journal(fd) is None:
            with contextlib.suppress(OSError):
                os.unlink(lock_path)  # still held: nobody else can be using this file
        raise
    finally:
        os.close(fd)


#: How often a locker opens the lock file again after finding it removed while it waited (then it goes on).
RELOCKS = 20


class LockDirectoryGone(LedgerError):
    """The lock file's directory does not exist (a concurrent refused first write may have just removed it)."""


def _same_file(fd: int, path: Path) -> bool:
    try:
        here, there = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return (here.st_ino, here.st_dev) == (there.st_ino, there.st_dev)


# -- the batch journal -----------------------------------------------------------
#
# A batch of records is one write, but a process killed during that write
# leaves some of its lines behind. So before a batch is written, the lock file
# (ignored by git, held by the writer) records the ledger's length before the
# batch, the length after it, the batch's digest and a digest of the 4 KB
# before it; the record is cleared once the batch is fsynced. A reader or
# writer that finds the record set, over a file that still ends the same way
# before the batch, sees the batch as unfinished unless the file holds the
# whole batch: readers ignore its lines, the next writer cuts them off. A file
# rewritten since (a rebase, a checkout) no longer matches and the stale
# record is ignored.

_JOURNAL = b"docket-batch "


def _journal(fd: int | None) -> tuple[int, int, str, str] | None:
    """The batch recorded in the lock file: (length before, length after, digest, digest before), or None."""
    if fd is None:
        return None
    try:
        raw = os.pread(fd, 256, 0)
    except OSError:
        return None
    if not raw.startswith(_JOURNAL):
        return None
    try:
        before, after, digest, lead = raw[len(_JOURNAL) :].split(b"\n", 1)[0].split()
        return int(before), int(after), digest.decode(), lead.decode()
    except ValueError:
        return None


def _lead(data: bytes | memoryview, before: int) -> str:
    return canonical.sha256(memoryview(data)[max(0, before - 4096) : before])


def _unfinished(data: bytes, entry: tuple[int, int, str, str] | None) -> bool:
    """True when data holds the start of the journaled batch but not all of it."""
    if entry is None:
        return False
    before, after, digest, lead = entry
    if len(data) < before or _lead(data, before) != lead:
        return False  # rewritten since: a stale record
    return not (len(data) >= after and canonical.sha256(memoryview(data)[before:after]) == digest)


def current_bytes(path: Path, fd: int | None) -> bytes:
    """The ledger's bytes as readers see them (without a batch a killed writer left unfinished), under its lock fd."""
    data = files.read_bytes(path, root_of(path), files.LEDGER_CAP)
    entry = _journal(fd)
    return data[: entry[0]] if entry is not None and _unfinished(data, entry) else data


def _set_journal(fd: int, lead: str, before: int, after: int, digest: str) -> None:
    record = _JOURNAL + f"{before} {after} {digest} {lead}\n".encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, record, 0)
    os.fsync(fd)


def _clear_journal(fd: int) -> None:
    os.ftruncate(fd, 0)


# -- reading ------------------------------------------------------------------


class Snapshot:
    """One consistent read of a ledger file."""

    __slots__ = ("data", "ends", "hashed", "index", "path", "records", "tail", "tail_ends", "torn_line", "valid_length")

    def __init__(self, path: Path, data: bytes = b"", valid_length: int = 0) -> None:
        self.path = path
        self.data = data
        #: Parsed records in file order (empty when read without records).
        self.records: list[dict] = []
        #: Byte offset just past each record's line (newline included).
        self.ends: list[int] = []
        self.index = Index()
        #: Bytes that hold valid records; a torn final line lies beyond.
        self.valid_length = valid_length
        #: Line number of a skipped torn final line, if any.
        self.torn_line: int | None = None
        #: (length, SHA-256) of a prefix already hashed while reading, so revision() need not hash it again.
        self.hashed: tuple[int, str] = (0, "")
        #: Read without records: the records validation parsed (those past ``start``) and the
        #: offset just past each, for callers that would otherwise decode the same lines again.
        self.tail: list[dict] = []
        self.tail_ends: list[int] = []

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


gc_paused = jsonl.gc_paused


def parse(
    path: Path,
    data: bytes,
    *,
    records: bool = True,
    start: int = 0,
    line_no: int = 0,
    known: Index | None = None,
) -> Snapshot:
    """Validate ledger bytes from ``start`` on and build a snapshot.

    ``known`` is the validation index of the records before ``start`` (whose
    bytes end at a line end, ``line_no`` lines in), which the caller vouches
    for: the ledger index proves them. With ``records`` the snapshot holds
    every record, the prefix decoded without validation; otherwise only the
    records past ``start`` (``tail``).
    """
    snap = Snapshot(path=path, data=data)
    with gc_paused():
        if records and start:
            prefix_lines, snap.ends = jsonl.whole_lines(data, 0, start)
            parsed = jsonl.decode_many(prefix_lines)
            snap.records = parsed if parsed is not None else [json.loads(x) for x in prefix_lines]
        out, ends = (snap.records, snap.ends) if records else (snap.tail, snap.tail_ends)
        for found, found_ends in validated(snap, start=start, line_no=line_no, known=known):
            out.extend(found)
            ends.extend(found_ends)
    return snap


#: Bytes validated per slice (whole lines): a few thousand records, decoded at once and then let go.
SLICE = 1 << 20


def validated(
    snap: Snapshot,
    *,
    start: int = 0,
    line_no: int = 0,
    known: Index | None = None,
    size: int | None = None,
) -> Iterator[tuple[list, list[int]]]:
    """Validate ``snap.data`` from ``start`` on, a slice at a time: (records, the offset just past each).

    Sets ``snap.index`` (``known``, or a new index) as it goes, and
    ``snap.valid_length`` and ``snap.torn_line`` once the last slice is
    through. Raises ``LedgerError`` at the first line that does not validate:
    every line goes through ``parse_line``, ``check_line`` and
    ``Index.check``, the one statement of the rules. Callers that keep only
    what they need of each slice hold a bounded amount of memory.
    """
    data, path = snap.data, snap.path
    index = snap.index = known if known is not None else Index()
    total = len(data)
    size = size or SLICE
    torn = not data.endswith(b"\n")
    pos = valid_end = start
    number = line_no
    while pos < total:
        nl = data.find(b"\n", min(pos + size, total) - 1)
        stop = total if nl < 0 else nl + 1
        raws = data[pos:stop].split(b"\n")
        if nl >= 0:
            raws.pop()  # after the slice's last newline
        found: list[dict] = []
        found_ends: list[int] = []
        end = pos
        for raw in raws:
            number += 1
            end += len(raw) + 1
            if end > total:
                end = total  # the last line has no newline
            if not raw or raw.isspace():
                valid_end = end
                continue
            try:
                record = parse_line(raw)
            except ValueError as exc:
                if end == total and torn:  # the last line of the last slice: the loops end here
                    snap.torn_line = number
                    notice(
                        f"{path}: line {number}: skipped a torn final line "
                        "(no newline, not JSON); the next append removes it"
                    )
                    break
                raise LedgerError(f"line {number}: {exc}") from None
            try:
                check_line(record, raw)
                index.check(record)
            except Invalid as exc:
                raise LedgerError(f"line {number}: {exc.where}: {exc.message}") from None
            index.add(record, number)
            found.append(record)
            found_ends.append(end)
            valid_end = end
        pos = stop
        if found:
            yield found, found_ends
    snap.valid_length = valid_end


def read_with_stat(path: Path) -> tuple[tuple[int, int, int, int], bytes] | None:
    """(stat, bytes) of the ledger as readers see it, read under its shared lock; None when it does not exist.

    The stat (``db.file_stat``) is taken first, so it never vouches for bytes newer than those read.
    """
    from docket_git.ledger.db import file_stat

    try:
        if os.path.isdir(path.parent) and not os.path.islink(path.parent):
            with locked(path, exclusive=False) as fd:
                return file_stat(path), current_bytes(path, fd)
        stat = file_stat(path)
        return stat, files.read_bytes(path, root_of(path), files.LEDGER_CAP)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LedgerError(f"cannot read {path}: {exc.strerror}") from None


def read(path: Path) -> Snapshot:
    """Read and validate every line of the ledger at path; a missing file reads as empty.

    The reference read: commands read through ``ledger.index``, which
    validates only what it has not seen.
    """
    found = read_with_stat(path)
    return Snapshot(path=path) if found is None else parse(path, found[1])


# -- appending -----------------------------------------------------------------


def prepare_directory(path: Path, *, dry_run: bool) -> None:
    """Make sure ``.docket/`` exists for a write (never through a link); say so when this creates it."""
    root = root_of(path)
    files.check_dirs(path, root)
    fresh = not os.path.lexists(path.parent)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LedgerError(f"cannot create {path.parent}: {exc.strerror}") from None
    if fresh and not dry_run:
        # The first write in a repository where `docket init` never ran: keep the lock file out of
        # commits, and say once what init would add.
        ensure_ignored(path.parent)
        notice(f"created {path}; run 'docket init' so git merges ledgers itself and checks them before commits")


def journaled(fd: int) -> bool:
    """Under the exclusive lock: True when the lock file records a batch (one a killed writer may have left)."""
    return _journal(fd) is not None


def writer_bytes(path: Path, fd: int) -> bytes:
    """Under the exclusive lock: the ledger's bytes, after cutting off a batch a killed writer left unfinished."""
    try:
        data = files.read_bytes(path, root_of(path), files.LEDGER_CAP)
    except FileNotFoundError:
        data = b""
    except OSError as exc:
        raise LedgerError(f"cannot read {path}: {exc.strerror}") from None
    entry = _journal(fd)
    if entry is not None:
        if _unfinished(data, entry):
            data = _roll_back(path, data, entry[0])
        _clear_journal(fd)
    return data


def write_records(
    path: Path, fd: int, data: bytes, keep: int, records: list[dict], *, base: int = 0, ledger_fd: int | None = None
) -> bytes:
    """Under the exclusive lock: write records after the first ``keep`` bytes, fsynced; return the bytes written.

    ``data`` holds the ledger's bytes from offset ``base`` on (0: all of them); it must hold the 4 KB
    before ``keep`` (or start at 0) and every byte after it, which a failed write puts back.
    ``ledger_fd``: the ledger, open for writing, when the caller opened it. A batch of several
    records is journaled (``write_batch``).
    """
    at = keep - base
    payload = b"".join(canonical.line(r) for r in records)
    if keep and data[at - 1 : at] != b"\n":
        payload = b"\n" + payload
    return write_batch(path, fd, data, keep, payload, base=base, ledger_fd=ledger_fd, journal=len(records) > 1)


def write_batch(
    path: Path,
    fd: int,
    data: bytes,
    keep: int,
    payload: bytes,
    *,
    base: int = 0,
    ledger_fd: int | None = None,
    journal: bool = True,
) -> bytes:
    """Under the exclusive lock (``fd``): write payload (whole lines) after the first ``keep`` bytes, fsynced.

    The one all-or-nothing write of every append-only file docket keeps (the
    ledger, typed ledgers): with ``journal`` the batch is recorded in the lock
    file first and cleared once it is fsynced, so ``writer_bytes`` (and
    ``recover``) cut off what a killed writer left. ``data``, ``base`` and
    ``ledger_fd`` as for ``write_records``.
    """
    if base and keep - base < 4096:
        raise ValueError("write_batch: data must hold the 4 KB before keep")
    at = keep - base
    if journal:
        _set_journal(fd, _lead(data, at), keep, keep + len(payload), canonical.sha256(payload))
    try:
        _write_at(path, data[at:], keep, payload, ledger_fd)
    except LedgerError:
        if journal:
            _clear_journal(fd)  # the file is as it was: no batch for the next writer to cut off
        raise
    if journal:
        _clear_journal(fd)
    return payload


def recover(path: Path) -> None:
    """Before reading an append-only file whose readers cannot hide a batch: cut off one a killed writer left.

    For files read by something other than ``current_bytes`` (typed ledgers: their projection reads the
    file itself). A batch journaled in the lock file, seen under the shared lock, was left by a killed
    writer (a live one holds the exclusive lock until it clears it): it is cut off as the next writer would.
    """
    lock_path = path.with_name(path.name + ".lock")
    try:
        fd = files.open_fd(lock_path, os.O_RDONLY, root_of(path))
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        pending = _journal(fd) is not None
    finally:
        os.close(fd)
    if pending:
        with contextlib.suppress(OSError, LedgerError), locked(path, exclusive=True) as lock_fd:
            writer_bytes(path, lock_fd)  # a checkout this cannot write goes on as it is


def _roll_back(path: Path, data: bytes, length: int) -> bytes:
    """Cut off the lines of a batch a killed writer left unfinished; return what remains."""
    fd = files.open_fd(path, os.O_RDWR, root_of(path))
    try:
        os.ftruncate(fd, length)
        os.fsync(fd)
    finally:
        os.close(fd)
    notice(f"{path}: removed an unfinished batch a killed writer left after byte {length}")
    return data[:length]


def _write_at(path: Path, after: bytes, offset: int, payload: bytes, fd: int | None = None) -> None:
    """Write payload at offset (dropping what followed), or put back ``after``, the bytes that followed.

    The bytes before ``offset`` are never written, so a failure restores the
    file byte for byte from its tail alone. ``fd``: the ledger, when the caller opened it (left open).
    """
    own = fd is None
    if fd is None:
        try:
            fd = files.open_fd(path, os.O_RDWR | os.O_CREAT, root_of(path))
        except OSError as exc:
            raise LedgerError(f"append: cannot open {path}: {exc.strerror}") from None
    try:
        try:
            fault_point(fd, payload, offset)
            _pwrite_all(fd, payload, offset)
            os.ftruncate(fd, offset + len(payload))
            os.fsync(fd)
        except OSError as exc:
            _pwrite_all(fd, after, offset)
            os.ftruncate(fd, offset + len(after))
            os.fsync(fd)
            reason = "disk full" if exc.errno == errno.ENOSPC else exc.strerror
            raise LedgerError(f"append: cannot write {path}: {reason}") from None
    finally:
        if own:
            os.close(fd)


#: A test's fault hook: ``DOCKET_FAULT=kill-mid-batch`` makes the next append-only write kill its own process
#: (SIGKILL) once half its bytes are on disk, so crash tests need not guess when a write is under way.
FAULT_ENV = "DOCKET_FAULT"


def fault_point(fd: int, payload: bytes, offset: int) -> None:
    """The test hook before a write of payload at offset: with ``DOCKET_FAULT=kill-mid-batch``, die halfway."""
    if os.environ.get(FAULT_ENV) != "kill-mid-batch":
        return
    import signal

    half = len(payload) // 2
    _pwrite_all(fd, payload[:half], offset)
    os.fsync(fd)
    os.kill(os.getpid(), signal.SIGKILL)


def _pwrite_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


def read_from(fd: int, offset: int, size: int) -> bytes:
    """The bytes of the open file from offset up to size (fewer if it is shorter now)."""
    chunks = []
    while offset < size:
        chunk = os.pread(fd, size - offset, offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def write_synced(path: Path, data: bytes) -> None:
    """Write data to a fresh file at path (whatever was there is removed first, never written through) and fsync it.

    For docket's own scratch files beside the ledger (``ledger.jsonl.migrating``):
    a committed link by that name is unlinked, not followed.
    """
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    fd = files.open_fd(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, root_of(path))
    try:
        files.write_all(fd, data)
    finally:
        os.close(fd)


def fsync_dir(directory: Path) -> None:
    """Make a rename or a new file in directory durable (best effort: not every file system allows it)."""
    with contextlib.suppress(OSError):
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def write_atomic(path: Path, data: bytes, root: Path | None = None) -> None:
    """Replace path with data: a fresh temp file beside it, fsync, rename; the mode is kept. All or nothing.

    Never writes through a link at path; ``root`` (default: the directory
    holding ``.docket/`` for a ledger path) bounds the directories checked.
    """
    remove_stale_temps(path)
    try:
        files.write_replace(path, data, root)
    except OSError as exc:
        raise LedgerError(f"cannot write {path}: {exc.strerror}") from None


def remove_stale_temps(path: Path, names: str | None = None) -> None:
    """Remove the temp files killed rewrites of path left beside it, each with a notice.

    Rewrites (``write_atomic``, session writes) write ``.NAME.PID[.HEX].tmp``
    beside the file; one whose process is gone is stale. ``names``: a regular
    expression of the file names whose temp files to remove (default: path's
    own name). A link by that name is removed, never followed.
    """
    pattern = re.compile(rf"\.(?:{names or re.escape(path.name)})\.(\d+)(?:\.[0-9a-f]+)?\.tmp")
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return
    for entry in entries:
        found = pattern.fullmatch(entry.name)
        if found is None or _alive(int(found.group(1))):
            continue
        with contextlib.suppress(OSError):
            os.unlink(entry.path)
            notice(f"removed {entry.path}, the temp file of a write a killed process left")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        return True  # not ours to signal (or not a pid): leave it
    return True
