"""Auto-scope reads git in fewer processes and lists exactly what the old commands listed.

``gitio.status_paths`` now reads one ``git status`` where it used to run
``git diff --name-only HEAD`` and ``git ls-files --others``, and
``gitio.recent_commit_paths`` reads HEAD's paths before listing commits. Each
tricky tree below is built in a real repository and the result compared with
the old commands' output, run here as they were.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from docket_git.context import scope
from docket_git.repo import gitio
from tests.conftest import Repo

GIT = shutil.which("git") or "git"


def old_git(work: Path, *args: str) -> bytes | None:
    proc = subprocess.run([GIT, *args], cwd=work, capture_output=True, timeout=30)
    return proc.stdout if proc.returncode == 0 else None


def old_paths(out: bytes | None) -> list[str]:
    if not out:
        return []
    return [p for p in (os.fsdecode(raw) for raw in out.split(b"\0") if raw) if not p.endswith("/")]


def old_status_paths(work: Path) -> tuple[list[str], list[str]]:
    """The two commands auto-scope ran before (``git diff`` then ``git ls-files``)."""
    changed = old_git(work, "diff", "--name-only", "-z", "HEAD", "--")
    if changed is None:
        changed = old_git(work, "diff", "--cached", "--name-only", "-z", "--")
    untracked = old_git(work, "ls-files", "--others", "--exclude-standard", "--full-name", "-z", "--", ":/")
    return sorted(old_paths(changed)), sorted(old_paths(untracked))


def old_recent_commit_paths(work: Path, limit: int) -> list[list[str]]:
    commits = old_git(work, "rev-list", "--first-parent", f"--max-count={limit}", "HEAD", "--")
    out = []
    for commit in (commits or b"").split():
        touched = old_git(
            work, "diff-tree", "-m", "--root", "--no-commit-id", "--name-only", "-r", "-z", commit.decode()
        )
        out.append(list(dict.fromkeys(sorted(old_paths(touched)))))
    return out


def old_from_git(root: Path) -> list[str]:
    """scope._from_git as it was, on the old commands."""
    import posixpath

    work = gitio.work_tree_of(root)
    if work is None:
        return []
    rel = root.resolve().relative_to(work).as_posix()
    prefix = "" if rel == "." else posixpath.normpath(rel) + "/"
    changed, untracked = old_status_paths(work)
    paths = scope.interleave(scope._relative(changed, prefix), scope._relative(untracked, prefix))
    if not paths:
        for touched in old_recent_commit_paths(work, scope.RECENT_COMMITS):
            paths = scope._relative(touched, prefix)
            if paths:
                break
    return paths


#: Names git and shells get wrong when quoted: spaces, non-ASCII, a newline, a tab, quotes, a
#: backslash, a leading dash, and a file named like the revision auto-scope reads.
ODD_NAMES = [
    "sp ace.txt",
    "ünï/çödé.txt",
    "日本/語.md",
    "new\nline.txt",
    "tab\tname.txt",
    'quo"te.txt',
    "back\\slash.txt",
    "-dash.txt",
    "HEAD",
    "dir/sub/deep.py",
]


def write(repo: Repo, rel: str, text: str) -> None:
    target = repo.path / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def committed(repo: Repo) -> None:
    """A tree with ordinary and odd names, an ignore file, one commit."""
    write(repo, ".gitignore", "*.log\nbuild/\n")
    for i, name in enumerate(["a.txt", "b.txt", "c.txt", *ODD_NAMES]):
        write(repo, name, f"line one of {name}\nline two\nline three\nline four {i}\n")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "base")


def modify(repo: Repo, rel: str, text: str = "changed\n") -> None:
    write(repo, rel, text)


SCENARIOS: dict[str, Callable[[Repo], None]] = {
    "clean": lambda r: None,
    "unstaged": lambda r: modify(r, "a.txt"),
    "staged": lambda r: (modify(r, "a.txt"), r.git("add", "a.txt")),
    "staged-then-modified": lambda r: (modify(r, "a.txt"), r.git("add", "a.txt"), modify(r, "a.txt", "again\n")),
    "staged-then-reverted": lambda r: (
        modify(r, "a.txt"),
        r.git("add", "a.txt"),
        r.git("checkout", "HEAD", "--", "a.txt"),
        r.git("reset", "-q"),
        modify(r, "b.txt"),
        r.git("add", "b.txt"),
        write(r, "b.txt", "line one of b.txt\nline two\nline three\nline four 1\n"),
    ),
    "added-then-modified": lambda r: (modify(r, "new.txt"), r.git("add", "new.txt"), modify(r, "new.txt", "more\n")),
    "added-then-deleted": lambda r: (modify(r, "new.txt"), r.git("add", "new.txt"), (r.path / "new.txt").unlink()),
    "modified-then-deleted": lambda r: (modify(r, "a.txt"), r.git("add", "a.txt"), (r.path / "a.txt").unlink()),
    "deleted-unstaged": lambda r: (r.path / "a.txt").unlink(),
    "deleted-staged": lambda r: r.git("rm", "-q", "a.txt"),
    "deleted-staged-recreated": lambda r: (r.git("rm", "-q", "--cached", "a.txt"), modify(r, "b.txt")),
    "typechange": lambda r: ((r.path / "a.txt").unlink(), (r.path / "a.txt").symlink_to("b.txt")),
    "git-mv": lambda r: r.git("mv", "a.txt", "renamed.txt"),
    "git-mv-odd": lambda r: r.git("mv", "sp ace.txt", "ünï/moved here.txt"),
    "git-mv-modified": lambda r: (r.git("mv", "a.txt", "renamed.txt"), modify(r, "renamed.txt", "all new\n")),
    "git-mv-two": lambda r: (r.git("mv", "a.txt", "r1.txt"), r.git("mv", "b.txt", "r2.txt")),
    "plain-mv": lambda r: (r.path / "a.txt").rename(r.path / "renamed.txt"),
    "rename-across-columns": lambda r: (
        shutil.copy(r.path / "a.txt", r.path / "copy.txt"),
        r.git("add", "copy.txt"),
        (r.path / "a.txt").unlink(),
    ),
    "add-and-delete-unrelated": lambda r: (
        modify(r, "brand new.txt", "x\n"),
        r.git("add", "-A"),
        r.git("rm", "-q", "c.txt"),
    ),
    "untracked": lambda r: (
        modify(r, "fresh.txt"),
        modify(r, "newdir/inner/x.py"),
        modify(r, "skip.log"),
        modify(r, "build/out.bin"),
        *(modify(r, f"u/{name}") for name in ODD_NAMES),
    ),
    "odd-names-modified": lambda r: [modify(r, name, "changed\n") for name in ODD_NAMES],
    "odd-names-staged": lambda r: ([modify(r, name, "changed\n") for name in ODD_NAMES], r.git("add", "-A")),
    "nested-repo": lambda r: (
        subprocess.run([GIT, "init", "-q", str(r.path / "vendor/nested")], check=True, env=r.env),
        modify(r, "vendor/nested/file.txt"),
        modify(r, "vendor/loose.txt"),
    ),
    "intent-to-add": lambda r: (modify(r, "ita.txt"), r.git("add", "-N", "ita.txt")),
    "intent-to-add-with-delete": lambda r: (
        modify(r, "ita.txt"),
        r.git("add", "-N", "ita.txt"),
        r.git("rm", "-q", "b.txt"),
    ),
    "everything": lambda r: (
        modify(r, "a.txt"),
        modify(r, "b.txt"),
        r.git("add", "b.txt"),
        modify(r, "dir/sub/deep.py"),
        modify(r, "newdir/x.py"),
        r.git("rm", "-q", "c.txt"),
    ),
}


def conflict(r: Repo) -> None:
    r.git("checkout", "-q", "-b", "other")
    modify(r, "a.txt", "theirs\n")
    modify(r, "b.txt", "theirs b\n")
    r.git("rm", "-q", "c.txt")
    r.git("commit", "-q", "-am", "other")
    r.git("checkout", "-q", "main")
    modify(r, "a.txt", "ours\n")
    modify(r, "c.txt", "ours c\n")
    r.git("commit", "-q", "-am", "ours")
    r.git("merge", "-q", "other", check=False)


SCENARIOS["merge-conflict"] = conflict


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_status_paths_match_the_old_commands(bare_repo: Repo, name: str) -> None:
    committed(bare_repo)
    SCENARIOS[name](bare_repo)
    old = old_status_paths(bare_repo.path)
    assert gitio.status_paths(bare_repo.path) == old
    assert scope._from_git(bare_repo.path) == old_from_git(bare_repo.path)


@pytest.mark.parametrize(
    "config",
    [
        ("diff.renames", "false"),
        ("diff.renames", "copies"),
        ("status.renames", "false"),
        ("status.renames", "copies"),
        ("status.showUntrackedFiles", "no"),
        ("core.quotePath", "true"),
        ("status.relativePaths", "true"),
    ],
)
@pytest.mark.parametrize("name", ["git-mv", "rename-across-columns", "untracked", "odd-names-staged", "everything"])
def test_git_config_does_not_change_the_paths(bare_repo: Repo, name: str, config: tuple[str, str]) -> None:
    committed(bare_repo)
    bare_repo.git("config", *config)
    SCENARIOS[name](bare_repo)
    if config[1] == "copies":
        shutil.copy(bare_repo.path / "b.txt", bare_repo.path / "b-copy.txt")
        bare_repo.git("add", "b-copy.txt")
    assert gitio.status_paths(bare_repo.path) == old_status_paths(bare_repo.path)


@pytest.mark.parametrize(
    "setup",
    [
        lambda r: None,
        lambda r: modify(r, "only-untracked.txt"),
        lambda r: (modify(r, "staged.txt"), r.git("add", "staged.txt")),
        lambda r: (modify(r, "staged.txt"), r.git("add", "staged.txt"), modify(r, "staged.txt", "again\n")),
        lambda r: (modify(r, "staged.txt"), r.git("add", "staged.txt"), (r.path / "staged.txt").unlink()),
        lambda r: (modify(r, "s p/ç.txt"), r.git("add", "-A"), modify(r, "other.txt")),
    ],
    ids=["empty", "untracked", "staged", "staged-modified", "staged-deleted", "odd"],
)
def test_no_commits_yet(bare_repo: Repo, setup: Callable[[Repo], None]) -> None:
    setup(bare_repo)
    assert gitio.status_paths(bare_repo.path) == old_status_paths(bare_repo.path)
    assert list(gitio.recent_commit_paths(bare_repo.path, 10)) == old_recent_commit_paths(bare_repo.path, 10) == []
    assert scope._from_git(bare_repo.path) == old_from_git(bare_repo.path)


def test_submodules(bare_repo: Repo, tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    subprocess.run([GIT, "init", "-q", "-b", "main", str(sub)], check=True, env=bare_repo.env)
    (sub / "s.txt").write_text("s\n")
    subprocess.run([GIT, "add", "-A"], cwd=sub, check=True, env=bare_repo.env)
    subprocess.run([GIT, "commit", "-q", "-m", "s"], cwd=sub, check=True, env=bare_repo.env)
    committed(bare_repo)
    bare_repo.git("-c", "protocol.file.allow=always", "submodule", "-q", "add", str(sub), "mod")
    bare_repo.git("commit", "-q", "-m", "submodule")
    inside = bare_repo.path / "mod"
    steps = [
        lambda: (inside / "untracked.txt").write_text("u\n"),
        lambda: (inside / "s.txt").write_text("dirty\n"),
        lambda: subprocess.run([GIT, "commit", "-q", "-am", "moved"], cwd=inside, check=True, env=bare_repo.env),
        lambda: bare_repo.git("add", "mod"),
    ]
    assert gitio.status_paths(bare_repo.path) == old_status_paths(bare_repo.path)
    for step in steps:
        step()
        assert gitio.status_paths(bare_repo.path) == old_status_paths(bare_repo.path)


def test_subdirectory_roots(bare_repo: Repo) -> None:
    """A ledger below the work tree's root scopes by the paths under it, relative to it."""
    committed(bare_repo)
    root = bare_repo.path / "dir"
    assert scope._from_git(root) == old_from_git(root) == ["sub/deep.py"]  # clean: the last commit's paths
    SCENARIOS["everything"](bare_repo)
    modify(bare_repo, "dir/new file.txt")
    bare_repo.git("mv", "b.txt", "dir/moved.txt")
    for path in (root, bare_repo.path / "dir/sub", bare_repo.path / "ünï"):
        assert scope._from_git(path) == old_from_git(path)
    assert scope._from_git(root) == ["moved.txt", "new file.txt", "sub/deep.py"]


