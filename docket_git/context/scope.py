"""File scope: matching task files against record scopes, and auto-scope from git.

A record scope is a path, a directory (``dir/``), a glob, or a component
name. Component names (no ``/`` and no glob character) never match a file;
they only match query text. Matching is casefolded and ``\\`` reads as ``/``.
"""

from __future__ import annotations

import itertools
import posixpath
from collections.abc import Iterable
from fnmatch import fnmatchcase
from pathlib import Path

GLOB_CHARS = frozenset("*?[]")
#: Ledger files are bookkeeping, not the work at hand: auto-scope skips them.
LEDGER_DIR_PREFIX = ".docket/"
#: How far back a clean tree's auto-scope looks for a commit that touched more than the ledger.
RECENT_COMMITS = 10


def normalize(value: str) -> str:
    """A path or scope as matching sees it: ``/`` separators, no leading ``./``, casefolded."""
    value = value.replace("\\", "/")
    while value.startswith("./"):
        value = value[2:]
    return value.casefold()


def is_component(scope: str) -> bool:
    """True for a component name such as ``billing``: it matches query text, never files."""
    return "/" not in scope and not (GLOB_CHARS & set(scope))


def strength(files: list[str], scope: str, weights: dict[str, int]) -> int:
    """The strongest match of one normalised scope over normalised task files (0 if none)."""
    if not files or not scope or is_component(scope):
        return 0
    prefix = scope.rstrip("/") + "/" if "/" in scope else None
    # Without glob characters fnmatch is plain equality; with them, the text before
    # the first one must start the path. Both spare compiling a regex per scope,
    # which cost a session hook 40 ms on a 1k-record ledger.
    cut = [i for i in (scope.find("*"), scope.find("?"), scope.find("[")) if i >= 0]
    literal = scope[: min(cut)] if cut else None
    # A glob of ``*`` alone (most scope globs) is matched without fnmatch's regex as well.
    stars = scope.split("*") if literal is not None and not (GLOB_CHARS - {"*"}) & set(scope) else None
    best = 0
    for path in files:
        if path == scope:
            return weights["scope_exact"]
        if (
            literal is not None
            and path.startswith(literal)
            and (star_match(path, stars) if stars is not None else fnmatchcase(path, scope))
        ):
            best = max(best, weights["scope_glob"])
        elif prefix is not None and path.startswith(prefix):
            best = max(best, weights["scope_prefix"])
    return best


def star_match(path: str, parts: list[str]) -> bool:
    """``fnmatchcase(path, "*".join(parts))`` for a pattern whose only glob character is ``*``.

    ``*`` matches any run of characters, ``/`` included, as in fnmatch: the
    path must start with the first part, end with the last, and hold the
    others in order between them (the leftmost fit of each is as good as any).
    """
    first, last = parts[0], parts[-1]
    if len(path) < len(first) + len(last) or not path.startswith(first) or not path.endswith(last):
        return False
    pos, end = len(first), len(path) - len(last)
    for part in parts[1:-1]:
        found = path.find(part, pos, end)
        if found < 0:
            return False
        pos = found + len(part)
    return True


def matched_scopes(
    scopes: Iterable[str], files: list[str], weights: dict[str, int], renames: dict[str, str] | None = None
) -> dict[str, tuple[int, bool]]:
    """Scope string as recorded -> (its match strength, True when it matched through a rename), for matches.

    ``renames`` maps a scope whose path no longer exists to the path git says
    it was renamed to; the renamed path is tried only when the recorded one
    does not match.
    """
    norm_files = list(dict.fromkeys(normalize(f) for f in files if f))
    out: dict[str, tuple[int, bool]] = {}
    if not norm_files:
        return out
    # Only a glob, a task file itself or a directory above one can match (``strength``): other strings are
    # passed over with two set lookups, so 20,000 scope strings do not cost 20,000 ``strength`` calls.
    dirs = {f[:cut] for f in norm_files for cut in _slashes(f)}
    exact = set(norm_files)
    for raw in scopes:
        norm = normalize(raw)
        candidate = norm in exact or norm.rstrip("/") in dirs or "*" in norm or "?" in norm or "[" in norm
        value = strength(norm_files, norm, weights) if candidate else 0
        if value:
            out[raw] = (value, False)
        elif renames and raw in renames:
            value = strength(norm_files, normalize(renames[raw]), weights)
            if value:
                out[raw] = (value, True)
    return out


def _slashes(path: str) -> list[int]:
    """Where each ``/`` of path is (every directory above it ends there)."""
    return [i for i, c in enumerate(path) if c == "/"]


def task_file(value: str, root: Path) -> str:
    """A ``--file`` value as a root-relative path (an absolute path inside root is made relative)."""
    text = value.strip()
    if Path(text).is_absolute():
        try:
            return Path(text).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            return text
    return text.replace("\\", "/")


def interleave(changed: list[str], untracked: list[str]) -> list[str]:
    """One changed, one untracked, ... so untracked work is not starved; de-duplicated."""
    pairs = itertools.zip_longest(changed, untracked)
    return list(dict.fromkeys(path for pair in pairs for path in pair if path is not None))


def _relative(paths: list[str], prefix: str) -> list[str]:
    """Work-tree paths as paths under the ledger's root, minus the ledger's own files."""
    out = []
    for path in paths:
        if prefix:
            if not path.startswith(prefix):
                continue
            path = path[len(prefix) :]
        if path.startswith(LEDGER_DIR_PREFIX) or path.endswith("/"):
            continue
        out.append(path)
    return out


def auto_scope(root: Path, limit: int) -> list[str]:
    """The work at hand as file scope: changed and untracked files, else the last commit's paths.

    Paths are relative to root (the directory holding ``.docket/``). Outside a
    repository, in a bare one, in one with no commits and a clean tree, or
    when git cannot be read: [].
    """
    try:
        return _from_git(root)[:limit]
    except Exception:  # a guess at the task must never cost the agent its briefing
        return []


def prefetch(root: Path) -> None:
    """Start auto-scope's git commands for root now (a session hook, before it imports the briefing)."""
    from docket_git.repo import gitio

    work = gitio.work_tree_of(root)
    if work is not None:
        gitio.prefetch_work_at_hand(work)


def _from_git(root: Path) -> list[str]:
    from docket_git.repo import gitio

    work = gitio.work_tree_of(root)
    if work is None:
        return []
    try:
        rel = root.resolve().relative_to(work).as_posix()
    except ValueError:
        return []
    prefix = "" if rel == "." else posixpath.normpath(rel) + "/"
    changed, untracked = gitio.status_paths(work)
    paths = interleave(_relative(changed, prefix), _relative(untracked, prefix))
    if not paths:
        # The last commit's work; a commit that only recorded into the ledger says nothing
        # about the task, so look past it (a few commits at most).
        for touched in gitio.recent_commit_paths(work, RECENT_COMMITS):
            paths = _relative(touched, prefix)
            if paths:
                break
    return paths
