"""Typed ledgers stored the gh-aw way: shard files on the branch ``ledgers/<name>``, read and written
through pygit2 without a checkout.

gh-aw keeps each ledger on its own branch, as files ``ledger/shards/<uuidv4>.jsonl`` (one per writer,
many record lines each). This module reads every record line of such a ledger, enforcing the limits
gh-aw's reader enforces (at most 1024 files, each at most ``max_segment_kb`` KiB, 100 MiB in all), and
appends lines as a new shard file in a new commit on that branch, as gh-aw's persistence job does: the
ref moves only forward, by compare-and-swap, and neither the work tree nor the index is touched.
Pushing stays the user's.

Which branch is read: the local ``ledgers/<name>`` and the remote-tracking ``origin/ledgers/<name>``
may both exist. When one contains the other (by ancestry), the newer one is read; when they have
diverged, the union of their shard files (what a merge of the two yields: gh-aw's shards never share
a name). A write goes on top of what was read (a merge commit of both tips when they diverged), onto
the local branch. See docs/typed-ledgers.md, "Branch storage".
"""

from __future__ import annotations

import os
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from docket_git.ledger.store import LedgerError

PREFIX = "ledgers/"
REMOTE = "origin"
SHARDS = "ledger/shards"
COVERAGE = "ledger/coverage"
#: docket's citation pins of a notes ledger (``typed.pins``): files of their own, outside the ``ledger/``
#: folder whose shard and coverage patterns are all gh-aw reads, so gh-aw never sees them.
PINS = "docket/pins"
SHARD_NAME = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.jsonl")
#: gh-aw's reader: at most this many shard and coverage files, this many bytes in all.
MAX_FILES = 1024
MAX_TOTAL = 100 << 20
#: gh-aw's writer: a written line is at most min(40 KiB, max_record_kb KiB + 5 KiB, max_segment_kb KiB).
MAX_LINE = 40 << 10
LINE_SLACK = 5 << 10
_REGULAR = (0o100644, 0o100755)
#: How many times a write is retried on top of a branch that moved under it.
RETRIES = 8


class BranchError(LedgerError):
    """A branch ledger that cannot be read or written as gh-aw would; nothing was written."""


class Moved(Exception):
    """The branch moved between the read and the write (the compare-and-swap failed): read again."""


@dataclass
class Source:
    """What was read of a branch ledger: its record lines and which commits they came from."""

    name: str
    #: Every shard's lines, shards in path order (a diverged pair: the union of their shard files).
    data: bytes
    #: (path, first line in ``data``, line count) of each shard read, in order.
    shards: list[tuple[str, int, int]] = field(default_factory=list)
    #: The local and remote-tracking tips seen (None: no such branch).
    local: str | None = None
    remote: str | None = None
    #: The commits a write goes on top of (none, one, or both tips when they diverged).
    parents: list[str] = field(default_factory=list)
    #: path -> blob id of every file read, so a write keeps the same tree plus its new shards.
    files: dict[str, str] = field(default_factory=dict)
    #: The lines of every pins file (``docket/pins/*.jsonl``), in path order.
    pins: bytes = b""

    @property
    def key(self) -> str:
        """The identity of what was read: a projection stamped with it is current while the tips stay."""
        return f"{self.local or '-'}/{self.remote or '-'}"

    def line_at(self, path: str) -> int:
        """The line of ``data`` a new shard at path would start at (shards are read in path order)."""
        return 1 + sum(count for shard, _, count in self.shards if shard < path)

    def where(self, line: int) -> str:
        """A line of ``data`` as the shard file and line within it."""
        for path, first, count in self.shards:
            if first <= line < first + count:
                return f"{path} line {line - first + 1}"
        return f"line {line}"


def ref_names(name: str) -> tuple[str, str]:
    """The local branch and the remote-tracking ref that hold ledger name."""
    return f"refs/heads/{PREFIX}{name}", f"refs/remotes/{REMOTE}/{PREFIX}{name}"


