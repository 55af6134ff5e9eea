"""Baselines and renumberings recovered from commit history.

A merge renumbers the records the other branch added (``rebase.merge``), so an
ID or an ``ID@DIGEST`` baseline taken on that branch no longer names the same
record. git keeps every version of the ledger, and the merge is deterministic:
recomputing it on the merge base's and both parents' ledgers tells which IDs
it renumbered. From that:

- the **alias table**: (old ID, the merged-in commit, its branch) -> the ID
  the merge gave it, one entry per record a merge took in (``aliases``);
- (in ``history.baseline``) ``baseline_from_digest`` / ``baseline_from_rev``: a baseline's records from
  the ledger version it was taken on, and ``match_into`` to find them in the
  current ledger by the ID-blind content key the merge uses;
- ``History.origin``: the commit that added a record and the merges that
  renumbered it on the way, for ``docket log``.

Cost model: decompressing a large ledger blob costs milliseconds, so each
blob is read and parsed at most once per command, and what a blob or a merge
commit says (its record count, a merge's renumbering) is kept in one SQLite
database per repository in the user cache dir (``history.cache``), keyed by
blob and commit IDs (immutable), never in the repository. A new commit only
adds rows; nothing is recomputed.

With several merge bases (a criss-cross history), git's recursive/ort
strategy first merges the bases into a virtual base, running the driver on
them too. The recomputation does the same with ``rebase.merge``: the bases'
ledgers, oldest first, merged pairwise with an empty base (the inner merge
base only matters for records a side deleted, which an append-only ledger
never does). An octopus merge is taken as git does it: each further parent
merged in turn into the result so far.

Git runs no driver when this side's ledger is the merge base's (a
fast-forward, ``--no-ff`` of a descendant, nothing new here since a base): it
takes the other parent's file as it is. Such a merge renumbered nothing
itself (the other side's own merge did), and the ledger's line of growth
goes through that parent, not the first one (``ledger_parent``).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from docket_git.errors import LedgerError
from docket_git.history.cache import HistoryCache, path_for
from docket_git.ledger import canonical, jsonl, model
from docket_git.ledger.store import LEDGER_DIR, LEDGER_NAME
from docket_git.merging import rebase, staged
from docket_git.merging.rebase import RawLedger
from docket_git.repo import files, gitio

DEFAULT_SEARCH_LIMIT = 2000
LEDGER_RELPATH = f"{LEDGER_DIR}/{LEDGER_NAME}"
#: git's merge subjects: a pull request, or a branch (``of URL`` after git pull, `` into X`` off main).
_MERGE_SUBJECT = re.compile(
    r"^Merge (?:pull request #\d+ from [^/\s]+/(?P<pr>\S+)"
    r"|(?:remote-tracking )?branch '(?P<branch>[^']+)'(?: of (?P<url>\S+))?(?: into (?P<into>\S+))?)"
)


class HistoryUnavailable(LedgerError):
    """The history cannot answer here (no repository, no commits)."""


@dataclass(frozen=True)
class Alias:
    """One record a merge took in from another parent: its ID there and the ID the merge gave it."""

    old: str
    new: str
    #: The merge commit.
    merge: str
    #: The merged-in parent, and its branch name when known ("" otherwise).
    source: str
    branch: str
    #: The record's 0-based position in the source's ledger.
    index: int

    @property
    def renumbered(self) -> bool:
        """True when the merge gave the record a different ID."""
        return self.old != self.new


parse_ref = model.parse_ref


def settings(ledger_dir: Path) -> dict:
    """The ``[history]`` table of ledger_dir's ``config.toml``; empty when there is none or it cannot be read."""
    try:
        table = tomllib.loads(files.read_text(ledger_dir / "config.toml", ledger_dir.parent)).get("history", {})
    except (OSError, LedgerError, ValueError, RecursionError):  # ValueError: TOML, 4,300+ digits
        return {}
    return table if isinstance(table, dict) else {}


