"""``docket check`` for session files: their structure, and (pre-commit) that they only grow.

A session file changes in exactly two ways: blocks are appended, and the
frontmatter's ``last_updated`` moves (a v1.0 file also gains ``schema_version``
on its first write). Anything else done to a committed session file is a
fault, as is deleting one. Only ``context-ledger/`` at the repository root is
checked; legacy single files (``{target_dir}/context-ledger.md``) are not.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from docket_git.errors import LedgerError
from docket_git.repo import files
from docket_git.sessions import fmt
from docket_git.sessions.files import MAX_BYTES

LEDGER_DIR = "context-ledger"
MOVABLE = ("last_updated", "schema_version")


def structure_fault(text: str) -> tuple[int, str] | None:
    """(line, message) for the first structural fault of a session file's text, or None."""
    try:
        meta, _, _ = fmt.split_frontmatter(text)
        missing = [key for key in fmt.REQUIRED_KEYS if key not in meta]
        if missing:
            return 1, f"frontmatter has no {missing[0]!r}; a session file names its system, workflow and project"
        version = meta.get("schema_version")
        if version is not None and version not in ("1.0", fmt.SCHEMA_VERSION):
            return 1, f"schema_version {version!r} is not 1.0 or {fmt.SCHEMA_VERSION}"
        fmt.check_chain(fmt.parse_blocks(text))
    except fmt.FormatError as exc:
        return exc.line, exc.message
    return None


def grows_from(committed: str, staged: str) -> bool:
    """True when staged is committed with blocks appended (and last_updated/schema_version moved)."""
    try:
        old_meta, _old_count, old_body = fmt.split_frontmatter(committed)
        new_meta, _new_count, new_body = fmt.split_frontmatter(staged)
    except fmt.FormatError:
        return committed == staged or staged.startswith(committed)
    if "schema_version" in old_meta and new_meta.get("schema_version") != old_meta["schema_version"]:
        return False
    same = all(new_meta.get(k) == v for k, v in old_meta.items() if k not in MOVABLE)
    added = set(new_meta) - set(old_meta) - set(MOVABLE)
    return same and not added and new_body.startswith(old_body)


def first_changed_line(committed: str, staged: str) -> int:
    """The 1-based line of committed that staged changes or drops (frontmatter moves aside)."""
    old, new = committed.split("\n"), staged.split("\n")
    for number, line in enumerate(old, start=1):
        if (number > len(new) or new[number - 1] != line) and line.split(":", 1)[0] not in MOVABLE:
            return number
    return len(old)


def _decode(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def worktree_faults(root: Path) -> tuple[int, list[str]]:
    """(number of session files, a message per fault) for the work tree's ``context-ledger/``."""
    directory = root / LEDGER_DIR
    if directory.is_symlink():
        return 0, [f"{LEDGER_DIR}/ is a symlink; session files must live in a real directory"]
    if not directory.is_dir():
        return 0, []
    faults = []
    count = 0
    for entry in sorted(directory.iterdir()):
        if not fmt.is_session_name(entry.name):
            continue
        count += 1
        rel = f"{LEDGER_DIR}/{entry.name}"
        if entry.is_symlink() or not entry.is_file():
            faults.append(f"{rel}: not a regular file (a symlink?); a session file must be a plain file")
            continue
        try:
            text = _decode(files.read_bytes(entry, root, MAX_BYTES))
        except (OSError, LedgerError) as exc:
            faults.append(f"{rel}: cannot read: {getattr(exc, 'strerror', None) or exc}")
            continue
        if text is None:
            faults.append(f"{rel}: not UTF-8")
            continue
        fault = structure_fault(text)
        if fault:
            faults.append(f"{rel} line {fault[0]}: {fault[1]}")
    return count, faults


def staged_faults(root: Path, against: str | None) -> tuple[int, list[str]]:
    """(number of staged session files, faults): staged files are well-formed and only grew."""
    from docket_git.repo import gitio

    rev = against or "HEAD"
    staged = _names(gitio.run_git(root, "ls-files", "-z", "--", f"{LEDGER_DIR}/"))
    parents = [rev] + ([] if against else gitio.merge_heads(root))
    committed: dict[str, list[bytes]] = {}
    for parent in parents:
        for rel in _names(gitio.run_git(root, "ls-tree", "-r", "-z", "--name-only", parent, "--", f"{LEDGER_DIR}/")):
            _, blob = gitio.blob_at(root, parent, rel)
            if blob is not None:
                committed.setdefault(rel, []).append(blob)
    faults = []
    for rel in sorted(set(committed) - set(staged)):
        faults.append(
            f"{rel} is staged for deletion, and session files are append-only; restore it with "
            f"'git checkout HEAD -- {rel}'"
        )
    for rel in staged:
        data = gitio.staged_blob(root, rel)
        text = _decode(data) if data is not None else None
        if text is None:
            faults.append(f"{rel} (staged): not UTF-8")
            continue
        fault = structure_fault(text)
        if fault:
            faults.append(f"{rel} (staged) line {fault[0]}: {fault[1]}")
        olds = [t for t in (_decode(b) for b in committed.get(rel, [])) if t is not None]
        if olds and not any(grows_from(old, text) for old in olds):
            number = first_changed_line(olds[0], text)
            faults.append(
                f"{rel} (staged) line {number}: a committed line was changed or deleted, and session files "
                f"are append-only. Undo the edit with 'git checkout HEAD -- {rel}' and write a re-audit "
                "with 'docket session write' instead"
            )
    return len(staged), faults


def _names(out: bytes | None) -> list[str]:
    if not out:
        return []
    names = [os.fsdecode(raw) for raw in out.split(b"\0") if raw]
    return [n for n in names if "/" not in n[len(LEDGER_DIR) + 1 :] and fmt.is_session_name(n.rsplit("/", 1)[-1])]


def report(start: Path, *, staged: bool = False, against: str | None = None) -> int:
    """Print session-file faults the way ``docket check`` prints ledger faults; 1 if any, else 0."""
    from docket_git.ledger.store import find_repo_root

    root = find_repo_root(start) or start
    count, faults = staged_faults(root, against) if staged else worktree_faults(root)
    label = f"{LEDGER_DIR}/ (staged)" if staged else f"{LEDGER_DIR}/"
    if not faults:
        if count:
            print(f"docket: {label} reads cleanly, {count} session file{'s' if count != 1 else ''}")
        return 0
    print(f"docket: {label} has {len(faults)} fault(s)")
    for fault in faults:
        print(f"  {fault}")
    if staged:
        print("docket: commit blocked; fix the session file(s) above and 'git add' them again", file=sys.stderr)
    sys.stdout.flush()
    return 1