def label(name: str) -> str:
    """How messages name a branch ledger's storage."""
    return f"branch {PREFIX}{name}"


def _open(root: Path):  # -> pygit2.Repository
    from docket_git.repo import gitio

    repo = gitio.open_repo(root)
    if repo is None:
        raise BranchError(f"{root} is not a git repository; a branch ledger lives on a git branch")
    return repo


def _tip(repo, refname: str) -> str | None:
    import pygit2

    try:
        ref = repo.references[refname]
    except (KeyError, pygit2.InvalidSpecError):
        return None
    try:
        commit = str(ref.peel(pygit2.Commit).id)
    except (pygit2.GitError, ValueError):
        commit = None
    if commit is None or commit != str(ref.resolve().target):
        raise BranchError(f"{refname} does not point at a commit; a ledger branch holds commits of shard files")
    return commit


def fast_key(root: Path, name: str) -> str | None:
    """``Source.key`` read from the ref files alone (no pygit2, no tree read), or None when it cannot be told
    that way (a symbolic ref, a reftable repository): what proves a projection current in a few stats."""
    from docket_git.repo import gitio

    try:
        dirs = gitio._git_dirs(root)
        if dirs is None or (dirs[1] / "reftable").exists():
            return None
        common = dirs[1]
        packed: str | None = None
        tips = []
        for refname in ref_names(name):
            path = common / refname
            if path.is_file():
                value = gitio._text(path).strip()
            else:
                if packed is None:
                    packed_path = common / "packed-refs"
                    packed = gitio._text(packed_path, 1 << 30) if packed_path.is_file() else ""
                value = next((ln.split(" ", 1)[0] for ln in packed.splitlines() if ln.endswith(" " + refname)), "-")
            if not re.fullmatch(r"[0-9a-f]{40}([0-9a-f]{24})?|-", value):
                return None
            tips.append(value)
        return "/".join(tips)
    except OSError:
        return None


def _folder(repo, tree, path: str, where: str) -> list:
    """The entries of the folder at path in tree (none when absent); refuses a path that is not a folder."""
    import pygit2

    try:
        entry = tree[path]
    except KeyError:
        return []
    obj = repo.get(entry.id) if entry.filemode == pygit2.GIT_FILEMODE_TREE else None
    if not isinstance(obj, pygit2.Tree):
        raise BranchError(f"{where}: {path} is not a folder, so gh-aw cannot read the ledger from it")
    return list(obj)


def _shard_files(repo, commit_id: str, name: str, limits: tuple[int, int]) -> dict[str, str]:
    """path -> blob id of the shard files in commit's tree, each checked as gh-aw's reader checks it."""
    segment = limits[0] * 1024
    where = f"{label(name)} at {commit_id[:12]}"
    tree = repo[commit_id].tree
    if _folder(repo, tree, COVERAGE, where):
        raise BranchError(
            f"{where} holds compaction coverage files ({COVERAGE}/), which docket does not replay yet; "
            f"read this ledger with gh-aw"
        )
    out: dict[str, str] = {}
    for entry in _folder(repo, tree, SHARDS, where):
        path = f"{SHARDS}/{entry.name}"
        if not entry.name.endswith(".jsonl"):
            continue  # gh-aw reads only the shard pattern
        if not SHARD_NAME.fullmatch(entry.name):
            raise BranchError(
                f"{where}: {path} is not named <uuidv4>.jsonl, and gh-aw refuses such a shard (invalid-envelope)"
            )
        if entry.filemode not in _REGULAR:
            raise BranchError(f"{where}: {path} is not a regular file, and gh-aw reads shards only from files")
        size = repo[entry.id].size
        if size > segment:
            raise BranchError(
                f"{where}: {path} holds {size} bytes, more than max_segment_kb = {limits[0]} KiB, gh-aw's limit "
                f"for one shard (raise max_segment_kb in the declaration if the workflow does)"
            )
        out[path] = str(entry.id)
    for entry in _folder(repo, tree, PINS, where):
        if entry.name.endswith(".jsonl") and entry.filemode in _REGULAR:
            out[f"{PINS}/{entry.name}"] = str(entry.id)
    return out