def search_limit(repo_root: Path) -> int:
    """``history.search_limit`` from ``.docket/config.toml``, else the default (2000)."""
    value = settings(Path(repo_root) / LEDGER_DIR).get("search_limit", DEFAULT_SEARCH_LIMIT)
    usable = isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 1_000_000_000
    return value if usable else DEFAULT_SEARCH_LIMIT


def _bulk(lines: Sequence[bytes]) -> list[dict]:
    """Parse ledger lines at once; a historical version's unreadable lines are left out."""
    records = jsonl.decode_many(lines)
    if records is None:
        out = []
        for line in lines:
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(record, dict) and model.is_id(record.get("id")):
                out.append(record)
        return out
    return records


def _by_old(aliases: list[Alias]) -> dict[str, list[Alias]]:
    out: dict[str, list[Alias]] = {}
    for alias in aliases:
        out.setdefault(alias.old, []).append(alias)
    return out


class History:
    """One command's view of the ledger's history: blobs read once, merges recomputed once."""

    def __init__(self, repo_root: Path, relpath: str = LEDGER_RELPATH, limit: int | None = None) -> None:
        graph = gitio.open_graph(Path(repo_root))
        if graph is None:
            raise HistoryUnavailable("not in a git repository; ledger history needs one")
        self.graph = graph
        self.relpath = relpath
        self.limit = limit if limit is not None else search_limit(Path(repo_root))
        self._head = graph.head()
        self._data: dict[str, bytes] = {}
        self._ledgers: dict[str, RawLedger] = {}
        self._touching: list[str] | None = None
        self._walked: list[str] = []
        self._counts: dict[str, int] = {}
        self._merges: dict[str, list[Alias]] = {}
        self._kept: dict[str, str | None] = {}
        self.cache = HistoryCache(path_for(gitio.common_of(Path(graph.repo.path))))
        #: This worktree's git directory, where ``merging.journal`` keeps renumberings no merge records.
        self.git_dir = Path(graph.repo.path)
        #: Merge only the lines past what the sides share (``_tails``); False merges whole ledgers (the tests' oracle).
        self.trim = True

    def save(self) -> None:
        """Write what this command learned to the history database (never fails a command); stop git readers."""
        self.graph.close()
        self.cache.flush()

    # -- commits and blobs --------------------------------------------------------------

    @property
    def head(self) -> str:
        """The commit HEAD names; HistoryUnavailable when there are no commits yet."""
        if self._head is None:
            raise HistoryUnavailable("this repository has no commits yet; ledger history starts with the first commit")
        return self._head

    @property
    def shallow(self) -> bool:
        """True in a shallow clone."""
        return self.graph.shallow

    def blob_at(self, commit: str) -> str | None:
        """The ledger's blob ID at commit (None when the commit has no ledger)."""
        return self.graph.file_blob(commit, self.relpath)

    def data(self, blob: str) -> bytes:
        """A ledger blob's bytes, read once per command."""
        found = self._data.get(blob)
        if found is None:
            found = self._data[blob] = self.graph.blob(blob)
        return found

    def ledger(self, blob: str | None) -> RawLedger:
        """A ledger blob as lazily parsed records, parsed once per command (empty for None)."""
        if blob is None:
            return RawLedger(b"")
        found = self._ledgers.get(blob)
        if found is None:
            found = self._ledgers[blob] = RawLedger(self.data(blob), lenient=True)
            if blob not in self._counts:
                self._counts[blob] = len(found)
                self.cache.put_count(blob, len(found))
        return found

    def count(self, blob: str | None) -> int:
        """How many records the ledger blob holds (cached across commands)."""
        if blob is None:
            return 0
        known = self._counts.get(blob)
        if known is None:
            known = self.cache.count(blob)
            if known is None:
                return len(self.ledger(blob))
            self._counts[blob] = known
        return known

    def records_at(self, commit: str) -> list[dict]:
        """Every record of the ledger at commit, parsed."""
        blob = self.blob_at(commit)
        return _bulk(self.ledger(blob).lines) if blob else []

    def touching(self) -> list[str]:
        """Commits that changed the ledger (or merged differing ledgers), newest first, at most ``limit``."""
        if self._touching is not None:
            return self._touching
        out: list[str] = []
        self._walked = []
        for walked, commit in enumerate(self.graph.walk(self.head), start=1):
            self._walked.append(commit)
            blob = self.blob_at(commit)
            parents = [self.blob_at(p) for p in self.graph.parents(commit)]
            if (not parents and blob is not None) or (parents and any(p != blob for p in parents)):
                out.append(commit)
                if len(out) >= self.limit:
                    break
            if walked >= self.limit * 50:  # commits that never touch the ledger still cost a walk
                break
        self._touching = out
        return out

    # -- renumbering ----------------------------------------------------------------------

    def _virtual_base(self, bases: list[str]) -> Sequence:
        ledgers = [self.ledger(self.blob_at(b)) for b in bases]
        if not ledgers:
            return []
        base: Sequence = ledgers[0]
        for other in ledgers[1:]:
            try:
                tail, _, _ = rebase.merge([], base, other)
            except (rebase.MergeRefused, ValueError, TypeError, KeyError):
                continue
            base = [*base, *tail]
        return base

    def _branch(self, merge: str, source: str, nth: int) -> str:
        """Who a merged-in parent's records came from: ``origin/main``, ``topic``, ``bob's local main``.

        nth is the parent's position (0: the first parent, whose records a
        merge renumbers when it kept a published side's IDs).
        """
        subject = self.graph.info(merge)["subject"]
        found = _MERGE_SUBJECT.match(subject)
        if nth == 0:
            into = (found.group("into") or "") if found else ""
            if not into and found and found.group("url"):
                into = found.group("branch")  # git pull merges the upstream into the branch of that name
            names = self.graph.branches_at().get(source)
            name = into or (names[0] if names else "") or "branch"
            author = self.graph.info(source)["author"]
            return f"{author}'s local {name}" if author else f"the local {name}"
        if nth == 1 and found:
            if found.group("pr"):
                return found.group("pr")
            if found.group("url"):  # "Merge branch 'main' of URL": git pull
                remote = self._remote_named(found.group("url"))
                branch = found.group("branch")
                return f"{remote}/{branch}" if remote else f"{branch} of {found.group('url')}"
            return found.group("branch")
        names = self.graph.branches_at().get(source)
        return names[0] if names else ""

    def _remote_named(self, url: str) -> str:
        """The remote whose URL is url ("" when none is)."""
        try:
            for remote in self.graph.repo.remotes:
                if remote.url and remote.url.rstrip("/") == url.rstrip("/"):
                    return remote.name
        except Exception:
            return ""
        return ""

    def took_side(self, merge: str) -> str | None:
        """The parent whose ledger a merge took as it is, its first parent's not a prefix of it; None otherwise.

        That is git's doing when this side's ledger was the merge base's: it
        never ran the driver, and the first parent's records may sit under
        the IDs the taken side's own merge gave them.
        """
        kept = self.kept_parent(merge)
        parents = self.graph.parents(merge)
        if kept is None or kept == parents[0] or self.blob_at(kept) != self.blob_at(merge):
            return None
        return kept

    def kept_parent(self, merge: str) -> str | None:
        """The parent whose ledger the merge's ledger extends: the side whose IDs the merge kept.

        The first parent's when its ledger is a line prefix of the merge's (git's
        orientation, and the driver's for anything not yet published); else the
        first other parent's that is (the driver kept a published side's IDs,
        or git took that side's file as it is). None when no parent's is.
        """
        if merge in self._kept:
            return self._kept[merge]
        parents = self.graph.parents(merge)
        blob = self.blob_at(merge)
        found: str | None = None
        if blob is None or len(parents) < 2:
            found = parents[0] if parents else None
        else:
            stored = self.cache.kept(self.relpath, merge)
            if stored is not None and (not stored or stored in parents):
                self._kept[merge] = stored or None
                return stored or None
            for parent in parents:
                mine = self.blob_at(parent)
                if mine is not None and (mine == blob or staged.extends(self.data(mine), self.data(blob))):
                    found = parent
                    break
            if not self.shallow:
                self.cache.put_kept(self.relpath, merge, found)
        self._kept[merge] = found
        return found

    def ledger_parent(self, commit: str) -> str | None:
        """The parent commit's ledger grew from: the first, or the one whose IDs a merge kept (``kept_parent``)."""
        parents = self.graph.parents(commit)
        if len(parents) >= 2:
            kept = self.kept_parent(commit)
            if kept is not None:
                return kept
        return parents[0] if parents else None

    def renumbering(self, merge: str) -> list[Alias]:
        """The records merge took in from its other parents, recomputed with ``rebase.merge`` (cached)."""
        known = self._merges.get(merge)
        if known is not None:
            return list(known)
        cached = self.cache.merge(self.relpath, merge)
        if cached is not None:
            out = self._merges[merge] = [Alias(*entry) for entry in cached]
            return list(out)
        parents = self.graph.parents(merge)
        out: list[Alias] = []
        if len(parents) >= 2 and self.took_side(merge) is None:
            kept = self.kept_parent(merge) or parents[0]
            ours: Sequence | None = None  # parsed only for a merge of whole ledgers
            others = [(nth, p) for nth, p in enumerate(parents) if p != kept]
            for step, (nth, source) in enumerate(others, start=1):
                blob = self.blob_at(source)
                if blob is None or blob == self.blob_at(kept):
                    continue
                bases = self.graph.merge_bases(kept, source)
                tails = self._tails(kept, blob, bases) if self.trim and len(others) == 1 else None
                if tails is None:
                    ours = self.ledger(self.blob_at(kept)) if ours is None else ours
                    base, mine, theirs, skipped = self._virtual_base(bases), ours, self.ledger(blob), 0
                else:
                    base, mine, theirs, skipped = tails
                try:
                    tail, moved, _ = rebase.merge(base, mine, theirs)
                except (rebase.MergeRefused, ValueError, TypeError, KeyError):
                    continue  # not a merge the driver could have made; nothing to recompute
                if moved:
                    where = {}
                    for i in range(len(theirs) - 1, -1, -1):
                        record = theirs[i]
                        rid = record.get("id") if isinstance(record, dict) else None
                        if rid in moved:
                            where[rid] = i + skipped
                            if len(where) == len(moved):
                                break
                    branch = self._branch(merge, source, nth)
                    out += [Alias(old, new, merge, source, branch, where.get(old, -1)) for old, new in moved.items()]
                if step < len(others):
                    ours = [*(self.ledger(self.blob_at(kept)) if ours is None else ours), *tail]
        if not self.shallow:  # a shallow clone may lack a merge base: recompute once it is deepened
            self._merges[merge] = list(out)
            self.cache.put_merge(self.relpath, merge, [list(asdict(a).values()) for a in out])
        return out

    def _tails(self, kept: str, blob: str, bases: list[str]) -> tuple[Sequence, RawLedger, RawLedger, int] | None:
        """(base, ours, theirs, skipped): the ledgers a merge took in blob with, cut where the line they last
        share whole begins; None when they cannot be cut (merge them whole).

        ``rebase.merge`` counts byte-equal leading lines as shared and never
        parses them (``common_prefix``), and needs only the last of them, so
        merging what follows the cut gives the same tail and renumbering, each
        position ``skipped`` lower. That holds when every line before the cut
        is one record (no blank lines) and the merge base is one commit whose
        ledger holds those bytes too (cut alike), or is a prefix of them.
        """
        kept_blob = self.blob_at(kept)
        if kept_blob is None or len(bases) > 1:
            return None
        ours, theirs = self.data(kept_blob), self.data(blob)
        start = rebase.shared_start(ours, theirs)
        if not start or not rebase.plain(ours, start):
            return None
        base_blob = self.blob_at(bases[0]) if bases else None
        base_data = self.data(base_blob) if base_blob is not None else b""
        base: Sequence
        if len(base_data) >= start and base_data.startswith(ours[:start]):
            base = RawLedger(base_data[start:], lenient=True)
        elif ours.startswith(base_data) and base_data[-1:] in (b"", b"\n"):
            base = []  # a prefix of what both sides share: it rules out nothing past the cut
        else:
            return None
        skipped = ours.count(b"\n", 0, start)
        return base, RawLedger(ours[start:], lenient=True), RawLedger(theirs[start:], lenient=True), skipped

    def aliases(self, until: str | None = None) -> list[Alias]:
        """Every record the merges within the search limit took in, newest merge first.

        With ``until``, only the merges that took in a parent descending from
        that commit (the only ones that can have renumbered its records).
        """
        out: list[Alias] = []
        later = self.descendants(until) if until is not None else set()
        pairs = []  # the merges to recompute: their bases are found in one git process
        for commit in self.touching():
            parents = self.graph.parents(commit)
            if len(parents) >= 2 and commit not in self._merges and self.cache.merge(self.relpath, commit) is None:
                pairs += [(one, other) for n, one in enumerate(parents) for other in parents[n + 1 :]]
        if len(pairs) > 1:
            self.graph.find_merge_bases(pairs)
        for commit in self.touching():
            if commit == until:
                break
            parents = self.graph.parents(commit)
            if len(parents) < 2:
                continue
            if until is not None and not any(p in later for p in parents[1:]):
                continue
            out += self.renumbering(commit)
        return out

    def alias_table(self) -> dict[tuple[str, str], str]:
        """The alias table: (old ID, merged-in commit) -> the ID at the end of its renumbering chain.

        The chain follows each later merge that took the record in again, so
        for a record that reached HEAD's first-parent line this is its ID at
        HEAD. (``resolve`` confirms a single answer by content instead.)
        """
        pool = self.aliases()
        by_old = _by_old(pool)
        return {(a.old, a.source): self._follow(a, by_old)[-1].new for a in pool if a.renumbered}

    def descendants(self, commit: str) -> set[str]:
        """The walked commits that have commit as an ancestor (commit included): one pass, oldest first."""
        self.touching()
        out = {commit}
        for current in reversed(self._walked):
            if current not in out and any(p in out for p in self.graph.parents(current)):
                out.add(current)
        return out

    def chain(self, alias: Alias, aliases: list[Alias] | None = None) -> list[Alias]:
        """alias, then each later merge that took the record in again on its way to HEAD."""
        return self._follow(alias, _by_old(self.aliases() if aliases is None else aliases))

    def _follow(self, alias: Alias, by_old: dict[str, list[Alias]]) -> list[Alias]:
        out = [alias]
        while True:
            last = out[-1]
            nxt = [
                a
                for a in by_old.get(last.new, ())
                if a.merge != last.merge and self.graph.is_ancestor(last.merge, a.source)
            ]
            if not nxt:
                return out
            out.append(min(nxt, key=lambda a: self.graph.time(a.merge)))

    # -- finding a baseline ------------------------------------------------------------------

    def index_of(self, blob: str | None, record_id: str) -> int | None:
        """The position of record_id in the ledger blob (binary search over its increasing IDs)."""
        return self.ledger(blob).find(record_id)

    def prefix_end(self, blob: str, index: int) -> int:
        """The byte offset just past record index's line in the blob."""
        ledger = self.ledger(blob)
        if ledger.numbers is None:
            return sum(len(line) for line in ledger.lines[: index + 1]) + index + 1
        data = self.data(blob)
        pos = 0
        for _ in range(ledger.line_number(index)):
            pos = data.index(b"\n", pos) + 1 if data.find(b"\n", pos) >= 0 else len(data)
        return pos

    def line_end(self, blob: str, record_id: str) -> int | None:
        """The byte offset just past record_id's line in the blob, or None when it is not there.

        A byte search for the canonical ``"id":"c12"`` (verified by parsing
        the line) spares splitting a large blob that is only being ruled out.
        """
        data = self.data(blob)
        needle = f'"id":"{record_id}"'.encode()
        pos = data.find(needle)
        while pos >= 0:
            start = data.rfind(b"\n", 0, pos) + 1
            newline = data.find(b"\n", pos)
            end = len(data) if newline < 0 else newline + 1
            try:
                record = json.loads(data[start:end])
            except ValueError:
                record = None
            if isinstance(record, dict) and record.get("id") == record_id:
                return end
            pos = data.find(needle, end)
        if b'"id": ' not in data and b'"id" :' not in data:
            return None  # written canonically: the record is not in this version
        index = self.index_of(blob, record_id)
        return None if index is None else self.prefix_end(blob, index)

    def digest_at(self, blob: str, index: int) -> str:
        """SHA-256 of the blob's bytes up to and including record index's line."""
        return canonical.sha256(self.data(blob)[: self.prefix_end(blob, index)])

    def find_digest(self, record_id: str, digest: str) -> tuple[str, str, int] | None:
        """(commit, blob, index) of a ledger version whose prefix up to record_id has this digest.

        Candidates first: the merged-in parents of merges that took record_id
        in (where a renumbered baseline usually lives), then every commit that
        touched the ledger, newest first, up to the search limit. A version
        that does not match rules out its ancestors along ``ledger_parent``
        too: their ledgers are prefixes of it, so they hold the same bytes or
        lack the ID.
        """
        tried: set[str] = set()
        ruled_out: set[str] = set()

        def check(commit: str) -> tuple[str, str, int] | None:
            blob = self.blob_at(commit)
            if blob is None or blob in tried:
                return None
            tried.add(blob)
            end = self.line_end(blob, record_id)
            if end is not None and canonical.sha256(self.data(blob)[:end]).startswith(digest):
                index = self.index_of(blob, record_id)
                if index is not None:
                    return commit, blob, index
            return None

        # Merges are recomputed newest first and only until a candidate matches.
        for commit in self.touching():
            if len(self.graph.parents(commit)) < 2:
                continue
            for alias in self.renumbering(commit):
                if alias.old == record_id:
                    found = check(alias.source)
                    if found:
                        return found
        for commit in self.touching():
            if commit in ruled_out:
                continue
            found = check(commit)
            if found:
                return found
            parent: str | None = commit
            while True:
                parent = self.ledger_parent(parent)
                if parent is None or parent in ruled_out:
                    break
                ruled_out.add(parent)
        return None

    # -- where a record came from -----------------------------------------------------------

    def ledger_line_changes(self, commit: str) -> list[str]:
        """Commits on commit's ledger line where the ledger changed, newest first (bounded).

        The line follows first parents, except through a merge that took
        another parent's ledger as it is (``ledger_parent``), so the ledger
        only grows along it.
        """
        out: list[str] = []
        current: str | None = commit
        while current is not None and len(out) < self.limit:
            parent = self.ledger_parent(current)
            blob = self.blob_at(current)
            if blob is None and out:
                break  # before the ledger existed
            if blob is not None and (parent is None or self.blob_at(parent) != blob):
                out.append(current)
            current = parent
        return out

    def origin(self, commit: str, index: int, record_id: str) -> tuple[str, list[Alias], bool]:
        """(the commit that added a record, the merges that renumbered it, whether history stopped short).

        The record is the one at ``index`` of commit's ledger. The merges are
        oldest first; the flag is set when the answer is the oldest commit a
        shallow clone or the search limit leaves, so it was added there or before.
        """
        changes = self.ledger_line_changes(commit)
        if not changes:
            return commit, [], True
        # Along the ledger line the ledger only grows, so "holds record index" is monotone.
        lo, hi = 0, len(changes) - 1  # the oldest change that still holds it
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.count(self.blob_at(changes[mid])) > index:
                lo = mid
            else:
                hi = mid - 1
        added = changes[lo]
        parents = self.graph.parents(added)
        boundary = lo == len(changes) - 1 and (len(changes) >= self.limit or (self.shallow and not parents))
        kept = self.ledger_parent(added) if len(parents) >= 2 else None
        if kept is not None and self.count(self.blob_at(kept)) <= index:
            for alias in self.renumbering(added):
                if alias.new == record_id and alias.index >= 0:
                    source, earlier, stop = self.origin(alias.source, alias.index, alias.old)
                    return source, [*earlier, alias], stop
        return added, [], boundary


