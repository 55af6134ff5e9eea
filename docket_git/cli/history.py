"""History commands: resolve old IDs, a record's log; helpers ``show`` calls for old IDs and --at COMMIT."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from docket_git.cli.app import app
from docket_git.cli.common import dump_json, fail, ledger_path, read_snapshot, warn
from docket_git.errors import UsageError
from docket_git.ledger import model, store

#: What a later record's relation says about the record it names, for ``docket log``.
RELATION_LABELS = {
    "supersedes": "superseded by",
    "answers": "answered by",
    "supports": "supported by",
    "depends_on": "depended on by",
}


def _where() -> tuple[Path, str]:
    """(the repository's working tree root, the ledger's path inside it)."""
    from docket_git.history import renumbering as history
    from docket_git.repo import gitio

    root = gitio.workdir(Path.cwd())
    if root is None:
        raise history.HistoryUnavailable("not in a git repository; ledger history needs one")
    path = ledger_path() or store.locate(Path.cwd())
    try:
        rel = path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = history.LEDGER_RELPATH
    return root, rel


def _open():  # -> history.History
    from docket_git.history import renumbering as history

    root, rel = _where()
    return history.History(root, rel)


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


def _holds(snap: store.Snapshot, record_id: str, digest: str | None) -> bool:
    """True when the current ledger holds record_id (with this prefix digest, when one is given)."""
    position = snap.position(record_id)
    return position is not None and (digest is None or snap.prefix_digest(position).startswith(digest))


def current_id(arg: str, snap: store.Snapshot) -> str:
    """The current ID for ``ID[@DIGEST]`` the ledger does not hold as given: prints how history
    resolved it on stderr, or fails naming why it cannot. The answer is kept (``history.answers``),
    so ``show``'s light path answers the same question again from one row."""
    from docket_git.history import answers
    from docket_git.history import renumbering as history

    _parse(arg)  # a malformed ref is a usage error before any history is read
    ledger = ledger_path()
    key = answers.key_for(Path.cwd(), ledger, arg) if ledger is not None else None
    stored = answers.lookup(key) if key is not None else None
    if stored is None:
        try:
            hist = _open()
            hist.head  # noqa: B018 - raises when there are no commits
        except history.HistoryUnavailable as exc:
            fail(f"no entry {arg} ({exc})")
        try:
            found = history.resolve(hist, arg, snap.records, snap.data, snap.ends)
            stored = answers.answer(found, hist.limit, hist.shallow)
            if key is not None and key.head == hist.head and key.relpath == hist.relpath and not hist.shallow:
                hist.cache.put_answer(key.digest, stored)
        finally:
            hist.save()
    return answers.settle(arg, stored)


def records_at(rev: str) -> tuple[list[dict], str]:
    """The ledger's records at a commit-ish, and the commit; fails when rev names no commit."""
    from docket_git.history import renumbering as history

    try:
        hist = _open()
        hist.head  # noqa: B018 - raises when there are no commits
    except history.HistoryUnavailable as exc:
        fail(f"--at {rev}: {exc}")
    commit = hist.graph.resolve(rev)
    if commit is None:
        fail(
            f"--at {rev} names neither a record nor a commit; give a record ID or a commit-ish (HEAD~3, a branch, a tag)"
        )
    try:
        return hist.records_at(commit), commit
    except ValueError as exc:
        fail(f"--at {rev}: the ledger at {commit[:12]} is unreadable: {exc}")
    finally:
        hist.save()


