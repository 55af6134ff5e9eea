"""``docket ledger ...``: typed ledgers (log, set, map, table, counter, notes) and their SQLite projections."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated

import typer

from docket_git.cli import ledger_fast
from docket_git.cli.app import app
from docket_git.cli.common import usage
from docket_git.cli.ledger_fast import json_arg

ledger_app = typer.Typer(
    help=(
        "Typed ledgers in .docket/ledgers/: append operations, query their SQLite projection, verify notes."
        "\n\nAgents call the same commands as the typed-ledger spec's MCP tools (docket mcp, docs/mcp.md):"
        " append is ledger_append, map-put ledger_map_put, map-delete ledger_map_delete,"
        " note-add ledger_note_add, note-vote ledger_note_vote, query ledger_query."
    ),
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(ledger_app, name="ledger", rich_help_panel="Record")

_CITE = re.compile(r"^(?P<path>.+?)(?::(?P<start>\d+)(?:-(?P<end>\d+))?)?$")


def _root() -> Path:
    from docket_git.typed import api

    return api.repo_root(Path.cwd())


_resolve = ledger_fast.resolve
_write = ledger_fast.write


_TXN = typer.Option(
    "--txn", metavar="ID", help="Transaction ID: record IDs derive from it, so retrying the same write is a no-op."
)
_JSON = typer.Option("--json", help="Print the persistence result as a JSON object.")


@ledger_app.command("types")
def types() -> None:
    """Print which type fits which need, its operations and its state columns."""
    from docket_git.typed.declare import NEEDS

    width = max(len(n) for n, *_ in NEEDS)
    typer.echo(f"{'Need':<{width}}  {'Type':<8} Operations -> state columns")
    for need, ltype, operations, columns in NEEDS:
        typer.echo(f"{need:<{width}}  {ltype:<8} {operations} -> {columns}")


@ledger_app.command("list")
def list_() -> None:
    """List the declared ledgers with their types and files."""
    from docket_git.typed import api, declare

    root = _root()
    for name, decl in sorted(declare.load(root).items()):
        schema = " (schema)" if decl.schema is not None else ""
        key = f" key={decl.key}" if decl.key else ""
        typer.echo(f"{name}\t{decl.type or 'untyped'}{key}{schema}\t{api.where(root, decl)}")


# append and query are declared once in cli/ledger_fast.py and also run without Typer (entry.py).
ledger_fast.APPEND.register(ledger_app, ledger_fast.run_append)


def _split(args: list[str], wanted: int, shape: str) -> tuple[str | None, list[str]]:
    if len(args) == wanted + 1:
        return args[0], args[1:]
    if len(args) == wanted:
        return None, args
    usage(f"expected {shape}")


@ledger_app.command("map-put")
def map_put(
    args: Annotated[list[str], typer.Argument(metavar="[NAME] KEY VALUE_JSON", help="NAME may be omitted.")],
    txn: Annotated[str | None, _TXN] = None,
    as_json: Annotated[bool, _JSON] = False,
) -> None:
    """Put KEY -> VALUE_JSON into a map ledger."""
    name, (key, value) = _split(args, 2, "[NAME] KEY VALUE_JSON")
    _write(
        name,
        "map",
        [
            {
                "operation": "put",
                "key": key,
                "value": json_arg(value, "VALUE_JSON", example="'\"a string\"' or '{\"a\": 1}'"),
            }
        ],
        txn,
        as_json,
    )


@ledger_app.command("map-delete")
def map_delete(
    args: Annotated[list[str], typer.Argument(metavar="[NAME] KEY", help="NAME may be omitted.")],
    txn: Annotated[str | None, _TXN] = None,
    as_json: Annotated[bool, _JSON] = False,
) -> None:
    """Delete KEY from a map ledger (an absent key is harmless)."""
    name, (key,) = _split(args, 1, "[NAME] KEY")
    _write(name, "map", [{"operation": "delete", "key": key}], txn, as_json)


def _citation(text: str) -> dict:
    match = _CITE.match(text)
    if not match:
        usage(f"--cite {text!r}: use PATH, PATH:LINE or PATH:START-END")
    out: dict = {"type": "repository", "path": match["path"]}
    if max(len(match["start"] or ""), len(match["end"] or "")) > 9:
        usage(f"--cite {text[:60]!r}...: a line number has at most 9 digits; use PATH:LINE or PATH:START-END")
    if match["start"]:
        out["start_line"] = int(match["start"])
        if match["end"]:
            out["end_line"] = int(match["end"])
    return out


@ledger_app.command("note-add")
def note_add(
    name: Annotated[
        str | None, typer.Argument(help="The notes ledger; may be omitted when only one is declared.")
    ] = None,
    subject: Annotated[str, typer.Option("--subject", help="What the note is about.")] = "",
    note: Annotated[str, typer.Option("--note", help="The assertion.")] = "",
    reason: Annotated[str, typer.Option("--reason", help="Why the evidence supports it.")] = "",
    cite: Annotated[
        list[str] | None, typer.Option("--cite", metavar="PATH[:START[-END]]", help="Repository evidence; repeatable.")
    ] = None,
    txn: Annotated[str | None, _TXN] = None,
    as_json: Annotated[bool, _JSON] = False,
) -> None:
    """Add a note with evidence; each citation is pinned to HEAD and the cited lines' hash."""
    if not cite:
        usage("note-add needs at least one --cite PATH[:START[-END]]")
    op = {"operation": "note", "subject": subject, "note": note, "reason": reason}
    op["citations"] = [_citation(c) for c in cite]
    _write(name, "notes", [op], txn, as_json)