def match_into(baseline_records: Sequence[dict], current_records: Sequence[dict]) -> dict[str, str]:
    """baseline ID -> current ID for each baseline record the current ledger still holds.

    The shared prefix maps to itself; the rest is matched by the merge's
    ID-blind content key, citations followed as they were renumbered.
    """
    shared = rebase.common_prefix(baseline_records, current_records)
    mapping = {r["id"]: r["id"] for r in baseline_records[:shared]}
    mapping.update(rebase.match(baseline_records[shared:], current_records[shared:], mapping))
    return mapping


@dataclass
class Resolution:
    """What an old ID or ID@DIGEST names now."""

    asked: str
    old: str
    current: str | None
    #: The commit whose ledger the old ID was read from, and its branch ("" if unknown).
    source: str
    branch: str
    #: The merges that renumbered it, oldest first.
    merges: list[str]
    #: The whole description when this clone's journal resolved it (a rebase, a cherry-pick, ...).
    note: str = ""

    def describe(self, short: int = 12) -> str:
        """``c46 from topic is now c52 (renumbered by merge 1a2b3c4d5e6f)``."""
        if self.note:
            return self.note
        where = self.branch or self.source[:short]
        if self.current is None:
            return f"{self.old} from {where} is no longer in the ledger"
        by = ""
        if self.merges:
            label = "merge" if len(self.merges) == 1 else "merges"
            by = f" (renumbered by {label} {', '.join(m[:short] for m in self.merges)})"
        verb = "is now" if self.current != self.old else "is still"
        return f"{self.old} from {where} {verb} {self.current}{by}"


