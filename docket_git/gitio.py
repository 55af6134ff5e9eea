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


def work_tree(repo) -> Path | None:
    """The repository's work tree root, or None for a bare repository."""
    workdir = repo.workdir
    return Path(workdir).resolve() if workdir else None


def status_paths(repo) -> tuple[list[str], list[str]]:
    """(changed, untracked) work tree paths, each sorted: ``git diff HEAD`` and untracked files.

    Changed means staged or unstaged against HEAD (in a repository with no
    commits, whatever is staged); untracked excludes ignored files. Paths are
    relative to the work tree, with ``/``; nested repositories (``dir/``) are dropped.
    """
    from pygit2.enums import FileStatus

    untracked_flag = FileStatus.WT_NEW
    changed: list[str] = []
    untracked: list[str] = []
    for path, flags in repo.status(untracked_files="all", ignored=False).items():
        if path.endswith("/") or flags == FileStatus.CURRENT or flags & FileStatus.IGNORED:
            continue
        if flags == untracked_flag:
            untracked.append(path)
        else:
            changed.append(path)
    return sorted(changed), sorted(untracked)


def last_commit_paths(repo) -> list[str]:
    """The paths HEAD's commit touched (against each parent; a root commit against nothing).

    Empty when the repository has no commits.
    """
    import pygit2

    try:
        if repo.head_is_unborn:
            return []
        commit = repo.head.peel(pygit2.Commit)
    except (pygit2.GitError, KeyError, ValueError):
        return []
    diffs = [parent.tree.diff_to_tree(commit.tree) for parent in commit.parents]
    if not diffs:
        diffs = [commit.tree.diff_to_tree(swap=True)]
    seen: dict[str, None] = {}
    for diff in diffs:
        paths = sorted(delta.new_file.path or delta.old_file.path for delta in diff.deltas)
        for path in paths:
            seen.setdefault(path, None)
    return list(seen)