@ledger_app.command("note-vote")
def note_vote(
    args: Annotated[list[str], typer.Argument(metavar="[NAME] NOTE_ID up|down", help="NAME may be omitted.")],
    reason: Annotated[str | None, typer.Option("--reason", help="Why (optional).")] = None,
    txn: Annotated[str | None, _TXN] = None,
    as_json: Annotated[bool, _JSON] = False,
) -> None:
    """Vote a note up or down after checking its cited evidence (each vote is a new record)."""
    name, (note_id, vote) = _split(args, 2, "[NAME] NOTE_ID up|down")
    op: dict = {"operation": "vote", "note_id": note_id, "vote": vote}
    if reason is not None:
        op["reason"] = reason
    _write(name, "notes", [op], txn, as_json)


ledger_fast.QUERY.register(ledger_app, ledger_fast.run_query)


@ledger_app.command("path")
def path(name: Annotated[str, typer.Argument(help="The ledger.")]) -> None:
    """Print the path of the ledger's SQLite projection (brought up to date first)."""
    from docket_git.typed import api

    root, ledger = _resolve(name)
    typer.echo(str(api.projection(root, ledger)))


@ledger_app.command("check")
def check(
    name: Annotated[str, typer.Argument(help="The ledger.")],
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="Say first where and why gh-aw's projection fails, with its message "
            "(or strict = true in the declaration).",
        ),
    ] = False,
) -> None:
    """List every line or record replay skipped, with its line and reason (exit 1 if any)."""
    from docket_git.typed import api
    from docket_git.typed.strict import strict_failure

    root, ledger = _resolve(name)
    found = api.diagnostics(root, ledger)
    rel = api.where(root, ledger)
    if not found:
        why = strict_failure(root, ledger) if strict or ledger.strict else None
        if why is None:
            typer.echo(f"docket: {rel} replays cleanly")
            return
        typer.echo(f"docket: {rel} fails under --strict, where gh-aw's projection fails: {why}")  # older records
        raise typer.Exit(1)
    if strict or ledger.strict:
        typer.echo(
            f"docket: {rel} fails under --strict, where gh-aw's projection fails: {strict_failure(root, ledger)}"
        )
        typer.echo(f"docket: {rel} has {len(found)} diagnostic(s):")
    else:
        typer.echo(f"docket: {rel} has {len(found)} diagnostic(s); the rest replays")
    name_line = api.line_name(root, ledger)
    for code, line, rid, detail in found:
        where = name_line(line) if line else "ledger"
        typer.echo(f"  {where}{f' ({rid})' if rid else ''}: {code}: {detail}")
    raise typer.Exit(1)


@ledger_app.command("verify")
def verify(
    name: Annotated[str | None, typer.Argument(help="The notes ledger; may be omitted when only one.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per citation.")] = False,
) -> None:
    """Check every note's citations against the working tree: unchanged, moved, changed or missing.

    A note without pins (one gh-aw wrote) is checked against its cited lines only: missing, or unpinned
    ("not pinned"). Exits 1 when a citation moved, changed or is missing (so CI can gate on it), 0 when
    every one holds.
    """
    from docket_git.typed import api, cite

    root, ledger = _resolve(name, "notes")
    rows = api.verify(root, ledger)
    failed = any(row["status"] in ("moved", "changed", "missing") for row in rows)
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False))
        raise typer.Exit(1 if failed else 0)
    typer.echo(f"# {api.UNTRUSTED}")
    for row in rows:
        lines = cite.format_lines(row)
        detail = f" ({row['detail']})" if row["detail"] and row["status"] != "unchanged" else ""
        typer.echo(f"{row['note_id']}\t{row['status']}\t{row['path']}{lines}{detail}")
    raise typer.Exit(1 if failed else 0)


@ledger_app.command("compact")
def compact(name: Annotated[str, typer.Argument(help="The ledger.")]) -> None:
    """Rewrite the file in canonical order, keeping every record ID, hash and parent (state unchanged)."""
    from docket_git.typed import api

    root, ledger = _resolve(name)
    kept, dropped = api.compact(root, ledger)
    typer.echo(f"docket: compacted ledger '{ledger.name}': {kept} records kept, {dropped} duplicate line(s) dropped")
