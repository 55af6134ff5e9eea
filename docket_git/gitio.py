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


def workdir(start: Path) -> Path | None:
    """The working tree root of the repository containing start, or None."""
    repo = open_repo(start)
    if repo is None or repo.workdir is None:
        return None
    return Path(repo.workdir)


def config_get(start: Path, key: str) -> str | None:
    """A git config value as git would see it here (all levels), or None."""
    repo = open_repo(start)
    if repo is None:
        return None
    try:
        return repo.config[key] if key in repo.config else None  # noqa: SIM401 - pygit2 Config has no .get
    except Exception:
        return None


def config_set_local(start: Path, key: str, value: str) -> None:
    """Set key in the repository's own config (like ``git config --local``)."""
    repo = open_repo(start)
    if repo is None:
        raise ValueError("not in a git repository")
    repo.config[key] = value  # the repository's config writes to its highest level: .git/config


def attribute(start: Path, path: str, name: str) -> str | bool | None:
    """The value git's attributes give path (repository-relative) for attribute name."""
    repo = open_repo(start)
    if repo is None:
        return None
    try:
        return repo.get_attr(path, name)
    except Exception:
        return None


def hooks_dir(start: Path) -> Path | None:
    """Where git looks for hooks here: core.hooksPath if set, else the common git dir's hooks/."""
    import subprocess

    proc = subprocess.run(
        ["git", "rev-parse", "--path-format=absolute", "--git-path", "hooks"],
        cwd=start,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    return Path(proc.stdout.strip())


def _tree_blob(repo, commit, relpath: str) -> bytes | None:
    import pygit2

    try:
        entry = commit.peel(pygit2.Commit).tree[relpath]
    except (KeyError, ValueError):
        return None
    obj = repo[entry.id]
    return obj.data if isinstance(obj, pygit2.Blob) else None


def blob_at(start: Path, rev: str, relpath: str) -> tuple[bool, bytes | None]:
    """(rev exists, the file's bytes at rev or None when the commit has no such file)."""
    repo = open_repo(start)
    if repo is None:
        return False, None
    try:
        commit = repo.revparse_single(rev)
    except (KeyError, ValueError):
        return False, None
    return True, _tree_blob(repo, commit, relpath)


def staged_blob(start: Path, relpath: str) -> bytes | None:
    """The file's bytes as staged in the index git is committing (honours GIT_INDEX_FILE)."""
    import os

    import pygit2

    repo = open_repo(start)
    if repo is None:
        return None
    index_file = os.environ.get("GIT_INDEX_FILE")
    if index_file:
        path = Path(index_file)
        if not path.is_absolute():
            path = Path(repo.workdir or ".") / path
        index = pygit2.Index(str(path))
    else:
        index = repo.index
    try:
        entry = index[relpath]
    except KeyError:
        return None
    return repo[entry.id].data


def merge_heads(start: Path) -> list[str]:
    """The commits being merged in (MERGE_HEAD), empty when no merge is in progress."""
    repo = open_repo(start)
    if repo is None:
        return []
    path = Path(repo.path) / "MERGE_HEAD"
    try:
        return [line.strip() for line in path.read_text().splitlines() if line.strip()]
    except OSError:
        return []


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


def _git_dirs(start: Path) -> tuple[Path, Path] | None:
    """(git dir, common dir) of the repository containing start, read from files."""
    for directory in (start.resolve(), *start.resolve().parents):
        dot = directory / ".git"
        if dot.is_dir():
            return dot, dot
        if dot.is_file():
            text = dot.read_text(errors="replace").strip()
            if not text.startswith("gitdir:"):
                return None
            gitdir = (directory / text[len("gitdir:") :].strip()).resolve()
            common = gitdir
            commondir = gitdir / "commondir"
            if commondir.is_file():
                common = (gitdir / commondir.read_text().strip()).resolve()
            return gitdir, common
    return None


def head_commit(start: Path) -> str | None:
    """The commit HEAD names, or None (no repository, no commits).

    Read from the ref files directly: a session hook needs only this, and
    importing pygit2 would cost it a tenth of a second.
    """
    try:
        dirs = _git_dirs(start)
        if dirs is None:
            return None
        gitdir, common = dirs
        head = (gitdir / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head or None
        ref = head[4:].strip()
        for base in (gitdir, common):
            path = base / ref
            if path.is_file():
                return path.read_text().strip() or None
        packed = common / "packed-refs"
        if packed.is_file():
            for line in packed.read_text().splitlines():
                if line.endswith(" " + ref):
                    return line.split(" ", 1)[0]
        return None
    except OSError:
        return None
