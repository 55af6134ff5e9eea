"""What may be committed: the staged ledger must only grow.

``append_only_fault`` compares the staged ledger with the committed one(s)
as bytes: a committed line that changed or vanished is a fault. A merge
commit passes when the staged ledger extends any one of its parents' ledgers
(the merge driver keeps ours as an exact prefix). A later ``docket migrate``
plugs its rewrite in at ``is_migration_of``.
"""

from __future__ import annotations

UNDO = "git checkout HEAD -- {path}"


def is_migration_of(head_bytes: bytes, staged_bytes: bytes) -> bool:
    """True when staged_bytes is ``docket migrate``'s rewrite of head_bytes."""
    from docket_git.migrate.convert import is_migration_of as migrated

    return migrated(head_bytes, staged_bytes)


def extends(committed: bytes, staged: bytes) -> bool:
    """True when committed is an exact line prefix of staged."""
    if not staged.startswith(committed):
        return False
    return not committed or committed.endswith(b"\n") or staged[len(committed) : len(committed) + 1] in (b"", b"\n")


def first_changed_line(committed: bytes, staged: bytes) -> int:
    """The 1-based number of the first committed line that staged changes or drops."""
    old = committed.split(b"\n")
    new = staged.split(b"\n")
    for number, line in enumerate(old, start=1):
        if number > len(new) or new[number - 1] != line:
            return number
    return len(old)


def append_only_fault(parents: list[tuple[str, bytes]], staged: bytes, path: str) -> str | None:
    """Why staged may not follow any of the (label, ledger bytes) parents, or None when it may."""
    if not parents:
        return None
    for _, committed in parents:
        if extends(committed, staged) or is_migration_of(committed, staged):
            return None
    label, committed = parents[0]
    number = first_changed_line(committed, staged)
    if len(parents) > 1:
        return (
            f"{path} (staged) extends none of the merged commits' ledgers; "
            f"line {number} of {label}'s ledger is changed or missing. Let git merge ledgers "
            f"with the docket driver (docket init), or restore one side with "
            f"'git checkout {label} -- {path}' and fold the other in with 'docket rebase OTHER_LEDGER'"
        )
    return (
        f"{path} (staged) line {number}: a committed line was changed or deleted, and the ledger "
        f"is append-only. Undo a hand edit with '{UNDO.format(path=path)}' (then record the change "
        f"as a new record, e.g. one that supersedes it); to bring in another branch's records, "
        f"use 'docket rebase OTHER_LEDGER'"
    )
