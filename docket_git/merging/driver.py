"""``docket merge-driver %O %A %B %P``: git's adapter around ``rebase.merge``.

Git starts this inside ``git merge``, ``git rebase`` and ``git cherry-pick``
with three temp files in the repository root. It reads them without locks
(and writes no lock file or cache next to them), merges, checks that ours plus
the tail is a valid ledger, and appends the tail to ``%A`` so ours' bytes stay
an exact prefix. Anything it cannot merge leaves conflict markers in ``%A``
and exits 1, so staging the file can never silently drop the other side.

The shared prefix is compared as bytes and trusted: both sides committed it.
Only the lines after it are parsed and validated; the prefix is consulted for
the few IDs the tails cite (binary search over its increasing IDs) and for
the records it already retired.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from docket_git.ledger import canonical, model
from docket_git.ledger.validate import Index, Invalid, check_line
from docket_git.merging import published as publishing
from docket_git.merging.published import Published
from docket_git.merging.rebase import MergeRefused, RawLedger, common_prefix, merge
from docket_git.repo import files

USAGE = "docket: usage: docket merge-driver BASE OURS THEIRS [PATH]  (git passes %O %A %B %P)"
_SUPERSEDING = re.compile(rb'"supersedes"\s*:\s*\[\s*"')


class CannotMerge(Exception):
    """The reason the driver gives up: printed as ``docket: cannot merge the ledger: <reason>``."""


class _PrefixIds(dict):
    """ID -> line for an index over a trusted prefix plus whatever is added after it.

    Membership in the prefix is a binary search on its (strictly increasing)
    IDs, so a 100k-record prefix is never parsed as a whole.
    """

    def __init__(self, ledger: RawLedger, end: int) -> None:
        super().__init__()
        self.ledger = ledger
        self.end = end
        self.top = model.seq(ledger[end - 1]["id"]) if end else 0

    def __contains__(self, rid: object) -> bool:
        if dict.__contains__(self, rid):
            return True
        if not model.is_id(rid):
            return False
        if model.seq(rid) > self.top:  # type: ignore[arg-type]
            return False
        return self.ledger.find(rid, self.end) is not None  # type: ignore[arg-type]


def _prefix_index(data: bytes, ledger: RawLedger, end: int) -> Index:
    """The validation index of ledger's first ``end`` records, from their last ID and superseding lines."""
    if not end:
        return Index(lines=_PrefixIds(ledger, 0))
    top = model.seq(ledger[end - 1]["id"])
    retired: set[str] = set()
    for found in _SUPERSEDING.finditer(data):
        start = data.rfind(b"\n", 0, found.start()) + 1
        stop = data.find(b"\n", found.end())
        record = RawLedger(data[start : stop if stop >= 0 else len(data)])[0]
        rid = record.get("id")
        if model.is_id(rid) and model.seq(rid) <= top:
            retired.update(record.get("supersedes") or ())
    return Index(max_seq=top, lines=_PrefixIds(ledger, end), retired=retired, count=end)


def _fork(index: Index) -> Index:
    lines = _PrefixIds(index.lines.ledger, index.lines.end)  # type: ignore[attr-defined]
    lines.update(index.lines)
    return Index(max_seq=index.max_seq, lines=lines, retired=set(index.retired), count=index.count)


def _validate(index: Index, records: list[dict], where) -> None:
    for i, record in enumerate(records):
        try:
            check_line(record)
            index.check(record)
        except Invalid as exc:
            raise CannotMerge(f"{where(i)}: {exc.where}: {exc.message}") from None
        index.add(record, 0)


def _parse(ledger: RawLedger, start: int, side: str) -> list[dict]:
    try:
        return list(ledger[start:])
    except ValueError as exc:
        raise CannotMerge(f"{side}, {exc}") from None


def merge_ledger(
    base: bytes,
    ours: bytes,
    theirs: bytes,
    *,
    strict: Callable[[], bool],
    sides: tuple[str, str] = ("this branch's ledger", "the other branch's ledger"),
) -> tuple[bytes, list[str]]:
    """The bytes to append to ours, and the report lines (``_merge_ledger``); raises ``CannotMerge``."""
    payload, report, _ = _merge_ledger(base, ours, theirs, strict=strict, sides=sides)
    return payload, report


