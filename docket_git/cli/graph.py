"""Drawing the ledger: ``docket graph`` (the HTML page or its JSON) and ``docket export``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from docket_git.cli.app import app
from docket_git.cli.common import fail, ledger_path, read_snapshot, usage
from docket_git.digest import sha256
from docket_git.graph import export as exporters
from docket_git.graph import projection

if TYPE_CHECKING:
    from docket_git.context.where import Query


def _write(path: Path, text: str) -> None:
    """Write text to path (creating its directory), or fail with a docket: message."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}; choose another --out")


def _default_page() -> Path:
    """The page's default home: the user cache dir, one file per ledger (never inside the repository)."""
    from docket_git.dirs import cache_dir

    where = ledger_path() or Path.cwd()
    key = sha256(str(where.resolve()).encode())[:12]
    name = where.resolve().parent.parent.name if ledger_path() else where.name
    return Path(cache_dir()) / "graph" / f"{name or 'ledger'}-{key}.html"


@app.command(rich_help_panel="Read")
def graph(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the version-2 graph projection as JSON instead of writing the page.")
    ] = False,
    out: Annotated[
        Path | None, typer.Option("--out", metavar="PATH", help="Where to write the HTML page (default: user cache).")
    ] = None,
    open_: Annotated[bool, typer.Option("--open", help="Open the page in the default browser.")] = False,
) -> None:
    """Draw the ledger: one self-contained HTML page (no network), or its data with --json."""
    if as_json and (out is not None or open_):
        usage("graph --json prints to stdout; it conflicts with --out and --open")
    payload = projection.graph(read_snapshot().records)
    if as_json:
        sys.stdout.write(exporters.to_json(payload["entries"]))
        return
    from docket_git.graph import page

    target = out if out is not None else _default_page()
    _write(target, page.render(payload, title=_title()))
    typer.echo(str(target))
    if open_:
        import webbrowser

        if not webbrowser.open(target.resolve().as_uri()):
            fail(f"no browser to open; open {target} yourself")


def _title() -> str:
    found = ledger_path()
    return f"docket: {found.resolve().parent.parent.name}" if found else "docket"


def _since(rev: str, records: list[dict]) -> set[str]:
    """The IDs of the current records the ledger at commit-ish rev does not hold (matched as a merge would)."""
    from docket_git.history import baseline as history
    from docket_git.ledger import store
    from docket_git.repo import gitio

    root = gitio.workdir(Path.cwd())
    if root is None:
        fail(f"--since {rev}: not in a git repository; ledger history needs one")
    path = ledger_path() or store.locate(Path.cwd())
    try:
        rel = path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = history.LEDGER_RELPATH
    try:
        found = history.baseline_from_rev(root, rev, rel)
    except ValueError as exc:
        fail(f"--since {rev}: the ledger at that commit is unreadable: {exc}")
    if found is None:
        fail(f"--since {rev} names no commit here; give a commit-ish (origin/main, HEAD~3, a tag)")
    baseline, _ = found
    return {r["id"] for r in history.added_since(baseline, records)}


@app.command("export", rich_help_panel="Read")
def export(
    fmt: Annotated[
        str, typer.Option("--format", "-f", metavar="FORMAT", help="json, jsonl, csv, mermaid or dot.")
    ] = "json",
    out: Annotated[
        Path | None,
        typer.Option("--out", metavar="PATH", help="Write here instead of stdout (csv: a directory, required)."),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", metavar="REV", help="Only records added since the ledger at this commit-ish."),
    ] = None,
    superseded: Annotated[bool, typer.Option("--superseded", help="Include retired records.")] = False,
    where: Annotated[
        str | None,
        typer.Option("--where", metavar="QUERY", help="Only records matching this search (as list --where)."),
    ] = None,
) -> None:
    """Export the ledger graph as data (json, jsonl, csv) or a drawing (mermaid, dot)."""
    if fmt not in exporters.FORMATS:
        usage(f"--format must be one of {', '.join(exporters.FORMATS)}; got {fmt!r}")
    if fmt == "csv" and out is None:
        usage("--format csv writes nodes.csv and edges.csv; give the directory with --out DIR")
    query = _where(where) if where is not None else None
    records = read_snapshot().records
    every = projection.graph(records)["entries"]
    ids = _since(since, records) if since is not None else None
    retired = superseded or since is not None
    if query is not None:
        matched = _matching(query)
        ids = matched if ids is None else ids & matched
        retired = retired or query.wants_retired
    entries = projection.select(every, ids=ids, retired=retired)
    if fmt == "csv":
        assert out is not None
        if out.exists() and not out.is_dir():
            usage(f"--out {out} is a file; --format csv needs a directory for nodes.csv and edges.csv")
        nodes, links = exporters.to_csv(entries)
        _write(out / "nodes.csv", nodes)
        _write(out / "edges.csv", links)
        typer.echo(f"{out / 'nodes.csv'}\n{out / 'edges.csv'}")
        return
    text = exporters.render(fmt, entries, all_entries=every)
    if out is None:
        sys.stdout.write(text)
    else:
        _write(out, text)
        typer.echo(str(out))


def _where(text: str) -> Query:
    """A compiled ``--where`` query (a bad one is a usage error before anything is read)."""
    from docket_git.context import where

    return where.compile_query(text)


def _matching(query: Query) -> set[str]:
    """The IDs of the records the query matches, retired ones included (select decides), from the ledger index."""
    from docket_git.context import where
    from docket_git.ledger import index

    path = ledger_path()
    if path is None:
        return set()
    with index.opened(path) as ix:
        return set(where.matching(ix.conn, query, retired=True))