def history(r: Repo, kind: str) -> None:
    committed(r)
    if kind == "root-only":
        return
    if kind == "empty-head":
        r.git("commit", "-q", "--allow-empty", "-m", "empty")
        return
    if kind == "ledger-only-head":
        modify(r, "x.py")
        r.git("add", "x.py")
        r.git("commit", "-q", "-m", "work")
        modify(r, ".docket/ledger.jsonl", "{}\n")
        r.git("add", ".docket/ledger.jsonl")
        r.git("commit", "-q", "-m", "ledger only")
        return
    if kind == "merge-head":
        r.git("checkout", "-q", "-b", "side")
        modify(r, "side.txt")
        r.git("add", "side.txt")
        r.git("commit", "-q", "-m", "side")
        r.git("checkout", "-q", "main")
        modify(r, "main.txt")
        r.git("add", "main.txt")
        r.git("commit", "-q", "-m", "main")
        r.git("merge", "-q", "--no-ff", "-m", "merge", "side")
        return
    if kind == "long":
        for i in range(13):
            modify(r, f"step{i}.txt")
            r.git("add", "-A")
            r.git("commit", "-q", "-m", f"step {i}")
        return
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["root-only", "empty-head", "ledger-only-head", "merge-head", "long"])
def test_recent_commit_paths_match_the_old_commands(bare_repo: Repo, kind: str) -> None:
    history(bare_repo, kind)
    for limit in (0, 1, 2, 10):
        assert list(gitio.recent_commit_paths(bare_repo.path, limit)) == old_recent_commit_paths(bare_repo.path, limit)
    assert scope._from_git(bare_repo.path) == old_from_git(bare_repo.path)


