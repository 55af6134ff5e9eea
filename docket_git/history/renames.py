"""Scopes that follow renames: a record scoped to a moved file still governs it.

A record's scope names a path as it was when the record was written. When
that path no longer exists, git's rename detection over the commits that
reached HEAD says where the file went (``git log -M --diff-filter=R``); chains
of renames are followed to the path that exists now. A directory scope
follows when every file git moved out of it landed in one new directory.

Computed once per HEAD and kept in the repository's history database in
the user cache dir (``history.cache``); never written into the repository.
Outside a repository, or when git cannot say: no renames.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from docket_git.repo import gitio

#: How many commits back rename detection looks (the newest ones).
MAX_COMMITS = 2000


def _log_renames(work: Path) -> list[tuple[str, str]]:
    """Every (old, new) rename in HEAD's history, oldest first."""
    out = gitio.run_git(
        work, "log", "--reverse", "-M", "--diff-filter=R", "--name-status", "--format=", "-z",
        f"--max-count={MAX_COMMITS}", "HEAD", "--",
    )  # fmt: skip
    if not out:
        return []
    fields = [os.fsdecode(f) for f in out.split(b"\0")]
    pairs = []
    i = 0
    while i + 2 < len(fields):
        status = fields[i].strip()
        if status.startswith("R"):
            pairs.append((fields[i + 1], fields[i + 2]))
            i += 3
        else:  # another status (not asked for, but never misread the stream): one path follows
            i += 2
    return pairs


def chain(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """old path -> the path it has after every later rename, for renames applied in order."""
    now: dict[str, str] = {}
    holders: dict[str, list[str]] = {}  # current path -> old paths that lead to it
    for old, new in pairs:
        moved = holders.pop(old, [])
        moved.append(old)
        for key in moved:
            now[key] = new
        holders.setdefault(new, []).extend(moved)
    return {old: new for old, new in now.items() if old != new}


def _head(work: Path) -> tuple[Path, str] | None:
    """(the common git dir, HEAD's commit) of the repository at work; None without commits.

    Read from git's files (no git spawned per briefing, issue 32 item 5); git
    itself is asked only where files may not say (GIT_DIR or GIT_COMMON_DIR
    set, a ref store other than files, a symbolic ref that is not HEAD).
    """
    if not any(os.environ.get(name) for name in ("GIT_DIR", "GIT_COMMON_DIR")):
        common, head = gitio.common_dir(work), gitio.head_commit(work)
        if common is not None and head is not None and _COMMIT.fullmatch(head):
            return common, head
    out = gitio.run_git(work, "rev-parse", "--git-common-dir", "HEAD")
    lines = out.decode(errors="surrogateescape").splitlines() if out is not None else []
    if len(lines) != 2:
        return None
    return (work / lines[0]).resolve(), lines[1]  # relative to work, when not absolute


_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def _head_renames(work: Path) -> list[tuple[str, str]]:
    """The renames of HEAD's history, oldest first, from the history database when HEAD's were found before."""
    from docket_git.history.cache import HistoryCache, path_for

    found = _head(work)
    if found is None:
        return []
    common, head = found
    cache = HistoryCache(path_for(common))
    try:
        pairs = cache.renames(head)
        if pairs is None:
            pairs = _log_renames(work)
            cache.put_renames(head, pairs)
    finally:
        cache.flush()
    return pairs


def _directory_target(directory: str, pairs: list[tuple[str, str]]) -> str | None:
    """Where a vanished directory went: the one directory every file moved out of it went to.

    Followed hop by hop: ``a/`` -> ``b/`` -> ``c/`` when each move took the
    directory's files along whole; a file renamed within the new directory
    later does not change where the directory went.
    """
    seen: set[str] = set()
    while directory not in seen:
        seen.add(directory)
        targets = set()
        for old, new in pairs:
            if old.startswith(directory) and not new.startswith(directory):
                rest = old[len(directory) :]
                if not new.endswith("/" + rest):
                    return None  # a file left for another name: the directory did not simply move
                targets.add(new[: len(new) - len(rest)])
        if len(targets) != 1:
            return directory if len(seen) > 1 else None
        directory = targets.pop()
    return directory


def renamed_scopes(root: Path, scopes: Iterable[str]) -> dict[str, str]:
    """Scope as recorded -> the path it names now, for path scopes that no longer exist but were renamed.

    ``root`` is the directory holding ``.docket/``; scopes are relative to it.
    Globs and component names are left alone. Only scopes that HEAD's renames
    moved (a file renamed, or a directory a file left) are looked for in the
    work tree: a ledger scoped to 20,000 files costs set lookups, not 20,000
    ``lstat`` calls (0.33 s at every session start). So HEAD's renames are
    read (from git once per HEAD, then from the history database) even when
    every scope still exists.
    """
    work = gitio.work_tree_of(root)
    if work is None:
        return {}
    try:
        prefix = root.resolve().relative_to(work).as_posix()
    except ValueError:
        return {}
    prefix = "" if prefix == "." else prefix + "/"
    pairs = _head_renames(work)
    if not pairs:
        return {}
    renames = chain(pairs)
    moved = set(renames)  # the files, and every directory a file was moved out of
    for old, _ in pairs:
        cut = old.rfind("/")
        while cut > 0:
            moved.add(old[: cut + 1])
            cut = old.rfind("/", 0, cut)
    here = str(root)
    found: dict[str, str] = {}
    for scope in scopes:
        path = prefix + scope
        if path not in moved or "/" not in scope or any(c in scope for c in "*?["):
            continue  # not moved (git's paths are never absolute nor hold ".."), a component name, a glob
        if os.path.lexists(os.path.join(here, scope.rstrip("/"))):
            continue  # still there: not renamed
        target = _directory_target(path, pairs) if scope.endswith("/") else renames.get(path)
        if target is None or not target.startswith(prefix):
            continue
        relative = target[len(prefix) :]
        if os.path.lexists(os.path.join(here, relative.rstrip("/"))):
            found[scope] = relative
    return found
