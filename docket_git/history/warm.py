"""The history database warmed in the background once a session hook has answered.

A clone's first question about an ID its ledger does not hold (or any ID a
merge renumbered) recomputes the renumbering of every merge within the search
limit: seconds at 100k records over 2,000 commits (a ledger under 1 MiB is
not warmed: its merges are cheaper to recompute). Every later question reads
what that first one kept (``history.cache``). So a session-start hook, which
runs after every pull an agent starts work on, names the repository
(``later``), and once its answer is out ``finish`` starts a detached
``python -m docket_git.history.warm LEDGER HEAD`` that recomputes what the
database does not hold yet and then notes the HEAD it warmed for beside the
database (``<database>.warm``). A hook at a HEAD already warmed for starts
nothing: it reads one small file.

The child is a fresh interpreter in a session of its own, its standard
streams the null device, at a lower priority; two of them never run at once
(the later one finds the first's lock and leaves). What it cannot do, the
first question does, as before: warming only ever saves time.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from pathlib import Path

from docket_git.repo import gitio

#: (ledger, HEAD) pairs ``finish`` warms for once this process has answered.
_later: list[tuple[Path, str]] = []


def marker(start: Path) -> Path | None:
    """Where the HEAD the history database was last warmed for is noted (None: not in a repository)."""
    from docket_git.history.cache import path_for

    common = gitio.common_dir(start)
    return None if common is None else path_for(common).with_suffix(".warm")


#: A ledger smaller than this is not warmed: its merges' ledgers are small to recompute (0.3 s at 1k records
#: over 205 commits; about 3 s at 10k records over 2,005).
WARM_FROM = 1 << 20


def later(ledger: Path) -> None:
    """Have ``finish`` warm the history database of ledger's repository, unless it is small or was warmed
    for the current HEAD already."""
    try:
        if os.stat(ledger).st_size < WARM_FROM:
            return
    except OSError:
        return
    head = gitio.head_commit(ledger.parent)
    path = marker(ledger.parent)
    if head is None or path is None:
        return
    try:
        if path.read_text() == _noted(ledger, head):
            return
    except (OSError, UnicodeDecodeError):
        pass
    _later.append((ledger, head))


def _noted(ledger: Path, head: str) -> str:
    """What the marker says once ledger's history was warmed at head."""
    return f"{head} {ledger}"


def finish() -> list[int]:
    """Start a detached warmer for each repository ``later`` named, unless its ``config.toml`` says
    ``[history] warm = false``; the caller goes on at once. The warmers' process IDs."""
    started: list[int] = []
    if not _later:
        return started
    from docket_git.history.renumbering import settings  # read after the answer, and only when there is work

    null = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDWR, 0),
        (os.POSIX_SPAWN_DUP2, 0, 1),
        (os.POSIX_SPAWN_DUP2, 0, 2),
    ]
    for ledger, head in _later:
        if settings(ledger.parent).get("warm", True) is False:
            continue
        # posix_spawn, not subprocess: a session hook never loads that module; a failure leaves the first
        # question to recompute the merges, as before
        with contextlib.suppress(OSError, AttributeError, NotImplementedError):
            started.append(
                os.posix_spawn(
                    sys.executable,
                    [sys.executable, "-m", "docket_git.history.warm", str(ledger), head],
                    os.environ,
                    file_actions=null,
                    setsid=True,
                )
            )
    _later.clear()
    return started


def warm(ledger: Path, head: str) -> bool:
    """Recompute and keep every merge's renumbering of ledger within the search limit; note head.

    False: another process is warming, or ledger is not in a git work tree.
    """
    from docket_git.history.renumbering import History

    root, path = gitio.workdir(ledger.parent), marker(ledger.parent)
    if root is None or path is None:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".warm-lock"), "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        history = History(root, ledger.resolve().relative_to(root.resolve()).as_posix())
        try:
            history.aliases()
        finally:
            history.save()
        temporary = path.with_suffix(".warm-new")
        temporary.write_text(_noted(ledger, head))
        os.replace(temporary, path)
    return True


if __name__ == "__main__":
    with contextlib.suppress(OSError):
        os.nice(10)
    try:
        warm(Path(sys.argv[1]), sys.argv[2])
    except Exception:  # nothing to say to anyone: the first question recomputes what this could not
        sys.exit(1)
