"""Recovering a ledger git left conflicted: ``docket resolve-conflict``.

Git's index holds the three versions of a conflicted file as stages 1 (the
merge base), 2 (ours) and 3 (theirs), already oriented the way the merge
driver sees them: during a merge stage 2 is the branch being merged into;
during ``git rebase``, ``git pull --rebase`` and ``git cherry-pick`` it is the
commit being rebuilt onto (upstream), and stage 3 the commit being replayed.
Applying the driver's merge to them keeps stage 2 as an exact byte prefix, so
upstream's pushed records never change their IDs.

When the ledger was already staged by hand while a merge is still open
(``MERGE_HEAD`` exists, but the index has no stages left), the same three
versions are rebuilt from ``HEAD``, each ``MERGE_HEAD`` and their merge base.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from docket_git.merging.driver import CannotMerge, _merge_ledger, merge_published
from docket_git.repo import files


class NotResolved(Exception):
    """Why the ledger was not resolved: printed as ``docket: <reason>``, exit 1."""


@dataclass
class Resolution:
    """What ``resolve`` did: the report lines of each merge and what git operation to finish."""

    report: list[str] = field(default_factory=list)
    appended: int = 0
    operation: str = "merge"
    #: The renumberings no merge commit will record (a rebase's, a cherry-pick's), for this clone's journal.
    journal: list = field(default_factory=list)


def _git(root: Path, *args: str, data: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=root, input=data, capture_output=True, timeout=120)


def _git_dir(root: Path) -> Path:
    out = _git(root, "rev-parse", "--absolute-git-dir")
    return Path(os.fsdecode(out.stdout.strip())) if out.returncode == 0 else root / ".git"


def operation(root: Path) -> str | None:
    """The git operation in progress here: "merge", "rebase", "cherry-pick", "revert", or None."""
    git_dir = _git_dir(root)
    if (git_dir / "rebase-merge").is_dir() or (git_dir / "rebase-apply").is_dir():
        return "rebase"
    for name, what in (("MERGE_HEAD", "merge"), ("CHERRY_PICK_HEAD", "cherry-pick"), ("REVERT_HEAD", "revert")):
        if (git_dir / name).is_file():
            return what
    return None


def stages(root: Path, path: str) -> dict[int, bytes]:
    """The conflicted file's index stages (1 base, 2 ours, 3 theirs) that exist; empty when not conflicted."""
    out = _git(root, "ls-files", "-u", "-z", "--", path)
    found: dict[int, bytes] = {}
    if out.returncode != 0:
        return found
    for entry in out.stdout.split(b"\0"):
        if not entry:
            continue
        meta, _, _ = entry.partition(b"\t")
        _, sha, stage = meta.split()
        blob = _git(root, "cat-file", "blob", sha.decode())
        if blob.returncode != 0:
            raise NotResolved(f"git cannot read stage {stage.decode()} of {path}: {blob.stderr.decode().strip()}")
        found[int(stage)] = blob.stdout
    return found


def _show(root: Path, rev: str, path: str) -> bytes | None:
    out = _git(root, "show", f"{rev}:{path}")
    return out.stdout if out.returncode == 0 else None


def _merge_base(root: Path, one: str, two: str, path: str) -> bytes:
    out = _git(root, "merge-base", one, two)
    if out.returncode != 0:
        return b""
    return _show(root, out.stdout.decode().strip(), path) or b""


def _strict(root: Path) -> bool:
    out = _git(root, "config", "--type=bool", "--get", "merge.docket.strict")
    return out.stdout.strip() == b"true"


def _merged(root: Path, base: bytes, ours: bytes, theirs: bytes, done: Resolution, path: str = "") -> bytes:
    """The driver's merge of the two sides; raises NotResolved with the driver's reason.

    During a merge (``path`` given) a published side keeps its IDs, as the
    driver does in ``git merge`` and ``git pull``; otherwise ours does.
    """
    from docket_git.merging import published

    def refs() -> list[published.Published]:
        return published.read(_git_dir(root), path)

    try:
        if path:
            prefix, payload, report = merge_published(base, ours, theirs, strict=lambda: _strict(root), published=refs)
        else:
            payload, report, moved = _merge_ledger(base, ours, theirs, strict=lambda: _strict(root))
            prefix = None
            if moved:
                done.journal += _journal_entries(root, theirs, report[:moved], payload, done.operation)
    except CannotMerge as exc:
        raise NotResolved(f"the ledgers cannot be merged automatically: {exc}") from None
    done.report.extend(report)
    done.appended += payload.count(b"\n") - payload.startswith(b"\n")
    return (ours if prefix is None else prefix) + payload


