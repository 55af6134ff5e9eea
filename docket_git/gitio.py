"""Every git access goes through here (pygit2, imported only when needed)."""

from __future__ import annotations

from pathlib import Path


def open_repo(start: Path):  # -> pygit2.Repository | None
    """The repository containing start, or None outside any repository."""
    import pygit2

    try:
        path = pygit2.discover_repository(str(start))
    except pygit2.GitError:
        return None
    if path is None:
        return None
    try:
        return pygit2.Repository(path)
    except pygit2.GitError:
        return None


def current_branch(start: Path) -> str:
    """The checked-out branch's short name, or "" when detached or outside git."""
    repo = open_repo(start)
    if repo is None:
        return ""
    try:
        head = repo.references.get("HEAD")
        target = head.target if head is not None else None
    except Exception:
        return ""
    if isinstance(target, str) and target.startswith("refs/heads/"):
        return target[len("refs/heads/") :]
    return ""