def _merge_ledger(
    base: bytes,
    ours: bytes,
    theirs: bytes,
    *,
    strict: Callable[[], bool],
    sides: tuple[str, str] = ("this branch's ledger", "the other branch's ledger"),
) -> tuple[bytes, list[str], int]:
    """The bytes to append to ours, the report lines and how many renumbered; raises ``CannotMerge``.

    The first report lines are ``old -> new``, one per renumbered record.

    ``strict`` is a callable asked only when a both-supersede conflict occurs;
    when it returns True the merge is refused instead. ``sides`` names ours
    and theirs in messages.
    """
    from docket_git.migrate.convert import merge_schema_fault

    fault = merge_schema_fault(ours, theirs)
    if fault:
        raise CannotMerge(fault)
    o, a, b = RawLedger(base, lenient=True), RawLedger(ours), RawLedger(theirs)
    shared = common_prefix(a, b)
    ours_tail = _parse(a, shared, sides[0])
    theirs_tail = _parse(b, shared, sides[1])
    try:
        index = _prefix_index(ours, a, shared)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CannotMerge(f"the shared part of the ledger is unreadable: {exc}") from None
    theirs_index = _fork(index)
    _validate(index, ours_tail, lambda i: f"{sides[0]}, line {a.line_number(shared + i)}")
    _validate(theirs_index, theirs_tail, lambda i: f"{sides[1]}, line {b.line_number(shared + i)}")
    try:
        tail, moved, conflicts = merge(o, a, b, strict=False)
    except MergeRefused as exc:
        raise CannotMerge(str(exc)) from None
    if conflicts and strict():
        raise CannotMerge(conflicts[0].refusal() + " [merge.docket.strict is set]")
    _validate(index, tail, lambda i: f"the merged record {tail[i].get('id')}")
    report = [f"{old} -> {new}" for old, new in moved.items()]
    report += [c.describe() for c in conflicts]
    payload = b"".join(canonical.line(r) for r in tail)
    if payload and ours and not ours.endswith(b"\n"):
        payload = b"\n" + payload
    return payload, report, len(moved)


def _rank(side: RawLedger, shared: int, published: Sequence[Published]) -> tuple[int, str]:
    """(rank, label) of the highest published ref holding side's first record past the shared prefix."""
    if len(side) <= shared:
        return 0, ""
    for ref in published:
        if common_prefix(side, RawLedger(ref.data, lenient=True)) > shared:
            return ref.rank, ref.label
    return 0, ""


def kept_publisher(ours: bytes, theirs: bytes, published: Callable[[], Sequence[Published]]) -> str | None:
    """The published ref whose IDs theirs' new records carry, when they outrank ours'; None keeps ours.

    The rule (docs/merging.md, "which side keeps its IDs"): records a
    published ref holds keep their IDs; the default branch outranks the
    upstream; on a tie ours is kept.
    """
    try:
        a, b = RawLedger(ours), RawLedger(theirs)
        shared = common_prefix(a, b)
        if len(a) <= shared or len(b) <= shared:
            return None
        refs = published()
        theirs_rank, label = _rank(b, shared, refs)
        if not theirs_rank or theirs_rank <= _rank(a, shared, refs)[0]:
            return None
    except (ValueError, TypeError, AttributeError):
        return None  # an unreadable side: the plain merge names the line
    return label


def merge_published(
    base: bytes,
    ours: bytes,
    theirs: bytes,
    *,
    strict: Callable[[], bool],
    published: Callable[[], Sequence[Published]],
) -> tuple[bytes | None, bytes, list[str]]:
    """(the new prefix or None, the bytes to append, the report lines); raises ``CannotMerge``.

    The prefix is None when ours keeps its IDs (the payload is appended to
    ours, as ``merge_ledger``); it is theirs when a published ref holds
    theirs' new records and not ours' (``kept_publisher``): then ours' new
    records are the ones renumbered, and the first report line says so.
    ``published`` is asked only when both sides added records.
    """
    label = kept_publisher(ours, theirs, published)
    if label is None:
        payload, report = merge_ledger(base, ours, theirs, strict=strict)
        return None, payload, report
    sides = ("the other branch's ledger", "this branch's ledger")
    payload, report, moved = _merge_ledger(base, theirs, ours, strict=strict, sides=sides)
    what = f"; renumbered this branch's {', '.join(report[:moved])}" if moved else ""
    return theirs, payload, [f"kept {label}'s IDs{what}", *report[moved:]]