def _check_totals(repo, files: dict[str, str], where: str) -> None:
    shards = [oid for path, oid in files.items() if path.startswith(SHARDS + "/")]
    if len(shards) > MAX_FILES:
        raise BranchError(f"{where} has {len(shards)} shard files, more than the {MAX_FILES} gh-aw reads")
    total = sum(repo[oid].size for oid in shards)
    if total > MAX_TOTAL:
        raise BranchError(f"{where} has {total} bytes of shards, more than the {MAX_TOTAL >> 20} MiB gh-aw reads")
    pins = sum(repo[oid].size for path, oid in files.items() if path.startswith(PINS + "/"))
    if pins > MAX_TOTAL:
        raise BranchError(f"{where} has {pins} bytes of citation pins ({PINS}/), more than docket reads")


def read(root: Path, name: str, limits: tuple[int, int]) -> Source:
    """Every record line of ledger name's branch; limits = (max_segment_kb, max_record_kb).

    A missing branch is an empty ledger. Raises ``BranchError`` where gh-aw's reader would refuse.
    """
    repo = _open(root)
    local_ref, remote_ref = ref_names(name)
    local, remote = _tip(repo, local_ref), _tip(repo, remote_ref)
    if local and remote and local != remote:
        if repo.descendant_of(local, remote):
            parents = [local]
        elif repo.descendant_of(remote, local):
            parents = [remote]
        else:
            parents = [local, remote]
    else:
        parents = [t for t in (local or remote,) if t]
    files: dict[str, str] = {}
    for tip in parents:
        for path, oid in _shard_files(repo, tip, name, limits).items():
            if files.setdefault(path, oid) != oid:
                raise BranchError(
                    f"{label(name)} and {REMOTE}/{PREFIX}{name} hold different files at {path}; gh-aw never "
                    f"rewrites a shard, so merge or repair them before docket reads the ledger"
                )
    _check_totals(repo, files, label(name))
    chunks: list[bytes] = []
    shards: list[tuple[str, int, int]] = []
    line = 1
    pins = b"".join(_lines(repo[files[p]].data) for p in sorted(files) if p.startswith(PINS + "/"))
    for path in sorted(p for p in files if p.startswith(SHARDS + "/")):
        data = repo[files[path]].data
        if data and not data.endswith(b"\n"):
            raise BranchError(
                f"{label(name)}: {path} does not end with a newline (gh-aw: truncated-record); gh-aw's "
                f"projection refuses the ledger until the shard is repaired"
            )
        count = data.count(b"\n")
        shards.append((path, line, count))
        line += count
        chunks.append(data)
    return Source(name, b"".join(chunks), shards, local, remote, parents, files, pins)


def _lines(data: bytes) -> bytes:
    return data if not data or data.endswith(b"\n") else data + b"\n"  # a torn pin line never joins the next


def shard_path() -> str:
    """A new shard file's path: a fresh UUIDv4 name, as each gh-aw writer takes."""
    return f"{SHARDS}/{uuid.uuid4()}.jsonl"


def split_shards(lines: list[bytes], limits: tuple[int, int]) -> list[bytes]:
    """The new lines (each ending in a newline) cut into shards of at most max_segment_kb KiB, as gh-aw
    rotates a writer's shard; refuses a line over gh-aw's written-line limit."""
    segment, record = limits[0] * 1024, limits[1] * 1024
    most = min(MAX_LINE, record + LINE_SLACK, segment)
    out: list[bytes] = []
    current = b""
    for raw in lines:
        if len(raw) > most:
            raise BranchError(
                f"a record line of {len(raw)} bytes is over gh-aw's limit of {most} bytes for one written "
                f"line (max_record_kb = {limits[1]}); nothing was written"
            )
        if current and len(current) + len(raw) > segment:
            out.append(current)
            current = b""
        current += raw
    if current:
        out.append(current)
    return out


