"""Every git access goes through here (pygit2, imported only when needed)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from docket_git.repo import files


def _text(path: Path, cap: int = files.SMALL_CAP) -> str:
    """A file in a git directory (HEAD, a ref, commondir): ``files.read_text``, a refusal as an OSError.

    A FIFO or device there must not hang a hook; callers already treat OSError as "cannot tell".
    """
    try:
        return files.read_text(path, None, cap, follow=True)
    except files.UnsafePath as exc:
        raise OSError(str(exc)) from None


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
        head = _text(dirs[0] / "HEAD").strip()
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
    """A git config value as git itself sees it here (all levels, includes), or None.

    Asked of ``git config`` rather than pygit2: the session hook asks on every
    start (the driver notice) and should not pay for importing pygit2.
    """
    out = run_git(start, "config", "--get", key)
    if out is None:
        return None
    return out.decode(errors="replace").rstrip("\n")


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


def merge_base_blob(start: Path, one: str, two: str, relpath: str) -> bytes | None:
    """The file's bytes at a merge base of revisions one and two, or None (no base, no file)."""
    repo = open_repo(start)
    if repo is None:
        return None
    try:
        base = repo.merge_base(repo.revparse_single(one).id, repo.revparse_single(two).id)
    except (KeyError, ValueError):
        return None
    return _tree_blob(repo, repo[base], relpath) if base is not None else None


def merge_heads(start: Path) -> list[str]:
    """The commits being merged in (MERGE_HEAD), empty when no merge is in progress."""
    repo = open_repo(start)
    if repo is None:
        return []
    path = Path(repo.path) / "MERGE_HEAD"
    try:
        return [line.strip() for line in _text(path).splitlines() if line.strip()]
    except OSError:
        return []


# -- the work at hand, through the git CLI (session hooks must not import pygit2) ----------

#: Seconds a git command may take before auto-scope gives up on it.
GIT_TIMEOUT = 5


def run_git(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes | None:
    """stdout of ``git ARGS`` run in cwd, or None when git fails, is missing or hangs.

    Spawned directly (``os.posix_spawnp``, ``git -C cwd``, stderr to the null
    device) rather than through ``subprocess``: a session hook runs git two to
    four times and needs nothing else from that module, whose import (signal,
    threading, selectors, locale) cost the hook more than its own side of the
    git calls. Without ``posix_spawnp`` (not a POSIX system), ``subprocess``.
    A git that ``prefetch`` started with the same cwd and arguments is read instead.
    ``stdin`` (small: it must fit a pipe's buffer, 64 KiB on Linux) is git's standard input.
    """
    started = None if stdin is not None else _prefetched.pop((os.fspath(cwd), args), None)
    if started is None:
        if not hasattr(os, "posix_spawnp") or (stdin is not None and len(stdin) > 1 << 15):
            return _run_git_subprocess(cwd, *args, stdin=stdin)
        started = _spawn(cwd, args, stdin)
        if started is None:
            return None
    return _collect(*started)


#: Gits started ahead of need: (cwd, args) -> (pid, read end of its stdout, deadline).
_prefetched: dict[tuple[str, tuple[str, ...]], tuple[int, int, float]] = {}


def prefetch(cwd: Path, *args: str) -> None:
    """Start ``git ARGS`` in cwd now, so its output is ready when ``run_git`` asks for it.

    A session hook starts auto-scope's git commands before importing the
    briefing: git runs on another core while Python loads. What nobody asks
    for is ended by ``drop_prefetched`` (or with the process).
    """
    key = (os.fspath(cwd), args)
    if key in _prefetched or not hasattr(os, "posix_spawnp"):
        return
    started = _spawn(cwd, args)
    if started is not None:
        _prefetched[key] = started


def drop_prefetched() -> None:
    """End and reap every prefetched git nobody read."""
    while _prefetched:
        pid, read_end, _ = _prefetched.popitem()[1]
        os.close(read_end)
        _kill(pid)


def _spawn(cwd: Path, args: tuple[str, ...], stdin: bytes | None = None) -> tuple[int, int, float] | None:
    """(pid, read end of its stdout, deadline) of a started ``git -C cwd ARGS``; None without git.

    ``stdin`` is written whole into a pipe before git starts (so it must fit the pipe's buffer).
    """
    import time

    deadline = time.monotonic() + GIT_TIMEOUT
    feed = None
    try:
        read_end, write_end = os.pipe()
        if stdin is not None:
            feed = os.pipe()
            os.write(feed[1], stdin)
            os.close(feed[1])
    except OSError:
        return None
    try:
        actions = [(os.POSIX_SPAWN_DUP2, write_end, 1), (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]
        if feed is not None:
            actions.append((os.POSIX_SPAWN_DUP2, feed[0], 0))
        pid = os.posix_spawnp("git", ["git", "-C", os.fspath(cwd), *args], os.environ, file_actions=actions)
    except OSError:  # no git on PATH
        os.close(read_end)
        return None
    finally:
        os.close(write_end)
        if feed is not None:
            os.close(feed[0])
    return pid, read_end, deadline


def _collect(pid: int, read_end: int, deadline: float) -> bytes | None:
    """Everything a spawned git writes, if it exits 0 before deadline; else None (killed when late)."""
    import select
    import time

    chunks = []
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_end], [], [], left)[0]:
                return _kill(pid)
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
    while True:  # git closes its output as it exits: this loop rarely turns
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return b"".join(chunks) if os.waitstatus_to_exitcode(status) == 0 else None
        if time.monotonic() >= deadline:
            return _kill(pid)
        time.sleep(0.0005)


