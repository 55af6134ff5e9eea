"""A broken ledger in HEAD: which commit broke it, and the last good ledger readers answer from meanwhile.

A clone without the merge driver can commit git's conflict markers (``git
pull --no-rebase``, then ``git add -A && git commit``). Every clone that
pulls that commit then holds a ledger no reader can read, with no git
operation in progress. ``find_break`` walks HEAD's history to the commit that
introduced it; ``stand_in`` gives readers a copy of the last good ledger (that
commit's first parent's, the committer's own side) kept in the user cache dir,
with one line saying what is wrong and that ``docket repair`` fixes it.
``merging.repair`` rebuilds the ledger itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from docket_git.errors import LedgerError

COMMAND = "docket repair"


class NotRepaired(Exception):
    """Why the ledger was not repaired: printed as ``docket: <reason>``, exit 1."""


@dataclass
class Break:
    """The commit that committed a broken ledger, its parents, and what is wrong with it."""

    commit: str
    parents: list[str]
    why: str
    summary: str = ""

    @property
    def good(self) -> str:
        """The last good commit readers answer from: the first parent (the committer's own side)."""
        return self.parents[0]

    def what(self, rel: str) -> str:
        """One phrase: the fault and the commit that committed it."""
        why = self.why
        if "git conflict marker" in why:
            why = why[: why.index("git conflict marker")] + "git conflict markers"
        elif len(why) > 90:
            why = why[:89] + "…"
        summary = self.summary if len(self.summary) <= 50 else self.summary[:49] + "…"
        return f"{rel} was committed broken in {self.commit[:12]} ({summary!r}): {why}"


def fault_of(data: bytes | None, rel: str = ".docket/ledger.jsonl") -> str | None:
    """Why ledger bytes do not validate (the first fault), or None when they do (a torn last line is tolerated)."""
    from docket_git.ledger import store

    if not data:
        return None
    whole = data[: data.rfind(b"\n") + 1]
    try:
        store.parse(Path(rel), whole, records=False)
    except LedgerError as exc:
        return str(exc)
    return None


def find_break(root: Path, rel: str) -> Break | None:
    """The commit that introduced HEAD's broken ledger, or None when HEAD's ledger validates (or HEAD has none).

    From HEAD it steps to a parent whose ledger is also broken until none is;
    each distinct blob is validated once. Raises ``NotRepaired`` when the
    break goes back to a root commit (there is no good ledger before it).
    """
    import pygit2

    from docket_git.repo import gitio

    repo = gitio.open_repo(root)
    if repo is None:
        return None
    try:
        commit = repo.revparse_single("HEAD").peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return None
    faults: dict[str, str | None] = {}

    def fault(c) -> str | None:
        try:
            oid = c.tree[rel].id
        except (KeyError, ValueError):
            return None
        key = str(oid)
        if key not in faults:
            blob = repo[oid]
            faults[key] = fault_of(blob.data, rel) if isinstance(blob, pygit2.Blob) else None
        return faults[key]

    why = fault(commit)
    if why is None:
        return None
    while True:
        broken = [p for p in commit.parents if fault(p) is not None]
        if not broken:
            break
        commit = broken[0]
        why = fault(commit) or why
    parents = [str(p.id) for p in commit.parents]
    summary = commit.message.splitlines()[0] if commit.message.strip() else ""
    if not parents:
        raise NotRepaired(
            f"{rel} was committed broken in {str(commit.id)[:12]}, a commit with no parent, so there is no good "
            f"ledger to rebuild it from ({why}); fix that line by hand and commit it"
        )
    return Break(str(commit.id), parents, why, summary)


def _operation_in_progress(root: Path) -> bool:
    """True while a merge, rebase, cherry-pick or revert is open (its conflict is resolve-conflict's business)."""
    from docket_git.repo import gitio

    out = gitio.run_git(root, "rev-parse", "--absolute-git-dir")
    if out is None:
        return False
    git_dir = Path(os.fsdecode(out.strip()))
    if (git_dir / "rebase-merge").is_dir() or (git_dir / "rebase-apply").is_dir():
        return True
    return any((git_dir / name).is_file() for name in ("MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD"))


def committed_break(ledger: Path, data: bytes | None = None) -> tuple[Path, str, Break] | None:
    """(repository root, ledger path in it, the break) when the ledger is broken because HEAD's is; else None.

    None while a git operation is in progress, and when HEAD's ledger reads
    (the damage is in the work tree only: ``git checkout HEAD -- PATH`` undoes it).
    """
    from docket_git.repo import gitio

    root = gitio.work_tree_of(ledger.parent)
    if root is None or _operation_in_progress(root):
        return None
    try:
        rel = ledger.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None
    _, head = gitio.blob_at(root, "HEAD", rel)
    if head is None or (data is not None and head != data and fault_of(head, rel) is None):
        return None
    try:
        found = find_break(root, rel)
    except NotRepaired:
        return None
    return (root, rel, found) if found is not None else None


def stand_in(ledger: Path, data: bytes | None = None) -> tuple[Path, str, bytes] | None:
    """(a copy of the last good ledger, the one line saying so, its bytes) while HEAD's ledger is broken; else None."""
    from docket_git.ledger import db, store
    from docket_git.repo import gitio

    found = committed_break(ledger, data)
    if found is None:
        return None
    root, rel, broke = found
    _, good = gitio.blob_at(root, broke.good, rel)
    good = good or b""
    # Kept in the user cache dir, keyed by the ledger's real path.
    path = db.cache_path("last-good", ledger).with_suffix("") / ".docket" / "ledger.jsonl"
    try:
        if not path.is_file() or path.read_bytes() != good:
            path.parent.mkdir(parents=True, exist_ok=True)
            store.write_atomic(path, good)
    except (OSError, LedgerError):
        return None
    note = (
        f"{broke.what(rel)}; answering from the last good ledger ({broke.good[:12]}'s). "
        f"Run '{COMMAND}' to rebuild it, then commit it"
    )
    return path, note, good