def _signature(repo):
    import pygit2

    def one(kind: str):
        name, email = os.environ.get(f"GIT_{kind}_NAME"), os.environ.get(f"GIT_{kind}_EMAIL")
        if name and email:
            return pygit2.Signature(name, email)
        try:
            return repo.default_signature
        except (KeyError, pygit2.GitError):
            return pygit2.Signature("docket", "docket@localhost")

    return one("AUTHOR"), one("COMMITTER")


def _checked_out(repo, refname: str) -> bool:
    """True when refname is the HEAD of the repository or of one of its linked worktrees."""
    heads = [Path(repo.path) / "HEAD"]
    common = Path(repo.path)
    if (common / "commondir").exists():
        common = (common / (common / "commondir").read_text().strip()).resolve()
    heads.append(common / "HEAD")
    worktrees = common / "worktrees"
    if worktrees.is_dir():
        heads += [w / "HEAD" for w in worktrees.iterdir()]
    for head in heads:
        try:
            text = head.read_text(errors="replace").strip()
        except OSError:
            continue
        if text == f"ref: {refname}":
            return True
    return False


def append(root: Path, source: Source, shards: list[tuple[str, bytes]], message: str, pins: bytes = b"") -> str:
    """Commit shards (and a notes ledger's new citation pins, in a pins file of their own) as new files on
    top of what source read and move the local branch there by compare-and-swap; the new commit's id.
    Raises ``Moved`` when the branch moved since the read."""
    import pygit2

    repo = _open(root)
    refname = ref_names(source.name)[0]
    if _checked_out(repo, refname):
        raise BranchError(
            f"{PREFIX}{source.name} is checked out; docket writes that branch without a checkout, so switch "
            f"to another branch first; nothing was written"
        )
    tree_files = dict(source.files)
    index = pygit2.Index()  # in memory: never the repository's index
    if source.parents:
        index.read_tree(repo[source.parents[0]].tree)
        for path, oid in tree_files.items():  # the other tip's shards (a diverged pair)
            if path not in index:
                index.add(pygit2.IndexEntry(path, pygit2.Oid(hex=oid), pygit2.GIT_FILEMODE_BLOB))
    for path, data in shards:
        index.add(pygit2.IndexEntry(path, repo.create_blob(data), pygit2.GIT_FILEMODE_BLOB))
        tree_files[path] = ""
    if pins:
        index.add(pygit2.IndexEntry(f"{PINS}/{uuid.uuid4()}.jsonl", repo.create_blob(pins), pygit2.GIT_FILEMODE_BLOB))
    count = sum(1 for path in tree_files if path.startswith(SHARDS + "/"))
    if count > MAX_FILES:
        raise BranchError(
            f"{label(source.name)} would hold {count} shard files, more than the {MAX_FILES} gh-aw "
            f"reads; nothing was written"
        )
    total = len(source.data) + sum(len(d) for _, d in shards)
    if total > MAX_TOTAL:
        raise BranchError(
            f"{label(source.name)} would hold {total} bytes of shards, more than the {MAX_TOTAL >> 20} MiB gh-aw "
            f"reads; nothing was written"
        )
    tree = index.write_tree(repo)
    author, committer = _signature(repo)
    parents = [pygit2.Oid(hex=p) for p in source.parents]
    commit = repo.create_commit(None, author, committer, message, tree, parents)
    reflog = f"docket: {message.splitlines()[0]}"
    try:
        if source.local is None:
            repo.create_reference_direct(refname, commit, False, message=reflog)
        else:
            ref = repo.references[refname]
            if str(ref.target) != source.local:
                raise Moved()
            ref.set_target(commit, reflog)
    except pygit2.AlreadyExistsError:
        raise Moved() from None
    except (pygit2.GitError, OSError) as exc:
        # Another writer moved the ref since the read, or holds its lock file right now: read again.
        if "does not match" in str(exc) or ".lock" in str(exc):
            raise Moved() from None
        raise BranchError(f"cannot move {refname}: {exc}") from None
    return str(commit)