def _kill(pid: int) -> None:
    """End a git that ran out of time and reap it."""
    try:
        os.kill(pid, 9)  # SIGKILL (the signal module's import costs what spawning saved)
        os.waitpid(pid, 0)
    except OSError:
        pass
    return None


def _run_git_subprocess(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes | None:
    import subprocess

    try:
        proc = subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, timeout=GIT_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _paths(out: bytes | None) -> list[str]:
    """NUL-separated paths (``-z``) as str, nested repositories (``dir/``) dropped."""
    if not out:
        return []
    return [p for p in (os.fsdecode(raw) for raw in out.split(b"\0") if raw) if not p.endswith("/")]


def work_tree_of(start: Path) -> Path | None:
    """The work tree root holding start (the directory with ``.git``), or None outside one."""
    for directory in (start.resolve(), *start.resolve().parents):
        if (directory / ".git").exists():
            return directory
    return None


def status_paths(work: Path) -> tuple[list[str], list[str]]:
    """(changed, untracked) paths of the work tree at work, each sorted, relative to it with ``/``.

    Changed means staged or unstaged against HEAD (with no commits yet,
    whatever is staged); untracked excludes ignored files. That is what
    ``git diff --name-only HEAD`` and ``git ls-files --others --exclude-standard``
    list; one ``git status`` gives both whenever its two columns say the same
    (``_read_status``), else the diff runs too.
    """
    out = run_git(work, *STATUS)
    read = _read_status(out) if out is not None else None
    if read is None:
        changed, untracked = _changed_by_diff(work), _paths(run_git(work, *LS_UNTRACKED))
    else:
        changed, untracked, exact = read
        if not exact:
            changed = _changed_by_diff(work)
    return sorted(changed), sorted(untracked)


#: Changed and untracked files in one process. No renames: ``git diff HEAD`` pairs a deletion with
#: an addition across the index and the work tree, which status cannot; such a tree takes the diff.
#: No optional locks: a status must not take the index lock from the agent's own git commands.
#: Porcelain v2, because it marks submodules (whose untracked content status reports and the diff does not).
STATUS = ("--no-optional-locks", "status", "--porcelain=v2", "-z", "--untracked-files=all", "--no-renames")
LS_UNTRACKED = ("ls-files", "--others", "--exclude-standard", "--full-name", "-z", "--", ":/")

#: Status codes (index column, work-tree column; ``.`` unchanged) whose path ``git diff --name-only
#: HEAD`` lists for certain: one column changed, the other clean, so the work tree differs from HEAD
#: exactly as that column says. Anything else (both columns changed, intent-to-add) is left to the diff.
_ONE_COLUMN = frozenset({b".M", b".T", b".D", b"M.", b"T.", b"A.", b"D."})


def _read_status(out: bytes) -> tuple[list[str], list[str], bool] | None:
    """(changed, untracked, exact) from ``git status --porcelain=v2 -z``; None when it cannot be read.

    exact is False when changed may differ from the diff's: a code outside
    ``_ONE_COLUMN``, a submodule, a rename or an unmerged path, or an addition
    beside a deletion (the diff may pair them as a rename and list only the
    new path).
    """
    changed: list[bytes] = []
    untracked: list[bytes] = []
    exact = True
    added = deleted = False
    fields = iter(out.split(b"\0"))
    for entry in fields:
        kind = entry[:2]
        if not entry or kind == b"! ":
            continue
        if kind == b"? ":
            untracked.append(entry[2:])
        elif kind == b"1 ":
            parts = entry.split(b" ", 8)
            if len(parts) != 9:
                return None
            code, submodule = parts[1], parts[2]
            if code in _ONE_COLUMN and submodule[:1] == b"N":
                changed.append(parts[8])
                added = added or code[:1] == b"A"
                deleted = deleted or b"D" in code
            else:
                exact = False
        elif kind == b"2 ":
            next(fields, None)  # the rename's source path
            exact = False
        elif kind == b"u ":
            exact = False
        else:
            return None
    return _decoded(changed), _decoded(untracked), exact and not (added and deleted)


def _decoded(raw: list[bytes]) -> list[str]:
    """Paths as str, nested repositories (``dir/``) dropped, as ``_paths`` reads them."""
    return [p for p in (os.fsdecode(item) for item in raw) if not p.endswith("/")]


def _changed_by_diff(work: Path) -> list[str]:
    """Staged or unstaged against HEAD; with no commits yet, whatever is staged."""
    changed = run_git(work, "diff", "--name-only", "-z", "HEAD", "--")
    if changed is None:
        changed = run_git(work, "diff", "--cached", "--name-only", "-z", "--")
    return _paths(changed)


def recent_commit_paths(work: Path, limit: int) -> Iterator[list[str]]:
    """The paths each of the last ``limit`` commits touched, HEAD first, along first parents.

    A merge lists what differs from each parent; a root commit, all its files.
    HEAD's paths come first without listing the commits (one git process instead
    of two when the last commit is the work at hand, as it usually is).
    """
    head = run_git(work, *_TOUCHED, "HEAD", "--") if limit > 0 else None
    if head is not None:
        yield list(dict.fromkeys(sorted(_paths(head))))
    commits = run_git(work, "rev-list", "--first-parent", f"--max-count={limit}", "HEAD", "--")
    # rev-list starts at HEAD: skip it when it was read above (no commits, or a failed read: list it here).
    for commit in (commits or b"").split()[0 if head is None else 1 :]:
        out = run_git(work, *_TOUCHED, commit.decode())
        yield list(dict.fromkeys(sorted(_paths(out))))


_TOUCHED = ("diff-tree", "-m", "--root", "--no-commit-id", "--name-only", "-r", "-z")


def prefetch_work_at_hand(work: Path) -> None:
    """Start ``status_paths``'s git and ``recent_commit_paths``' first one in work (see ``prefetch``)."""
    prefetch(work, *STATUS)
    prefetch(work, *_TOUCHED, "HEAD", "--")


def _git_dirs(start: Path) -> tuple[Path, Path] | None:
    """(git dir, common dir) of the repository containing start, read from files."""
    for directory in (start.resolve(), *start.resolve().parents):
        dot = directory / ".git"
        if dot.is_dir():
            return dot, dot
        if dot.is_file():
            text = _text(dot).strip()
            if not text.startswith("gitdir:"):
                return None
            gitdir = (directory / text[len("gitdir:") :].strip()).resolve()
            return gitdir, common_of(gitdir)
    return None


def common_of(git_dir: Path) -> Path:
    """The git dir a git dir's worktrees share: a linked work tree's names it in ``commondir``."""
    try:
        pointer = _text(git_dir / "commondir").strip()
    except OSError:
        return git_dir.resolve()
    return (git_dir / pointer).resolve() if pointer else git_dir.resolve()


def common_dir(start: Path) -> Path | None:
    """The git dir a repository's worktrees share (``git rev-parse --git-common-dir``), read from files."""
    dirs = _git_dirs(start)
    return dirs[1] if dirs is not None else None


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
        head = _text(gitdir / "HEAD").strip()
        if not head.startswith("ref:"):
            return head or None
        ref = head[4:].strip()
        for base in (gitdir, common):
            path = base / ref
            if path.is_file():
                return _text(path).strip() or None
        packed = common / "packed-refs"
        if packed.is_file():
            for line in _text(packed, files.LEDGER_CAP).splitlines():
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
        self._bases: dict[frozenset[str], list[str]] = {}  # found by ``find_merge_bases``

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

    def find_merge_bases(self, pairs: list[tuple[str, str]]) -> None:
        """Find the merge bases of many pairs of commits in one git process, for ``merge_bases`` to answer.

        ``git rev-parse A...B`` prints B, A, then ``^BASE`` for every merge
        base of the two (``git merge-base --all``), and takes any number of
        such arguments. Output it does not print as expected is left for
        ``merge_bases`` to ask per pair.
        """
        import subprocess

        todo = list(dict.fromkeys((a, b) for a, b in pairs if a != b and frozenset((a, b)) not in self._bases))
        for start in range(0, len(todo), 500):
            chunk = todo[start : start + 500]
            try:
                proc = subprocess.run(
                    ["git", "rev-parse", *(f"{a}...{b}" for a, b in chunk)],
                    cwd=self.repo.path,
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
            except (OSError, subprocess.SubprocessError):
                return
            words = proc.stdout.split() if proc.returncode == 0 else []
            i = 0
            for a, b in chunk:
                if sorted(words[i : i + 2]) != sorted((a, b)):  # git prints B, then A
                    return
                i += 2
                bases = []
                while i < len(words) and words[i].startswith("^"):
                    bases.append(words[i][1:])
                    i += 1
                self._bases[frozenset((a, b))] = sorted(bases, key=self.time)

    def merge_bases(self, a: str, b: str) -> list[str]:
        """Every best common ancestor of a and b (``git merge-base --all``), oldest first."""
        import subprocess

        known = self._bases.get(frozenset((a, b)))
        if known is not None:
            return list(known)
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
