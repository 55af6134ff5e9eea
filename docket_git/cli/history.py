"""History commands: ``resolve`` old IDs, a record's ``log``; helpers ``show`` calls for old IDs and --at COMMIT.

Both are declared once (``cli.spec``) for Typer and the light parser. What
history answers is kept in the repository's history database under everything
it depends on (``history.answers``: HEAD, the ledger's revision, the journal,
the search limit): an ask answered before reads one row and the index, with no
Typer, no snapshot of the ledger and no commit walk. Anything else computes
the answer the one way (``history.renumbering``) and keeps it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from docket_git.cli.spec import Arg, Command, Opt
from docket_git.errors import LedgerError, UsageError
from docket_git.ledger import index, model, pretty, store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: What a later record's relation says about the record it names, for ``docket log``.
RELATION_LABELS = {
    "supersedes": "superseded by",
    "answers": "answered by",
    "supports": "supported by",
    "depends_on": "depended on by",
}

RESOLVE = Command(
    "resolve",
    "Print what old IDs name now ('old -> current'), following merges that renumbered them.",
    "Read",
    (Arg("refs", "Old IDs, e.g. c46 or c46@7f3a9c21e0b4.", "ID", many=True),),
    (Opt("--json", "as_json", "A JSON array, one object per ID.", bare=True),),
)
LOG = Command(
    "log",
    "Show a record's history: the commit that added it, merges that renumbered it, and later records citing it.",
    "Read",
    (Arg("record", "The record: its ID, an old ID, or ID@DIGEST.", "ID"),),
    (Opt("--json", "as_json", "The history as one JSON object.", bare=True),),
)


def _where() -> tuple[Path, str]:
    """(the repository's working tree root, the ledger's path inside it)."""
    from docket_git.history import renumbering as history
    from docket_git.repo import gitio

    root = gitio.workdir(Path.cwd())
    if root is None:
        raise history.HistoryUnavailable("not in a git repository; ledger history needs one")
    path = store.find_ledger(Path.cwd()) or store.locate(Path.cwd())
    try:
        rel = path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = history.LEDGER_RELPATH
    return root, rel


def _open():  # -> history.History
    from docket_git.history import renumbering as history

    root, rel = _where()
    hist = history.History(root, rel)
    hist.head  # noqa: B018 - raises when there are no commits
    return hist


def _shallow(hist) -> str:
    return (
        "; this clone is shallow, so older history is not here ('git fetch --unshallow' fetches it)"
        if hist.shallow
        else ""
    )


def _parse(arg: str) -> tuple[str, str | None]:
    from docket_git.history import renumbering as history

    try:
        return history.parse_ref(arg)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


class Asker:
    """One command's questions to history: the index first, then kept answers, then the ledger and its commits.

    The snapshot and the history are opened only when an answer must be
    computed; ``close`` writes what history learned.
    """

    def __init__(self) -> None:
        self.ledger = store.find_ledger(Path.cwd())
        self._ix: index.Index | None = None  # opened once: an in-memory index (no cache dir) is built once
        self._snap: store.Snapshot | None = None
        self.hist = None  # history.History, opened on the first computed answer
        self._key = None  # answers.Key of the first question, for the others (``Key.other``)

    def snapshot(self) -> store.Snapshot:
        """The ledger, validated (read once)."""
        if self._snap is None:
            if self.ledger is None:
                store.locate(Path.cwd())  # outside a repository: the one line every command gives
            self._snap = index.read(self.ledger, ix=self.index() if self.ledger is not None else None)
        return self._snap

    def index(self) -> index.Index:
        """The ledger's index, proven current (opened once)."""
        if self._ix is None:
            assert self.ledger is not None
            self._ix = index.open_index(self.ledger)
        return self._ix

    def history(self):  # -> history.History; HistoryUnavailable when there is none
        if self.hist is None:
            self.hist = _open()
        return self.hist

    def holds(self, record_id: str, digest: str | None) -> bool:
        """True when the current ledger holds record_id (with this prefix digest, when one is given): its index says."""
        if self.ledger is None:
            self.snapshot()  # outside a repository: the one line every command gives; else an empty ledger
            return False
        ix = self.index()
        if index.line_facts(ix.conn, record_id) is None:
            return False
        return digest is None or index.prefix_digest(ix, record_id).startswith(digest)

    def key(self, ref: str):  # -> answers.Key | None
        """Where the answer to ref is kept (None outside a repository with commits)."""
        from docket_git.history import answers

        if self.ledger is None:
            return None
        if self._key is None:
            self._key = answers.key_for(Path.cwd(), self.ledger, ref, index.revision(self.index())[0])
            return self._key
        return self._key.other(ref)

    def answer(self, ref: str) -> dict:
        """History's answer about ref, an ID the ledger does not hold as given (``history.answers.answer``).

        Read from the history database when it was kept there; computed and
        kept otherwise. HistoryUnavailable when there is no history to ask.
        """
        from docket_git.history import answers
        from docket_git.history import renumbering as history

        key = self.key(ref)
        found = answers.lookup(key) if key is not None else None
        if found is not None:
            return found
        hist = self.history()
        found = answers.answer(history.resolve(hist, ref, lambda: self.snapshot().records), hist.limit, hist.shallow)
        if key is not None and key.head == hist.head and key.relpath == hist.relpath and not hist.shallow:
            hist.cache.put_answer(key.digest, found)
        return found

    def current(self, ref: str) -> str:
        """The current ID for ``ID[@DIGEST]`` (itself when the ledger holds it as given); says on stderr how
        history resolved it, or fails naming why it cannot."""
        from docket_git.history import answers
        from docket_git.history import renumbering as history

        record_id, digest = _parse(ref)
        if self.holds(record_id, digest):
            return record_id
        try:
            found = self.answer(ref)
        except history.HistoryUnavailable as exc:
            raise LedgerError(f"no entry {ref} ({exc})") from None
        return answers.settle(ref, found)

    def close(self) -> None:
        """Write what history learned (never fails the command); close the index."""
        if self._ix is not None:
            self._ix.close()
        if self.hist is not None:
            self.hist.save()


