"""Every git access goes through here (pygit2, imported only when needed)."""

from __future__ import annotations

from collections.abc import Iterator
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
    """The checked-out branch's short name, or "" when detached or outside git.

    Read from HEAD directly (worktrees included), like ``head_commit``: every
    record a command writes asks, and pygit2 would cost it 50 ms to import.
    """
    try:
        dirs = _git_dirs(start)
        if dirs is None:
            return ""
        head = (dirs[0] / "HEAD").read_text().strip()
    except OSError:
        return ""
    ref = head[4:].strip() if head.startswith("ref:") else ""
    return ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else ""


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


def recent_commit_paths(repo, limit: int) -> Iterator[list[str]]:
    """The paths each of the last ``limit`` commits touched, HEAD first, along first parents."""
    import pygit2

    try:
        if repo.head_is_unborn:
            return
        commit = repo.head.peel(pygit2.Commit)
    except (pygit2.GitError, KeyError, ValueError):
        return
    for _ in range(limit):
        diffs = [parent.tree.diff_to_tree(commit.tree) for parent in commit.parents]
        if not diffs:
            diffs = [commit.tree.diff_to_tree(swap=True)]
        seen: dict[str, None] = {}
        for diff in diffs:
            paths = sorted(delta.new_file.path or delta.old_file.path for delta in diff.deltas)
            for path in paths:
                seen.setdefault(path, None)
        yield list(seen)
        if not commit.parents:
            return
        commit = commit.parents[0]


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


# -- history: commits, parents and one file's blobs -------------------------------------