def _strict() -> bool:
    """merge.docket.strict from git config (asked only when a conflict makes it matter)."""
    import subprocess

    try:
        proc = subprocess.run(
            ["git", "config", "--type=bool", "--get", "merge.docket.strict"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.stdout.strip() == "true"


def _is_claim_ledger(path: str) -> bool:
    parts = path.replace("\\", "/").split("/")
    return len(parts) >= 2 and parts[-2:] == [".docket", "ledger.jsonl"]


def _read_or_empty(path: str) -> bytes:
    try:
        body = files.read_bytes(Path(path), None, files.LEDGER_CAP, follow=True)
    except (OSError, files.UnsafePath):
        return b""
    return body if not body or body.endswith(b"\n") else body + b"\n"


def _conflict_markers(ours: str, base: str, theirs: str) -> None:
    """Leave conflict markers in ours: git merge-file's, else whole-file ones."""
    import subprocess

    try:
        proc = subprocess.run(
            ["git", "merge-file", "-p", "-L", "ours", "-L", "base", "-L", "theirs", ours, base, theirs],
            capture_output=True,
            timeout=60,
        )
        text = proc.stdout if 0 < proc.returncode < 128 and b"<<<<<<<" in proc.stdout else None
    except (OSError, subprocess.SubprocessError):
        text = None
    if text is None:
        text = b"<<<<<<< ours\n" + _read_or_empty(ours) + b"=======\n" + _read_or_empty(theirs) + b">>>>>>> theirs\n"
    with open(ours, "wb") as handle:
        handle.write(text)


def _typed_merger_for(path: str) -> Callable[[bytes, bytes, bytes], tuple[bytes, list[str]]] | None:
    """The merge for a typed ledger git names by %P (``.docket/ledgers/<name>.jsonl``) or its pins file
    (``<name>.pins.jsonl``), or None."""
    from docket_git.typed import merge as typed
    from docket_git.typed import pins

    if typed.is_typed_ledger(path):
        return _typed_merge
    if pins.is_pins_file(path):
        return _pins_merge
    return None


def _pins_merge(base: bytes, ours: bytes, theirs: bytes) -> tuple[bytes, list[str]]:
    """A typed ledger's citation pins (``.docket/ledgers/<name>.pins.jsonl``): the union of lines."""
    from docket_git.typed import pins

    del base
    return pins.union(ours, theirs), []


def _typed_merge(base: bytes, ours: bytes, theirs: bytes) -> tuple[bytes, list[str]]:
    """A typed ledger: the union of records by sha (``typed.merge.union``)."""
    from docket_git.typed import merge as typed

    try:
        return typed.union(base, ours, theirs), []
    except typed.TypedConflict as exc:
        raise CannotMerge(str(exc)) from None


def _write(path: str, data: bytes, *, append: bool) -> None:
    fd = os.open(path, os.O_WRONLY | (os.O_APPEND if append else os.O_TRUNC))
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _merge_claims(target: str, base: bytes, ours: bytes, theirs: bytes) -> tuple[bytes | None, bytes, list[str]]:
    """The claims ledger's merge: published records keep their IDs during ``git merge`` and ``git pull``."""
    gdir = publishing.git_dir()
    what = publishing.operation(gdir)
    if what not in ("git merge", "git pull"):
        payload, report, moved = _merge_ledger(base, ours, theirs, strict=_strict)
        if moved:  # no merge commit will record this renumbering: this clone's journal does
            remember(gdir, theirs, report[:moved], payload, op=what, source=publishing.replayed_source(gdir, what))
        return None, payload, report
    return merge_published(base, ours, theirs, strict=_strict, published=lambda: publishing.read(gdir, target))


def remember(gdir, old_ledger: bytes, moves: list[str], payload: bytes, *, op: str, source: str) -> None:
    """Write the ``old -> new`` report lines of a renumbering to this clone's journal (``merging.journal``)."""
    import json

    from docket_git.merging import journal

    moved = dict(line.split(" -> ", 1) for line in moves)
    renumbered = []
    for line in payload.splitlines():
        try:
            renumbered.append(json.loads(line))
        except ValueError:
            continue
    journal.remember(gdir, journal.entries(old_ledger, moved, renumbered, op=op, source=source))


def _run(target: str, base_path: str, ours_path: str, theirs_path: str) -> list[str]:
    typed = None if _is_claim_ledger(target) else _typed_merger_for(target)
    if typed is None and not _is_claim_ledger(target):
        raise CannotMerge(f"{target} is not a ledger this docket can merge; merge it by hand")
    try:  # git's temp files: read like every other file (regular, capped, never blocking)
        base, ours, theirs = (
            files.read_bytes(Path(p), None, files.LEDGER_CAP, follow=True) for p in (base_path, ours_path, theirs_path)
        )
    except files.UnsafePath as exc:
        raise CannotMerge(str(exc)) from None
    except OSError as exc:
        raise CannotMerge(f"cannot read {exc.filename}: {exc.strerror}") from None
    if typed is not None:
        prefix, (payload, report) = None, typed(base, ours, theirs)
    else:
        prefix, payload, report = _merge_claims(target, base, ours, theirs)
    if prefix is not None:
        _write(ours_path, prefix + payload, append=False)
    elif payload:
        _write(ours_path, payload, append=True)
    return report


def main(argv: list[str]) -> int:
    """Run the driver on git's %O %A %B [%P]; 0 merged, 1 conflict markers left, 2 usage."""
    if len(argv) not in (3, 4) or any(a in ("-h", "--help") for a in argv):
        print(USAGE, file=sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    base_path, ours_path, theirs_path = argv[:3]
    target = argv[3] if len(argv) == 4 else ".docket/ledger.jsonl"
    try:
        report = _run(target, base_path, ours_path, theirs_path)
    except CannotMerge as exc:
        reason = str(exc)
    except OSError as exc:
        reason = f"cannot write {ours_path}: {exc.strerror}"
    except Exception as exc:  # a bug must still leave markers, never an untouched ours
        reason = f"internal error ({type(exc).__name__}: {exc}); please report it"
    else:
        for line in report:
            print(f"docket: {line}", file=sys.stderr)
        return 0
    print(f"docket: cannot merge the ledger: {reason}", file=sys.stderr)
    try:
        _conflict_markers(ours_path, base_path, theirs_path)
    except OSError as err:
        print(f"docket: could not write conflict markers into {ours_path}: {err.strerror}", file=sys.stderr)
    return 1