@app.command("resolve", rich_help_panel="Read")
def resolve_(
    refs: Annotated[list[str], typer.Argument(metavar="ID", help="Old IDs, e.g. c46 or c46@7f3a9c21e0b4.")],
    as_json: Annotated[bool, typer.Option("--json", help="A JSON array, one object per ID.")] = False,
) -> None:
    """Print what old IDs name now ('old -> current'), following merges that renumbered them."""
    from docket_git.history import renumbering as history

    for arg in refs:
        _parse(arg)
    snap = read_snapshot()
    hist = None
    rows: list[dict] = []
    code = 0
    try:
        for arg in refs:
            record_id, digest = _parse(arg)
            if _holds(snap, record_id, digest):
                rows.append({"ref": arg, "current": record_id, "from": "", "merges": [], "candidates": []})
                continue
            if hist is None:
                try:
                    hist = _open()
                    hist.head  # noqa: B018
                except history.HistoryUnavailable as exc:
                    fail(f"{arg}: not in the ledger, and {exc}")
            found = history.resolve(hist, arg, snap.records, snap.data, snap.ends)
            row = {"ref": arg, "current": None, "from": "", "merges": [], "candidates": []}
            if len(found) == 1:
                res = found[0]
                row.update(current=res.current, merges=res.merges)
                row["from"] = res.branch or res.source
                if res.current is None:
                    warn(res.describe())
                    code = 1
            elif found:
                row["candidates"] = [r.current for r in found]
                for res in found:
                    warn(res.describe())
                warn(f"{arg} is ambiguous; name one with ID@DIGEST")
                code = 1
            else:
                warn(f"history does not know {arg}{_shallow(hist)}")
                code = 1
            rows.append(row)
    finally:
        if hist is not None:
            hist.save()
    if as_json:
        typer.echo(dump_json(rows))
    else:
        for row in rows:
            typer.echo(f"{row['ref']} -> {row['current'] or '?'}")
    raise typer.Exit(code)


def _commit_row(hist, commit: str, *, stop: bool = False) -> dict:
    info = hist.graph.info(commit)
    info["short"] = commit[:12]
    info["at_or_before"] = stop
    return info


@app.command("log", rich_help_panel="Read")
def log_(
    record: Annotated[str, typer.Argument(metavar="ID", help="The record: its ID, an old ID, or ID@DIGEST.")],
    as_json: Annotated[bool, typer.Option("--json", help="The history as one JSON object.")] = False,
) -> None:
    """Show a record's history: the commit that added it, merges that renumbered it, and later records citing it."""
    from docket_git.history import renumbering as history

    snap = read_snapshot()
    record_id, digest = _parse(record)
    if not _holds(snap, record_id, digest):
        record_id = current_id(record, snap)
    position = snap.position(record_id)
    assert position is not None
    view = snap.records[position]
    try:
        hist = _open()
        head = hist.head
    except history.HistoryUnavailable as exc:
        fail(f"{record_id} has no history yet: {exc}")
    try:
        out = _log(hist, head, snap, position, record_id)
    finally:
        hist.save()
    if as_json:
        typer.echo(dump_json(out))
        return
    typer.echo(f"{view['id']}  {view['kind']}  {view['state']}  {view['text']}")
    added = out["added"]
    if added is None:
        typer.echo("added       not committed yet (only in the working tree)")
    else:
        when = "at or before" if added["at_or_before"] else ""
        branch = f"  on {added['branch']}" if added["branch"] else ""
        was = f"  (as {added['as']})" if added["as"] != record_id else ""
        typer.echo(
            f"added       {when + ' ' if when else ''}{added['short']}  {added['date']}  {added['author']}"
            f"{branch}  {added['subject']}{was}"
        )
        if added["at_or_before"]:
            typer.echo(f"            (history stops there{_shallow(hist) or ': the search limit was reached'})")
    for step in out["renumbered"]:
        branch = f" from {step['branch']}" if step["branch"] else ""
        if step.get("op"):
            typer.echo(f"renumbered  {step['from']} -> {step['to']}{branch}  by '{step['op']}'  {step['date']}")
            continue
        typer.echo(
            f"renumbered  {step['from']} -> {step['to']}{branch}  by merge {step['short']}  {step['date']}  {step['subject']}"
        )
    for ref in out["referenced_by"]:
        where = (
            f"in {ref['commit']['short']}  {ref['commit']['date']}  {ref['commit']['subject']}"
            if ref["commit"]
            else "not committed yet"
        )
        typer.echo(f"{ref['relation']} {ref['id']}  {where}")


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
