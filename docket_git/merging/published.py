"""Which side of a merge is already published: the rule that keeps pushed IDs stable.

A merge renumbers one side's new records. The records that are already on
the default branch (``refs/remotes/<remote>/HEAD``'s target; in a repository
without a remote, the local ``main``, else ``master``) or on the current
branch's upstream (``@{upstream}``: what ``git pull`` brings in) keep their
IDs; only the side that no such ref holds is renumbered. A side's new records
are published when a published ref's ledger continues the shared prefix with
the same first new line (ledgers only grow, so it then holds the rest that
was pushed). The default branch outranks the upstream; on a tie ours is kept,
as git's orientation has it.

The driver is started by git with temp files only, so the refs are found from
the git directory (read as files: ``HEAD``, ``config``, the remotes' ``HEAD``
symrefs) and their ledger blobs are read with a single ``git cat-file --batch``.
This module imports nothing heavy: it runs in the driver's cold start.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from docket_git.repo import gitio

#: Ranks: a record on the default branch outranks one only on the upstream.
DEFAULT, UPSTREAM = 2, 1
_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')
_ENTRY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*?))?\s*$")


@dataclass(frozen=True)
class Published:
    """A published ref's ledger: its short name (``origin/main``), rank and bytes."""

    label: str
    rank: int
    data: bytes


def git_dir(environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> Path | None:
    """The git directory of the repository the driver runs in (``GIT_DIR``, else ``.git`` upwards of cwd)."""
    env = os.environ if environ is None else environ
    if env.get("GIT_DIR"):
        return Path(env["GIT_DIR"]).resolve()
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return dot
        if dot.is_file():
            try:
                text = dot.read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                return None
            if text.startswith("gitdir:"):
                target = Path(text[len("gitdir:") :].strip())
                return (target if target.is_absolute() else folder / target).resolve()
            return None
    return None


def operation(gdir: Path | None, environ: Mapping[str, str] | None = None) -> str:
    """What git is doing while the driver runs, named as a person typed it.

    ``git merge`` and ``git pull`` set ``GITHEAD_<sha>`` for each merged head;
    a rebase keeps ``rebase-merge/`` or ``rebase-apply/``; the rest (a
    cherry-pick, a revert, ``git stash apply``) is a pick of one commit.
    """
    env = os.environ if environ is None else environ
    action = env.get("GIT_REFLOG_ACTION", "")
    pull = action.split()[:1] == ["pull"]
    if gdir is not None and ((gdir / "rebase-merge").is_dir() or (gdir / "rebase-apply").is_dir()):
        return "git pull --rebase" if pull else "git rebase"
    if any(name.startswith("GITHEAD_") for name in env):
        return "git pull" if pull else "git merge"
    if gdir is not None and (gdir / "REVERT_HEAD").is_file():
        return "git revert"
    return "git cherry-pick"


def _config(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    """(section, subsection) -> {key: value} of a git config file (the plain form git writes)."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return out
    current: dict[str, str] | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        section = _SECTION.match(stripped)
        if section:
            current = out.setdefault((section.group(1).lower(), section.group(2) or ""), {})
            continue
        entry = _ENTRY.match(stripped)
        if entry and current is not None:
            value = (entry.group(2) or "").strip()
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            current[entry.group(1).lower()] = value
    return out


def _symref(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return text[4:].strip() if text.startswith("ref:") else None


def candidates(gdir: Path) -> list[tuple[str, int, str]]:
    """(label, rank, revision) of each ref whose records keep their IDs, highest rank first."""
    common = gitio.common_of(gdir)
    config = _config(common / "config")
    remotes = sorted(sub for (section, sub) in config if section == "remote" and sub)
    out: list[tuple[str, int, str]] = []
    for remote in remotes:
        target = _symref(common / "refs" / "remotes" / remote / "HEAD")
        if target and target.startswith("refs/remotes/"):
            out.append((target[len("refs/remotes/") :], DEFAULT, target))
        else:  # a clone of an empty repository has no remote HEAD yet
            out += [(f"{remote}/{name}", DEFAULT, f"refs/remotes/{remote}/{name}") for name in ("main", "master")]
    if not remotes:
        out += [(name, DEFAULT, f"refs/heads/{name}") for name in ("main", "master")]
    head = _symref(gdir / "HEAD")
    if head and head.startswith("refs/heads/"):
        branch = config.get(("branch", head[len("refs/heads/") :]), {})
        remote, merge = branch.get("remote", ""), branch.get("merge", "")
        if remote and merge.startswith("refs/heads/"):
            name = merge[len("refs/heads/") :]
            label = name if remote == "." else f"{remote}/{name}"
            ref = f"refs/heads/{name}" if remote == "." else f"refs/remotes/{remote}/{name}"
            out.append((label, UPSTREAM, ref))
    return out


def read(gdir: Path | None, path: str) -> list[Published]:
    """The published refs' ledgers at path, highest rank first (one ``git cat-file --batch``)."""
    if gdir is None:
        return []
    wanted = candidates(gdir)
    if not wanted:
        return []
    from docket_git.repo.gitio import run_git

    request = "".join(f"{ref}:{path}\n" for _, _, ref in wanted).encode()
    # git -C <git dir>: refs and objects resolve there, and no subprocess import (the driver's cold start)
    data = run_git(gdir, "cat-file", "--batch", stdin=request)
    if data is None:
        return []
    out: list[Published] = []
    pos, seen = 0, set()
    for label, rank, _ in wanted:
        end = data.find(b"\n", pos)
        if end < 0:
            break
        header = data[pos:end].split()
        pos = end + 1
        if len(header) != 3:
            continue  # "<rev> missing" (no such ref, or no ledger there)
        size = int(header[2])
        body = data[pos : pos + size]
        pos += size + 1
        if header[1] == b"blob" and header[0] not in seen:
            seen.add(header[0])
            out.append(Published(label, rank, body))
    return out


def user_name(gdir: Path | None, environ: Mapping[str, str] | None = None) -> str:
    """Who is working in this clone: ``GIT_AUTHOR_NAME``, else user.name of the repository's or the global config."""
    env = os.environ if environ is None else environ
    if env.get("GIT_AUTHOR_NAME"):
        return env["GIT_AUTHOR_NAME"]
    places = [gitio.common_of(gdir) / "config"] if gdir is not None else []
    if env.get("GIT_CONFIG_GLOBAL"):
        places.append(Path(env["GIT_CONFIG_GLOBAL"]))
    else:
        home = Path(env.get("HOME", "~")).expanduser()
        places += [Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "git" / "config", home / ".gitconfig"]
    for place in places:
        name = _config(place).get(("user", ""), {}).get("name")
        if name:
            return name
    return ""


def local_label(gdir: Path | None, branch: str) -> str:
    """``bob's local main`` (``the local main`` when no name is configured)."""
    name = user_name(gdir)
    return f"{name}'s local {branch}" if name else f"the local {branch}"


def replayed_source(gdir: Path | None, what: str) -> str:
    """Where the records a rebase or cherry-pick replays come from: ``bob's local main``, ``a picked commit``."""
    if gdir is not None and what in ("git rebase", "git pull --rebase"):
        for folder in ("rebase-merge", "rebase-apply"):
            try:
                head = (gdir / folder / "head-name").read_text(encoding="utf-8").strip()
            except OSError:
                continue
            branch = head[len("refs/heads/") :] if head.startswith("refs/heads/") else "detached HEAD"
            return local_label(gdir, branch)
    return "a picked commit" if what == "git cherry-pick" else "a reverted commit" if what == "git revert" else ""
