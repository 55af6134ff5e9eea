"""What an ID the ledger does not hold names now, kept so that asking again reads one row.

Resolving an old ID walks up to ``history.search_limit`` ledger commits and
matches records by content (``renumbering.resolve``): seconds at 100k records.
The answer depends only on HEAD, the ledger's bytes (its revision), this
clone's journal of renumberings, the search limit, whether the clone is
shallow and the ID asked, so it is stored in the history database
(``history.cache``, table ``answers``) under a digest of all of them. A new
commit, an append, a journal entry or a deepened clone gives another key: the
stored answer is never consulted for a history it was not computed on.

``key_for`` reads those facts from files (no pygit2, no parse of the ledger),
so ``docket show`` can answer from the cache before Typer or the ledger
snapshot is loaded; ``settle`` turns an answer into the current ID or the
refusal, the one way for every caller.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

from docket_git.errors import LedgerError, warn


class Key:
    """Where an answer is stored: the digest of what it depends on, and the parts a computing command checks."""

    __slots__ = ("common", "digest", "head", "parts", "relpath")

    def __init__(self, parts: dict, common: Path) -> None:
        self.parts, self.common, self.relpath, self.head = parts, common, parts["relpath"], parts["head"]
        self.digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()

    def other(self, ref: str) -> Key:
        """The key of another question about the same history (``log c12`` beside ``c12``)."""
        return Key({**self.parts, "ref": ref}, self.common)


def _file_digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def key_for(start: Path, ledger: Path, ref: str, revision: str | None = None) -> Key | None:
    """The key of ref's answer for the ledger at ledger (in the repository holding start); None when none can be had.

    ``revision``: the ledger's (``index.revision``), when the caller has its index open.
    """
    from docket_git.history.renumbering import search_limit
    from docket_git.ledger import index
    from docket_git.merging import journal
    from docket_git.repo import gitio

    dirs = gitio._git_dirs(start)
    head = gitio.head_commit(start)
    if dirs is None or not head:
        return None
    git_dir, common = dirs
    root = git_dir.parent if git_dir.name == ".git" else None
    if root is None:  # a linked work tree: its .git file sits in the work tree's root
        for directory in (start.resolve(), *start.resolve().parents):
            if (directory / ".git").is_file():
                root = directory
                break
        else:
            return None
    try:
        relpath = ledger.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None
    if revision is None:
        with index.opened(ledger) as ix:
            revision = index.revision(ix)[0]
    parts = {
        "relpath": relpath,
        "head": head,
        "limit": search_limit(root),
        "revision": revision,
        "journal": _file_digest(journal.path_for(git_dir)),
        "shallow": _file_digest(common / "shallow"),
        "ref": ref,
    }
    return Key(parts, common)


def stored(key: Key) -> object | None:
    """Whatever is stored under key (JSON), or None."""
    from docket_git.history.cache import HistoryCache, path_for

    cache = HistoryCache(path_for(key.common))
    try:
        return cache.answer(key.digest)
    finally:
        cache.close()


def lookup(key: Key) -> dict | None:
    """The stored answer (``answer``) under key, or None."""
    found = stored(key)
    ok = isinstance(found, dict) and isinstance(found.get("found"), list) and isinstance(found.get("limit"), int)
    return found if ok else None


def answer(found: list, limit: int, shallow: bool) -> dict:
    """An answer as stored: the resolutions (``renumbering.Resolution``), the search limit, the shallow flag."""
    return {"found": [asdict(r) for r in found], "limit": limit, "shallow": shallow}


def _shallow(shallow: bool) -> str:
    return (
        "; this clone is shallow, so older history is not here ('git fetch --unshallow' fetches it)" if shallow else ""
    )


def _pick(found: list) -> str:
    """How to name one of several records an old ID named on different branches."""
    now = ", ".join(dict.fromkeys(r.current for r in found if r.current is not None))
    return f"give the current ID of the one you mean ({now}), or ID@DIGEST (a briefing header prints it)"


def row(ref: str, stored: dict) -> tuple[dict, int]:
    """``docket resolve``'s row for ref from its answer, and its exit code (1: no single current ID); says why on stderr."""
    from docket_git.history.renumbering import Resolution

    found = [Resolution(**r) for r in stored["found"]]
    out: dict = {"ref": ref, "current": None, "from": "", "merges": [], "candidates": []}
    if len(found) == 1:
        res = found[0]
        out.update(current=res.current, merges=res.merges)
        out["from"] = res.branch or res.source
        if res.current is None:
            warn(res.describe())
            return out, 1
        return out, 0
    if found:
        out["candidates"] = [r.current for r in found]
        for res in found:
            warn(res.describe())
        warn(f"{ref} is ambiguous: {_pick(found)}")
        return out, 1
    warn(f"history does not know {ref}{_shallow(bool(stored.get('shallow')))}")
    return out, 1


def settle(ref: str, stored: dict) -> str:
    """The current ID of ref from its answer (saying on stderr how history resolved it), or LedgerError naming why not."""
    from docket_git.history.renumbering import Resolution, parse_ref

    record_id, digest = parse_ref(ref)
    found = [Resolution(**r) for r in stored["found"]]
    limit, shallow = stored["limit"], bool(stored.get("shallow"))
    if not found:
        if digest is not None:
            raise LedgerError(
                f"no entry {ref}: no ledger version in the last {limit} commits that touched it "
                f"has {record_id} with that digest{_shallow(shallow)}"
            )
        raise LedgerError(
            f"no entry {record_id}, and no merge in the last {limit} ledger commits renumbered it{_shallow(shallow)}"
        )
    if len(found) > 1:
        for res in found:
            warn(res.describe())
        raise LedgerError(f"{record_id} was renumbered on several branches: {_pick(found)}")
    res = found[0]
    if res.current is None:
        raise LedgerError(res.describe())
    if res.current != record_id or digest is not None:
        warn(res.describe())
    return res.current