def current_id(arg: str, snap: store.Snapshot) -> str:
    """The current ID for ``ID[@DIGEST]`` the ledger does not hold as given: prints how history
    resolved it on stderr, or fails naming why it cannot. The answer is kept (``history.answers``),
    so asking again reads one row."""
    asker = Asker()
    asker._snap = snap
    try:
        return asker.current(arg)
    finally:
        asker.close()


def records_at(rev: str) -> tuple[list[dict], str]:
    """The ledger's records at a commit-ish, and the commit; fails when rev names no commit."""
    from docket_git.history import renumbering as history

    try:
        hist = _open()
    except history.HistoryUnavailable as exc:
        raise LedgerError(f"--at {rev}: {exc}") from None
    try:
        commit = hist.graph.resolve(rev)
        if commit is None:
            raise LedgerError(
                f"--at {rev} names neither a record nor a commit; give a record ID or a commit-ish (HEAD~3, a branch, a tag)"
            )
        try:
            return hist.records_at(commit), commit
        except ValueError as exc:
            raise LedgerError(f"--at {rev}: the ledger at {commit[:12]} is unreadable: {exc}") from None
    finally:
        hist.save()


def run_resolve(values: dict[str, Any]) -> int:
    """Print what each ref names now; 1 when one of them names no single current record."""
    from docket_git.history import answers
    from docket_git.history import renumbering as history

    refs, as_json = values["refs"], values["as_json"]
    for arg in refs:
        _parse(arg)
    asker = Asker()
    rows: list[dict] = []
    code = 0
    try:
        for arg in refs:
            record_id, digest = _parse(arg)
            if asker.holds(record_id, digest):
                rows.append({"ref": arg, "current": record_id, "from": "", "merges": [], "candidates": []})
                continue
            try:
                found = asker.answer(arg)
            except history.HistoryUnavailable as exc:
                raise LedgerError(f"{arg}: not in the ledger, and {exc}") from None
            row, failed = answers.row(arg, found)
            rows.append(row)
            code = code or failed
    finally:
        asker.close()
    if as_json:
        sys.stdout.write(pretty.encode(rows) + "\n")
    else:
        sys.stdout.write("".join(f"{row['ref']} -> {row['current'] or '?'}\n" for row in rows))
    return code


def _commit_row(hist, commit: str, *, stop: bool = False) -> dict:
    info = hist.graph.info(commit)
    info["short"] = commit[:12]
    info["at_or_before"] = stop
    return info


def run_log(values: dict[str, Any]) -> None:
    """Print a record's history; kept in the history database with what it depends on, like an answer."""
    from docket_git.history import renumbering as history

    ref, as_json = values["record"], values["as_json"]
    _parse(ref)
    asker = Asker()
    try:
        record_id = asker.current(ref)
        key = asker.key(f"log {record_id}")
        kept = _kept_log(key)
        if kept is None:
            snap = asker.snapshot()
            position = snap.position(record_id)
            if position is None:
                raise LedgerError(f"no entry {ref}")
            try:
                hist = asker.history()
            except history.HistoryUnavailable as exc:
                raise LedgerError(f"{record_id} has no history yet: {exc}") from None
            out = _log(hist, hist.head, snap, position, record_id)
            kept = {"log": out, "state": snap.records[position]["state"], "shallow": _shallow(hist)}
            if key is not None and key.head == hist.head and key.relpath == hist.relpath and not hist.shallow:
                hist.cache.put_answer(key.digest, kept)
    finally:
        asker.close()
    _print_log(kept, as_json=as_json)