def git_calls(repo: Repo, tmp_path: Path, *args: str) -> list[str]:
    """The git subcommands one ``docket`` process ran (through a logging wrapper around the real git)."""
    shim = tmp_path / "shim"
    shim.mkdir(exist_ok=True)
    log = tmp_path / "git.log"
    log.write_text("")
    wrapper = shim / "git"
    wrapper.write_text(f'#!/bin/sh\n{{ printf "%s\\0" "$@"; printf "\\n"; }} >> "{log}"\nexec "{GIT}" "$@"\n')
    wrapper.chmod(0o755)
    env = dict(repo.env, PATH=f"{shim}{os.pathsep}{repo.env['PATH']}")
    proc = subprocess.run([*args], cwd=repo.path, env=env, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    commands = []
    for call in log.read_bytes().split(b"\0\n"):
        args = [a.decode() for a in call.split(b"\0") if a]
        while args and args[0].startswith("-"):  # global options: -C DIR, -c KEY=VALUE, --no-optional-locks
            args = args[2:] if args[0] in ("-C", "-c") else args[1:]
        if args:
            commands.append(args[0])
    return commands


def test_auto_scope_runs_fewer_git_processes(repo: Repo, tmp_path: Path) -> None:
    """A clean tree: status, then HEAD's paths (was: diff, ls-files, rev-list, diff-tree); a dirty one: status."""
    from tests.conftest import DOCKET

    committed(repo)
    repo.ok("claim", "Scoped", "--scope", "a.txt")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "ledger")
    modify(repo, "a.txt", "work\n")
    repo.git("commit", "-q", "-am", "work on a")
    scan = {"status", "diff", "ls-files", "rev-list", "diff-tree"}
    clean = [c for c in git_calls(repo, tmp_path, DOCKET, "context") if c in scan]
    assert clean == ["status", "diff-tree"]
    modify(repo, "b.txt", "dirty\n")
    dirty = [c for c in git_calls(repo, tmp_path, DOCKET, "context") if c in scan]
    assert dirty == ["status"]
    assert "a.txt" in repo.ok("context").out or "b.txt" in repo.ok("context").out
