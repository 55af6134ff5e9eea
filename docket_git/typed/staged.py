"""The pre-commit check of typed ledger files: every staged record is valid, and none committed is lost.

Typed records are content-addressed, so "append-only" means: every line the
committed file (at HEAD, and at each commit being merged in) holds is still a
line of the staged file. Reordering (``docket ledger compact``) is allowed;
changing or dropping a record is not. A ledger's citation pins file
(``<name>.pins.jsonl``, ``typed.pins``) is append-only the same way, line by line.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from docket_git.typed import envelope, pins

PREFIX = ".docket/ledgers/"


FOLDER = ".docket/ledgers"
_REGULAR = (0o100644, 0o100755)


def _index(root: Path):  # a pygit2.Index (imported late), or None
    import os

    import pygit2

    from docket_git.repo import gitio

    repo = gitio.open_repo(root)
    if repo is None:
        return None
    index_file = os.environ.get("GIT_INDEX_FILE")
    if index_file:
        path = Path(index_file)
        return pygit2.Index(str(path if path.is_absolute() else Path(repo.workdir or ".") / path))
    return repo.index


def _staged(root: Path) -> list[tuple[str, int]]:
    """(path, mode) of the typed ledger files in git's index, and of ``.docket/ledgers`` itself when it is
    an entry (a link or file there); one pass over the index (honours GIT_INDEX_FILE)."""
    index = _index(root)
    if index is None:
        return []
    out = [(e.path, e.mode) for e in index if e.path.startswith(PREFIX) and e.path.endswith(".jsonl")]
    with contextlib.suppress(KeyError):
        out.append((FOLDER, index[FOLDER].mode))
    return out


def staged_paths(root: Path) -> list[str]:
    """The typed ledger files in git's index (honours GIT_INDEX_FILE)."""
    return sorted(path for path, _ in _staged(root) if path != FOLDER)


def _not_regular(staged: list[tuple[str, int]]) -> list[str]:
    """Refusals for a staged ``.docket/ledgers`` that is not a directory, or a typed ledger that is not a file.

    A committed link there would make every clone's typed ledgers live
    wherever it points (docket refuses to read through it), so it is never
    committed.
    """
    out = []
    for path, mode in staged:
        if path == FOLDER or mode not in _REGULAR:
            kind = "a symbolic link" if mode == 0o120000 else "not a regular file"
            what = "typed ledgers live in a directory there" if path == FOLDER else "a typed ledger is a plain file"
            out.append(
                f"{path} is staged as {kind}, and {what} (docket never reads one through a link); "
                f"unstage it with 'git rm --cached {path}' and commit a real one"
            )
    return out


def append_only(
    rel: str,
    staged: bytes | None,
    parents: list[tuple[str, bytes]],
    what: str,
    line_faults: Callable[[bytes], list[str]],
    fix: str = "",
) -> list[str]:
    """What is wrong with one staged append-only file (a typed ledger, a pins file), given the committed
    versions (label, bytes): deleted, no final newline, what line_faults finds, a committed line lost."""
    out: list[str] = []
    if staged is None:
        if parents:
            out.append(f"{rel} is staged for deletion, and {what} are append-only; git checkout HEAD -- {rel}")
        return out
    if staged and not staged.endswith(b"\n"):
        out.append(f"{rel} (staged) does not end with a newline")
    out += [f"{rel} (staged) {fault}" for fault in line_faults(staged)]
    lines = set(staged.split(b"\n"))
    for label, committed in parents:
        for number, raw in envelope.split_lines(committed):
            if raw not in lines:
                out.append(
                    f"{rel} (staged): line {number} of {label}'s version is changed or missing, and {what} "
                    f"are append-only; restore it with 'git checkout {label} -- {rel}'{fix}"
                )
                break
    return out


def _ledger_line_faults(staged: bytes) -> list[str]:
    fix = {"duplicate-record": "; run 'docket ledger compact'"}
    return [f"{found}{fix.get(found.code, '')}" for found in envelope.read(staged)[1]]


def faults(rel: str, staged: bytes | None, parents: list[tuple[str, bytes]]) -> list[str]:
    """What is wrong with one staged typed ledger file, given the committed versions (label, bytes)."""
    fix = " and append new operations with 'docket ledger append'"
    return append_only(rel, staged, parents, "typed ledgers", _ledger_line_faults, fix)


def check(root: Path, against: str | None = None) -> list[str]:
    """Every fault of every staged typed ledger file (empty when all may be committed)."""
    from docket_git.repo import gitio

    rev = against or "HEAD"
    heads = [] if against else gitio.merge_heads(root)
    staged = _staged(root)
    rels = {path for path, _ in staged if path != FOLDER}
    out: list[str] = _not_regular(staged)
    committed_paths = _committed_paths(root, rev)
    for rel in sorted(rels | committed_paths):
        parents = []
        for label, commit in [(rev, rev), *((h[:12], h) for h in heads)]:
            _, data = gitio.blob_at(root, commit, rel)
            if data is not None:
                parents.append((label, data))
        check_one = pins.faults if pins.is_pins_file(rel) else faults
        out += check_one(rel, gitio.staged_blob(root, rel) if rel in rels else None, parents)
    return out


def _committed_paths(root: Path, rev: str) -> set[str]:
    import pygit2

    from docket_git.repo import gitio

    repo = gitio.open_repo(root)
    if repo is None:
        return set()
    try:
        folder = repo[repo.revparse_single(rev).peel(pygit2.Commit).tree[FOLDER].id]
    except (KeyError, ValueError):
        return set()
    if not isinstance(folder, pygit2.Tree):
        return set()  # a link or file there holds no typed ledger (a staged one is refused by _not_regular)
    return {f"{PREFIX}{e.name}" for e in folder if e.name.endswith(".jsonl")}
