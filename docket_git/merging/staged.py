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
    if b"\r\n" in staged and any(extends(c, staged.replace(b"\r\n", b"\n")) for _, c in parents):
        number = first_changed_line(committed, staged)
        return (
            f"{path} (staged) line {number}: its line ends were changed to CR LF; ledger lines end with LF "
            f"only. Convert the file with: sed -i 's/\\r$//' {path}, then 'git add {path}' again "
            "(docket init marks ledgers -text so git never converts them)"
        )
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


# -- the merge safety net: nothing of MERGE_HEAD's ledger may go missing ---------------------------

RESOLVE = "docket resolve-conflict"


def _records(data: bytes | None) -> list[dict]:
    """The readable records of a ledger (lenient: a line with conflict markers is skipped)."""
    from docket_git.merging.rebase import RawLedger

    if not data:
        return []
    ledger = RawLedger(data, lenient=True)
    return [r for r in ledger if isinstance(r, dict) and isinstance(r.get("id"), str)]


def missing_records(theirs: bytes, staged: bytes, base: bytes | None = None, ours: bytes | None = None) -> list[dict]:
    """theirs' records with no equal in staged (by content, as the driver matches them).

    A record of theirs that is in base but not in ours is one ours deliberately
    left behind (the driver does not re-import it either), so it is not missing.
    """
    from docket_git.merging.rebase import common_prefix, content_key, match

    theirs_records, staged_records = _records(theirs), _records(staged)
    shared = common_prefix(theirs_records, staged_records)
    mapping = {r["id"]: r["id"] for r in theirs_records[:shared]}
    found = match(theirs_records[shared:], staged_records[shared:], mapping)
    missing = [r for r in theirs_records[shared:] if r["id"] not in found]
    if missing and base:
        left_behind = {content_key(r) for r in _records(base)} - {content_key(r) for r in _records(ours)}
        missing = [r for r in missing if content_key(r) not in left_behind]
    return missing


def _clip(text: object, limit: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def merge_fault(root, path: str, staged: bytes) -> str | None:
    """While a merge is being committed: why the staged ledger lacks records of MERGE_HEAD's, or None."""
    from docket_git.repo import gitio

    heads = gitio.merge_heads(root)
    if not heads:
        return None
    _, ours = gitio.blob_at(root, "HEAD", path)
    for head in heads:
        _, theirs = gitio.blob_at(root, head, path)
        if not theirs:
            continue
        base = gitio.merge_base_blob(root, "HEAD", head, path)
        missing = missing_records(theirs, staged, base, ours)
        if not missing:
            continue
        named = "; ".join(f'{r["id"]} "{_clip(r.get("text", ""))}"' for r in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        return (
            f"{path} (staged) lacks {len(missing)} record(s) of the branch being merged ({head[:12]}): "
            f"{named}{more}. The merge dropped them (was git unable to run the docket merge driver? "
            f"see docket doctor). Run '{RESOLVE}' to merge both sides' ledgers as the driver does, then commit"
        )
    # A merge that kept a published side's IDs renumbers this side's records: they must all be there too.
    if ours and len(heads) == 1:
        _, theirs = gitio.blob_at(root, heads[0], path)
        base = gitio.merge_base_blob(root, "HEAD", heads[0], path)
        missing = missing_records(ours, staged, base, theirs)
        if missing:
            named = "; ".join(f'{r["id"]} "{_clip(r.get("text", ""))}"' for r in missing[:5])
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            return (
                f"{path} (staged) lacks {len(missing)} record(s) of this branch (HEAD): {named}{more}. "
                f"Was one side's ledger taken whole (-X theirs, git checkout --theirs)? Run '{RESOLVE}' "
                "to merge both sides' ledgers as the driver does, then commit"
            )
    return None