def resolve(history: History, arg: str, current: Callable[[], Sequence[dict]]) -> list[Resolution]:
    """What ``ID`` or ``ID@DIGEST``, which the current ledger does not hold as given (its index says so
    first), names in it: [] when history does not know it, several when a bare ID was renumbered
    on several branches. ``current()`` gives the current ledger's records, asked for only when an
    answer is matched into them (an ID no merge nor journal entry names never needs them)."""
    record_id, digest = parse_ref(arg)
    out: list[Resolution] = []
    if digest is not None:
        found = history.find_digest(record_id, digest)
        if found is None:
            return _from_journal(history, arg, record_id, digest, current)
        commit, blob, index = found
        aliases = history.aliases(until=commit)
        baseline = _bulk(history.ledger(blob).lines[: index + 1])
        now = match_into(baseline, current()).get(record_id)
        later = history.descendants(commit)
        first = [a for a in aliases if a.old == record_id and a.source in later]
        first.sort(key=lambda a: history.graph.time(a.merge))
        merges = [a.merge for a in history.chain(first[0], aliases) if a.renumbered] if first else []
        branch = first[0].branch if first else str(baseline[-1].get("branch") or "")
        return [Resolution(arg, record_id, now, commit, branch, merges)]
    seen: set[str] = set()
    aliases = history.aliases()
    for alias in aliases:
        if alias.old != record_id or not alias.renumbered:
            continue
        source_blob = history.blob_at(alias.source)
        baseline = _bulk(history.ledger(source_blob).lines[: alias.index + 1]) if alias.index >= 0 else []
        if not baseline or baseline[-1].get("id") != record_id:
            continue
        now = match_into(baseline, current()).get(record_id)
        key = now or f"gone:{alias.merge}"
        if key in seen:
            continue
        seen.add(key)
        merges = [a.merge for a in history.chain(alias, aliases) if a.renumbered]
        out.append(Resolution(arg, record_id, now, alias.source, alias.branch, merges))
    return out or _from_journal(history, arg, record_id, None, current)


def _from_journal(
    history: History, arg: str, record_id: str, digest: str | None, current: Callable[[], Sequence[dict]]
) -> list[Resolution]:
    """What this clone's journal of rebases, cherry-picks and resolve-conflicts says record_id became."""
    from docket_git.merging import journal

    out: list[Resolution] = []
    seen: set[str] = set()
    for entry in journal.lookup(history.git_dir, record_id, digest):
        now = journal.current_of(entry, current())
        key = now or f"gone:{entry.new}"
        if key in seen:
            continue
        seen.add(key)
        out.append(Resolution(arg, record_id, now, "", entry.source, [], entry.describe(now)))
    return out
