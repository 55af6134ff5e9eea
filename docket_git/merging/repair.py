"""A ledger someone committed broken: find the commit that broke it, rebuild it, brief around it.

A clone without ``docket init`` merges the ledger as text; ``git add -A &&
git commit`` then commits git's conflict markers, and every clone that pulls
it has a ledger no reader can read. Nothing is in progress any more, so
``resolve-conflict`` has nothing to resolve. This module:

- ``find_break``: walks HEAD's history back to the commit that introduced a
  ledger that does not validate, and whose parents' ledgers all do;
- ``plan``: rebuilds the ledger as the merge driver would have merged those
  parents (``driver.merge_ledger``: the one statement of the merge), plus
  every record of the broken ledger that none of them has (records appended
  later, or typed into the conflict by hand), renumbered after them;
- ``stand_in``: for readers, a copy of the last good commit's ledger (the
  broken commit's first parent's) in the user cache dir, and one line saying
  what is wrong and what fixes it;
- ``accepts``: the pre-commit check lets exactly that repair (plus appended
  records) replace a broken committed ledger.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from docket_git.errors import LedgerError
from docket_git.ledger.broken import Break, NotRepaired, find_break


@dataclass
class Repair:
    """The rebuilt ledger, the merge's report lines and how many later records were appended."""

    data: bytes
    found: Break
    report: list[str] = field(default_factory=list)
    later: int = 0


def _strict(root: Path) -> bool:
    from docket_git.repo import gitio

    return (gitio.config_get(root, "merge.docket.strict") or "").lower() in ("true", "yes", "on", "1")


def plan(root: Path, rel: str, current: bytes, found: Break | None = None) -> Repair:
    """The repaired ledger for ``current`` (the broken ledger's bytes); raises ``NotRepaired``."""
    from docket_git.ledger import canonical, store
    from docket_git.merging import rebase
    from docket_git.merging.driver import CannotMerge, merge_ledger
    from docket_git.repo import gitio

    found = found if found is not None else find_break(root, rel)
    if found is None:
        raise NotRepaired(f"nothing to repair: {rel} as committed in HEAD reads cleanly")
    done = Repair(b"", found)
    ledgers = [gitio.blob_at(root, p, rel)[1] or b"" for p in found.parents]
    merged = ledgers[0]
    for parent, theirs in zip(found.parents[1:], ledgers[1:], strict=True):
        base = gitio.merge_base_blob(root, found.parents[0], parent, rel) or b""
        try:
            payload, report = merge_ledger(base, merged, theirs, strict=lambda: _strict(root))
        except CannotMerge as exc:
            raise NotRepaired(
                f"the driver cannot merge the ledgers of {found.commit[:12]}'s parents: {exc}; "
                f"rebuild {rel} by hand from 'git show {found.parents[0][:12]}:{rel}' with 'docket rebase'"
            ) from None
        merged += payload
        done.report.extend(report)
    # Every record of the broken ledger the merge did not bring: appended later, or typed in by hand.
    pool = [r for r in rebase.RawLedger(merged, lenient=True) if isinstance(r, dict)]
    readable = [r for r in rebase.RawLedger(current, lenient=True) if isinstance(r, dict) and "id" in r]
    mapping, later = _unmatched(readable, pool)
    if later:
        incoming = [rebase.translate(r, mapping) for r in later]
        try:
            tail, moved, conflicts = rebase.merge([], pool, [*pool, *incoming], strict=False)
        except rebase.MergeRefused as exc:
            raise NotRepaired(f"a record added after {found.commit[:12]} cannot be placed: {exc}") from None
        done.report += [f"{old} -> {new}" for old, new in moved.items()]
        done.report += [c.describe() for c in conflicts]
        if merged and not merged.endswith(b"\n"):
            merged += b"\n"
        merged += b"".join(canonical.line(r) for r in tail)
        done.later = len(tail)
    try:
        store.parse(Path(rel), merged, records=False)
    except LedgerError as exc:
        raise NotRepaired(f"the rebuilt ledger does not validate ({exc}); nothing was written") from None
    done.data = merged
    return done


def _unmatched(records: list[dict], pool: list[dict]) -> tuple[dict[str, str], list[dict]]:
    """(ID -> pool ID of each record with an equal in pool, the records without one), matched in order.

    ``rebase.match`` by record object: a broken ledger can hold one ID twice (both sides' ``c2``).
    """
    from docket_git.merging import rebase

    waiting = rebase._Waiting(list(pool))
    found: dict[str, str] = {}
    rest = []
    for original in records:
        hit = waiting.take(rebase.translate(original, found))
        if hit is None:
            rest.append(original)
        else:
            found[original["id"]] = hit["id"]
    return found, rest


def accepts(root: Path, rel: str, staged: bytes, committed: bytes | None) -> bool:
    """True when HEAD's ledger is broken and the staged one is its repair (plus appended records): the
    one rewrite of committed lines the pre-commit check lets through."""
    from docket_git.ledger.broken import fault_of
    from docket_git.merging.staged import extends

    if not committed or fault_of(committed, rel) is None:
        return False
    try:
        done = plan(root, rel, committed)
    except NotRepaired:
        return False
    return extends(done.data, staged)


def write(root: Path, rel: str, data: bytes) -> None:
    """Replace the ledger with its repair, atomically; raises ``NotRepaired`` when it cannot."""
    from docket_git.repo import files

    target = root / rel
    try:
        files.write_replace(target, data, root)  # never through a link at target, mode kept
    except files.UnsafePath as exc:
        raise NotRepaired(str(exc)) from None
    except OSError as exc:
        raise NotRepaired(f"cannot write {target}: {exc.strerror}") from None
