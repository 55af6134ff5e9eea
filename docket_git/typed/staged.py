"""The pre-commit check of typed ledger files: every staged record is valid, and none committed is lost.

Typed records are content-addressed, so "append-only" means: every line the
committed file (at HEAD, and at each commit being merged in) holds is still a
line of the staged file. Reordering (``docket ledger compact``) is allowed;
changing or dropping a record is not.
"""

from __future__ import annotations

from pathlib import Path

from docket_git.typed import envelope

PREFIX = ".docket/ledgers/"


def staged_paths(root: Path) -> list[str]:
    """The typed ledger files in git's index (honours GIT_INDEX_FILE)."""
    import os

    import pygit2

    from docket_git.repo import gitio

    repo = gitio.open_repo(root)
    if repo is None:
        return []
    index_file = os.environ.get("GIT_INDEX_FILE")
    if index_file:
        path = Path(index_file)
        index = pygit2.Index(str(path if path.is_absolute() else Path(repo.workdir or ".") / path))
    else:
        index = repo.index
    return sorted(e.path for e in index if e.path.startswith(PREFIX) and e.path.endswith(".jsonl"))


def faults(rel: str, staged: bytes | None, parents: list[tuple[str, bytes]]) -> list[str]:
    """What is wrong with one staged typed ledger file, given the committed versions (label, bytes)."""
    out: list[str] = []
    if staged is None:
        if parents:
            out.append(f"{rel} is staged for deletion, and typed ledgers are append-only; git checkout HEAD -- {rel}")
        return out
    if staged and not staged.endswith(b"\n"):
        out.append(f"{rel} (staged) does not end with a newline")
    _, diagnostics = envelope.read(staged)
    for found in diagnostics:
        fix = "; run 'docket ledger compact'" if found.code == "duplicate-record" else ""
        out.append(f"{rel} (staged) {found}{fix}")
    lines = set(staged.split(b"\n"))
    for label, committed in parents:
        for number, raw in envelope.split_lines(committed):
            if raw not in lines:
                out.append(
                    f"{rel} (staged): line {number} of {label}'s version is changed or missing, and typed "
                    f"ledgers are append-only; restore it with 'git checkout {label} -- {rel}' and append "
                    f"new operations with 'docket ledger append'"
                )
                break
    return out


def check(root: Path, against: str | None = None) -> list[str]:
    """Every fault of every staged typed ledger file (empty when all may be committed)."""
    from docket_git.repo import gitio

    rev = against or "HEAD"
    heads = [] if against else gitio.merge_heads(root)
    rels = set(staged_paths(root))
    out: list[str] = []
    committed_paths = _committed_paths(root, rev)
    for rel in sorted(rels | committed_paths):
        parents = []
        for label, commit in [(rev, rev), *((h[:12], h) for h in heads)]:
            _, data = gitio.blob_at(root, commit, rel)
            if data is not None:
                parents.append((label, data))
        out += faults(rel, gitio.staged_blob(root, rel) if rel in rels else None, parents)
    return out


def _committed_paths(root: Path, rev: str) -> set[str]:
    import pygit2

    from docket_git.repo import gitio

    repo = gitio.open_repo(root)
    if repo is None:
        return set()
    try:
        folder = repo.revparse_single(rev).peel(pygit2.Commit).tree[".docket/ledgers"]
    except (KeyError, ValueError):
        return set()
    return {f"{PREFIX}{e.name}" for e in repo[folder.id] if e.name.endswith(".jsonl")}