def _kept_log(key) -> dict | None:
    from docket_git.history import answers

    found = answers.stored(key) if key is not None else None
    ok = isinstance(found, dict) and isinstance(found.get("log"), dict) and isinstance(found.get("state"), str)
    return found if ok and isinstance(found.get("shallow"), str) else None


def _print_log(kept: dict, *, as_json: bool) -> None:
    out = kept["log"]
    lines: list[str] = []
    if as_json:
        sys.stdout.write(pretty.encode(out) + "\n")
        return
    record_id = out["id"]
    lines.append(f"{record_id}  {out['kind']}  {kept['state']}  {out['text']}")
    added = out["added"]
    if added is None:
        lines.append("added       not committed yet (only in the working tree)")
    else:
        when = "at or before" if added["at_or_before"] else ""
        branch = f"  on {added['branch']}" if added["branch"] else ""
        was = f"  (as {added['as']})" if added["as"] != record_id else ""
        lines.append(
            f"added       {when + ' ' if when else ''}{added['short']}  {added['date']}  {added['author']}"
            f"{branch}  {added['subject']}{was}"
        )
        if added["at_or_before"]:
            lines.append(f"            (history stops there{kept['shallow'] or ': the search limit was reached'})")
    for step in out["renumbered"]:
        branch = f" from {step['branch']}" if step["branch"] else ""
        if step.get("op"):
            lines.append(f"renumbered  {step['from']} -> {step['to']}{branch}  by '{step['op']}'  {step['date']}")
            continue
        lines.append(
            f"renumbered  {step['from']} -> {step['to']}{branch}  by merge {step['short']}  {step['date']}  {step['subject']}"
        )
    for ref in out["referenced_by"]:
        where = (
            f"in {ref['commit']['short']}  {ref['commit']['date']}  {ref['commit']['subject']}"
            if ref["commit"]
            else "not committed yet"
        )
        lines.append(f"{ref['relation']} {ref['id']}  {where}")
    sys.stdout.write("".join(line + "\n" for line in lines))


def fast_main(word: str, args: list[str]) -> int | None:
    """Run ``docket resolve ...`` or ``docket log ...`` without Typer; None to hand anything else to it."""
    if word == "resolve":
        return RESOLVE.run_light(args, run_resolve)
    return LOG.run_light(args, run_log)


def register(app: Any) -> None:
    """Add ``docket resolve`` and ``docket log`` to the Typer app."""
    RESOLVE.register(app, run_resolve)
    LOG.register(app, run_log)


def _head_index(hist, head: str, snap: store.Snapshot, position: int, record_id: str) -> int | None:
    """The record's position in HEAD's ledger (None when it is not committed)."""
    blob = hist.blob_at(head)
    if blob is None:
        return None
    if position < hist.count(blob):
        at = hist.ledger(blob)[position]
        if isinstance(at, dict) and at.get("id") == record_id:
            return position
    return hist.index_of(blob, record_id)


def _log(hist, head: str, snap: store.Snapshot, position: int, record_id: str) -> dict:
    view = snap.records[position]
    out: dict = {"id": record_id, "kind": view["kind"], "text": view["text"], "added": None, "renumbered": []}
    index = _head_index(hist, head, snap, position, record_id)
    if index is not None:
        commit, merges, stop = hist.origin(head, index, record_id)
        added = _commit_row(hist, commit, stop=stop)
        added["as"] = merges[0].old if merges else record_id
        added["branch"] = str(view.get("branch") or "") or (merges[0].branch if merges else "")
        out["added"] = added
        for alias in merges:
            if not alias.renumbered:
                continue
            row = _commit_row(hist, alias.merge)
            out["renumbered"].append(
                {
                    "from": alias.old,
                    "to": alias.new,
                    "merge": alias.merge,
                    "short": row["short"],
                    "branch": alias.branch,
                    "date": row["date"],
                    "subject": row["subject"],
                }
            )
    from docket_git.merging import journal

    for entry in journal.read(hist.git_dir):
        if entry.new == record_id and journal.current_of(entry, [view]) == record_id:
            out["renumbered"].append(
                {"from": entry.old, "to": entry.new, "op": entry.op, "branch": entry.source, "date": entry.ts}
            )
    refs: list[dict] = []
    for later_position in range(position + 1, len(snap.records)):
        later = snap.records[later_position]
        relations = dict.fromkeys(field for field, target in model.references(later) if target == record_id)
        if not relations:
            continue
        later_index = _head_index(hist, head, snap, later_position, later["id"])
        commit_row = None
        if later_index is not None:
            commit, _, stop = hist.origin(head, later_index, later["id"])
            commit_row = _commit_row(hist, commit, stop=stop)
        for relation in relations:
            refs.append({"relation": RELATION_LABELS[relation], "id": later["id"], "commit": commit_row})
    out["referenced_by"] = refs
    return out