class Graph:
    """Read-only access to a repository's commits and file blobs, memoized for one command.

    Commit and blob IDs are hex strings. A shallow clone's boundary commits
    read as having no parents (git's own view of them).
    """

    def __init__(self, repo) -> None:  # repo: pygit2.Repository
        self.repo = repo
        self._commits: dict[str, object] = {}
        self._files: dict[tuple[str, str], str | None] = {}
        self._proc = None  # the git cat-file --batch reader, started on the first blob
        self._no_batch = False
        self._branches: dict[str, list[str]] | None = None

    @property
    def shallow(self) -> bool:
        """True in a shallow clone (history before the boundary is missing)."""
        try:
            return bool(self.repo.is_shallow)
        except Exception:
            return False

    def head(self) -> str | None:
        """The commit HEAD names, or None when the repository has no commits yet."""
        try:
            if self.repo.head_is_unborn:
                return None
            return str(self.repo.head.target)
        except Exception:
            return None

    def resolve(self, rev: str) -> str | None:
        """The commit a commit-ish (HEAD~3, a branch, a tag, an ID) names, or None."""
        import pygit2

        try:
            return str(self.repo.revparse_single(rev).peel(pygit2.Commit).id)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            return None

    def _commit(self, cid: str):
        commit = self._commits.get(cid)
        if commit is None:
            commit = self.repo[cid]
            self._commits[cid] = commit
        return commit

    def parents(self, cid: str) -> list[str]:
        """The commit's parents, first parent first (none at a shallow boundary)."""
        try:
            return [str(p) for p in self._commit(cid).parent_ids]
        except Exception:
            return []

    def time(self, cid: str) -> int:
        """The commit's committer time (seconds since the epoch)."""
        return int(self._commit(cid).commit_time)

    def file_blob(self, cid: str, relpath: str) -> str | None:
        """The blob ID of relpath at the commit, or None when the commit has no such file."""
        key = (cid, relpath)
        if key not in self._files:
            try:
                entry = self._commit(cid).tree[relpath]
                self._files[key] = str(entry.id) if entry.type_str == "blob" else None
            except (KeyError, ValueError):
                self._files[key] = None
        return self._files[key]

    def blob(self, bid: str) -> bytes:
        """A blob's bytes (callers cache them: decompressing a large blob costs milliseconds).

        Read through one ``git cat-file --batch`` process per command when git
        is there: git keeps a delta-base cache for large objects and libgit2
        does not (objects over 1 MB), which makes reading many versions of a
        multi-megabyte ledger several times faster. pygit2 otherwise.
        """
        proc = self._batch()
        if proc is not None:
            try:
                proc.stdin.write(bid.encode() + b"\n")
                proc.stdin.flush()
                header = proc.stdout.readline().split()
                if len(header) == 3 and header[1] == b"blob":
                    size = int(header[2])
                    data = proc.stdout.read(size)
                    proc.stdout.read(1)
                    if len(data) == size:
                        return data
            except (OSError, ValueError):
                pass
            self.close()
            self._no_batch = True
        return self.repo[bid].data

    def _batch(self):  # -> subprocess.Popen | None
        import subprocess

        if self._no_batch:
            return None
        proc = self._proc
        if proc is None:
            try:
                proc = subprocess.Popen(
                    ["git", "--git-dir", self.repo.path, "cat-file", "--batch"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                )
            except OSError:
                self._no_batch = True
                return None
            self._proc = proc
        return proc

    def close(self) -> None:
        """Stop the blob reader process, if one was started."""
        proc = self._proc
        self._proc = None
        if proc is not None:
            try:
                proc.stdin.close()
                proc.wait(timeout=10)
            except Exception:
                proc.kill()
                proc.wait()
            finally:
                proc.stdout.close()

    def info(self, cid: str) -> dict:
        """Author, e-mail, ISO date and subject of a commit."""
        from datetime import datetime, timedelta, timezone

        commit = self._commit(cid)
        author = commit.author
        zone = timezone(timedelta(minutes=author.offset))
        return {
            "commit": cid,
            "author": author.name,
            "email": author.email,
            "date": datetime.fromtimestamp(author.time, zone).isoformat(),
            "subject": (commit.message or "").split("\n", 1)[0],
        }

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """True when ancestor is descendant or one of its ancestors."""
        if ancestor == descendant:
            return True
        try:
            return bool(self.repo.descendant_of(descendant, ancestor))
        except Exception:
            return False

    def merge_bases(self, a: str, b: str) -> list[str]:
        """Every best common ancestor of a and b (``git merge-base --all``), oldest first."""
        import subprocess

        try:
            one = self.repo.merge_base(a, b)
        except Exception:
            one = None
        if one is None:
            return []
        # libgit2 returns one base; a criss-cross history has several, and only git lists them all.
        try:
            proc = subprocess.run(
                ["git", "merge-base", "--all", a, b],
                cwd=self.repo.path,
                capture_output=True,
                text=True,
                timeout=30,
            )
            found = proc.stdout.split() if proc.returncode == 0 else []
        except (OSError, subprocess.SubprocessError):
            found = []
        bases = found or [str(one)]
        return sorted(bases, key=self.time)

    def branches_at(self) -> dict[str, list[str]]:
        """Local branch names by the commit at their tip (read once)."""
        if self._branches is not None:
            return self._branches
        out: dict[str, list[str]] = {}
        self._branches = out
        try:
            for name in self.repo.branches.local:
                try:
                    target = str(self.repo.branches.local[name].peel().id)
                except Exception:
                    continue
                out.setdefault(target, []).append(name)
        except Exception:
            pass
        return out

    def walk(self, start: str):  # -> Iterator[str]
        """Commits reachable from start, newest first (topological, then by time)."""
        import pygit2

        sort = pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME
        for commit in self.repo.walk(start, sort):
            cid = str(commit.id)
            self._commits.setdefault(cid, commit)
            yield cid

    def key(self) -> str:
        """A stable identity for the repository (its common git directory)."""
        return str(Path(self.repo.path).resolve())


def open_graph(start: Path) -> Graph | None:
    """A Graph over the repository containing start, or None outside git."""
    repo = open_repo(start)
    return None if repo is None else Graph(repo)