def _journal_entries(root: Path, theirs: bytes, moves: list[str], payload: bytes, what: str) -> list:
    """The journal entries for the records this resolution renumbers (``merging.journal``)."""
    import json

    from docket_git.merging import journal, published

    moved = dict(line.split(" -> ", 1) for line in moves)
    renumbered = []
    for line in payload.splitlines():
        try:
            renumbered.append(json.loads(line))
        except ValueError:
            continue
    source = published.replayed_source(_git_dir(root), f"git {what}")
    return journal.entries(theirs, moved, renumbered, op="docket resolve-conflict", source=source)


def remember(root: Path, done: Resolution) -> None:
    """Write the resolution's renumberings to this clone's journal (after the ledger was written)."""
    from docket_git.merging import journal

    journal.remember(_git_dir(root), done.journal)


def abort_hint(what: str | None) -> str:
    """The command that gives up the operation in progress."""
    return f"git {what} --abort" if what else "git merge --abort"


def resolve(root: Path, path: str) -> tuple[bytes, Resolution]:
    """The resolved ledger bytes for the conflicted ledger at path (repo-relative); raises NotResolved."""
    what = operation(root)
    done = Resolution(operation=what or "merge")
    found = stages(root, path)
    if found:
        if 2 not in found or 3 not in found:
            side = "this side" if 2 not in found else "the other side"
            raise NotResolved(
                f"{path} was deleted on {side}, and the ledger is append-only; keep the other side's with "
                f"'git checkout --{'theirs' if 2 not in found else 'ours'} -- {path}' and 'git add {path}'"
            )
        keep = path if what == "merge" else ""
        return _merged(root, found.get(1, b""), found[2], found[3], done, keep), done
    heads = []
    if what == "merge":
        merge_head = files.read_text(_git_dir(root) / "MERGE_HEAD", None, follow=True)
        heads = [line.strip() for line in merge_head.splitlines() if line.strip()]
    ours = _show(root, "HEAD", path) if heads else None
    if ours is None:
        state = f"a {what} is in progress, but " if what else ""
        raise NotResolved(
            f"no conflicted ledger: {state}git's index holds no conflict for {path} and no merge is open; "
            "nothing to resolve"
        )
    from docket_git.merging.staged import missing_records

    staged = _git(root, "show", f":0:{path}").stdout
    if not any(missing_records(_show(root, head, path) or b"", staged) for head in heads):
        raise NotResolved(
            f"no conflicted ledger: {path} as staged already holds every record of the branch being merged; "
            "finish with 'git commit'"
        )
    result = ours
    for head in heads:
        theirs = _show(root, head, path)
        if theirs:
            keep = path if len(heads) == 1 else ""
            result = _merged(root, _merge_base(root, "HEAD", head, path), result, theirs, done, keep)
    return result, done


def write_and_stage(root: Path, path: str, data: bytes) -> None:
    """Write the resolved ledger (atomically) and stage it; raises NotResolved if git refuses."""
    target = root / path
    try:
        files.write_replace(target, data, root)  # never through a link at target, mode kept
    except files.UnsafePath as exc:
        raise NotResolved(str(exc)) from None
    except OSError as exc:
        raise NotResolved(f"cannot write {target}: {exc.strerror}") from None
    out = _git(root, "add", "--", path)
    if out.returncode != 0:
        raise NotResolved(f"wrote {target}, but 'git add' failed: {out.stderr.decode().strip()}")


def next_step(what: str) -> str:
    """What the user runs after the ledger is resolved."""
    if what in ("rebase", "cherry-pick", "revert"):
        return f"resolve any other conflicted files, then 'git {what} --continue'"
    return "resolve any other conflicted files, then 'git commit'"


def committed(start: Path) -> tuple[str, bytes | None] | None:
    """(the ledger's repository path, HEAD's bytes of it or None) for the ledger at or above start; None outside git."""
    from docket_git.ledger import store

    ledger = store.find_ledger(start)
    root = store.find_repo_root(ledger.parent if ledger else start)
    if ledger is None or root is None:
        return None
    rel = ledger.resolve().relative_to(root.resolve()).as_posix()
    return rel, _show(root, "HEAD", rel)


def in_progress(start: Path) -> tuple[str, str, bytes] | None:
    """(git operation, ledger path, HEAD's ledger bytes) while a merge, rebase or cherry-pick is open here."""
    from docket_git.ledger import store

    ledger = store.find_ledger(start)
    root = store.find_repo_root(ledger.parent if ledger else start)
    if ledger is None or root is None:
        return None
    what = operation(root)
    if what is None:
        return None
    rel, head = committed(start) or ("", None)
    return (what, rel, head) if head is not None else None
