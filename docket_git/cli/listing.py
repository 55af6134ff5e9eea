"""Reading: ``docket list``, declared once for Typer and the light parser.

Scripts, completion (``docket list --oneline --superseded``) and agents run
``list`` often, and importing Typer cost it about 0.45 s before it started.
``entry.py`` hands a plain invocation to ``fast_main``; anything the light
parser does not take for certain (``--help``, an unknown option, a value that
looks like an option) goes to the Typer command built from the same
declaration (registered in ``cli/read.py``), which calls the same ``run``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from docket_git.cli.spec import Command, Opt
from docket_git.errors import UsageError

TYPE_CHECKING = False  # typing costs every light command ~3 ms at start
if TYPE_CHECKING:
    from typing import Any

WHERE_HELP = (
    "Search: words, kind: state: author: branch: scope:PATH after: before: "
    "is:blocked|retired|pinned|resolved|open|conflict|contested, -negation (docs/commands.md)."
)

COMMAND = Command(
    "list",
    "List current records (retired ones with --superseded).\n\n"
    "Each line is 'ID  STATE  TEXT'. STATE is the effective state: an adopted decision whose "
    "premises fail reads 'adopted, blocked by c4'. '<- c1,c2 | d5' lists what supports the record: "
    "c1 and c2 together, or d5 alone. '(superseded by ID)' marks a retired record.",
    "Read",
    (),
    (
        Opt("--kind", "kind", "claim, decision or question.", default=None),
        Opt("--state", "state", "An effective state, e.g. accepted, adopted, open, resolved.", default=None),
        Opt("--find", "find", "Case-insensitive text in text or choice.", default=None),
        Opt("--where", "where", WHERE_HELP, "QUERY", default=None),
        Opt("--superseded", "superseded", "Include retired records, marked (superseded by ID).", bare=True),
        Opt("--oneline", "oneline", "One truncated line per record.", bare=True),
        Opt("--json", "as_json", "A JSON array of projected records.", bare=True),
    ),
)


def one_line(text: str) -> str:
    """Text for a one-line view: each line break shown as ⏎, so a record never spills onto a second line."""
    return text.replace("\r\n", "\n").replace("\n", " ⏎ ") if "\n" in text else text


def shown_state(view: dict) -> str:
    """The state a listing shows: the effective one, with an adopted decision's blockers named."""
    blockers = [b for b in view.get("blocked_by") or () if b != view["id"]]
    return f"{view['state']}, blocked by {', '.join(blockers)}" if blockers else view["state"]


def _formula(record: dict) -> str:
    return " | ".join(",".join(group) for group in record.get("supports") or [])


def views(
    path: Path,
    kind: str | None,
    *,
    superseded: bool,
    state: str | None = None,
    find: str | None = None,
    where: str | None = None,
    parse_float: Callable[[str], object] | None = None,
) -> Iterator[list[dict]]:
    """Projected records in file order (current ones unless superseded), filtered in SQL over the ledger index.

    Only the listed records' lines are decoded, a slice at a time (``index.records_in_slices``,
    which hands ``parse_float`` each float it decodes); their derived state comes from the index.
    """
    from docket_git.ledger import index, project

    conditions: list[str] = []
    params: list[str] = []
    if kind is not None:
        conditions.append("kind = ?")
        params.append(kind)
    if state is not None:
        conditions.append("state = ?")
        params.append(state)
    if find:
        conditions.append("(docket_has(text, ?) OR docket_has(choice, ?))")
        params.extend([find, find])
    with index.opened(path) as ix:
        if where is None:
            # The plain listing needs none of the query language: importing ``docket_git.context``
            # (the briefing, through the package) would cost more than the query itself.
            ix.conn.create_function("docket_has", 2, _has, deterministic=True)
            condition = " AND ".join(conditions) or "1"
            rows = index.matching_rows(ix.conn, condition, params, current=not superseded, spans=True)
            ids = [row[0] for row in rows]
            spans = [row[1:] for row in rows]
        else:
            from docket_git.context import where as where_mod

            query = where_mod.compile_query(where)
            combined = where_mod.Query(
                " AND ".join(f"({c})" for c in [query.sql, *conditions]),
                (*query.params, *params),
                query.wants_retired,
            )
            ids = where_mod.matching(ix.conn, combined, retired=superseded)
            spans = None
        derived = index.derived_for(ix.conn, ids)
        view = project.view
        for records in index.records_in_slices(ix, ids, spans, parse_float=parse_float):
            yield [view(record, derived) for record in records]


def _has(haystack: str | None, needle: str) -> bool:
    """``--find``: case-insensitive containment, as ``--where`` words match (``context.where._has``)."""
    return haystack is not None and needle.casefold() in haystack.casefold()


def run(values: dict[str, Any]) -> None:
    """List records as ``docket list`` prints them (from either parser's values)."""
    from docket_git.ledger import model, store

    kind, state, where = values["kind"], values["state"], values["where"]
    if kind is not None and kind not in model.KINDS:
        raise UsageError(f"--kind must be one of {', '.join(model.KINDS)}; got {kind!r}")
    if state is not None and state not in model.ALL_STATES:
        raise UsageError(f"--state must be one of {', '.join(model.ALL_STATES)}; got {state!r}")
    if where is not None:
        from docket_git.context import where as where_mod

        where_mod.parse(where)  # a bad query is a usage error even where there is no ledger
    path = store.find_ledger(Path.cwd())
    if path is None:
        print(f"docket: {store.no_ledger(Path.cwd())}", file=sys.stderr)
        if values["as_json"]:
            sys.stdout.write("[]\n")
        return
    floats: list[str] = []  # the floats, NaNs and Infinities the current slice's lines held

    def note(text: str) -> float:
        floats.append(text)
        return float(text)

    as_json = values["as_json"]
    slices = views(
        path,
        kind,
        superseded=values["superseded"],
        state=state,
        find=values["find"],
        where=where,
        parse_float=note if as_json else None,
    )
    if as_json:
        from docket_git.ledger import pretty

        def exact() -> Iterator[tuple[list[dict], bool]]:
            for listed in slices:
                yield listed, not floats
                floats.clear()

        pretty.write_slices(exact(), sys.stdout.write)
        sys.stdout.write("\n")
        return
    empty = True
    for listed in slices:
        if listed:
            empty = False
            sys.stdout.write(lines(listed, oneline=values["oneline"]))  # a write per slice, not per line
    if empty:
        import shlex

        given = [f"--{name} {shlex.quote(values[name])}" for name in ("kind", "state", "find", "where") if values[name]]
        if given:  # the ledger may hold many records: say the filter matched none
            print(
                f"docket: no record matches {' '.join(given)}; 'docket list' shows every current one", file=sys.stderr
            )
        else:
            print("docket: nothing recorded", file=sys.stderr)


def lines(listed: list[dict], *, oneline: bool) -> str:
    """The human listing: one line per record (two with a choice or rationale), or --oneline's truncated lines."""
    import shutil

    from docket_git.cli import colour

    width = shutil.get_terminal_size((100, 24)).columns
    paint = colour.enabled(sys.stdout)
    out: list[str] = []
    for v in listed:
        if oneline:
            retired = f" (superseded by {v['retired_by']})" if v["retired_by"] else ""
            line = f"{v['id']:<5} {shown_state(v):<9} {one_line(v['text'])}{retired}"
            out.append(line if len(line) <= width else line[: max(width - 1, 20)] + "…")
            continue
        line = f"{v['id']}  {colour.state(shown_state(v), v['state'], paint)}  {one_line(v['text'])}"
        if v.get("supports"):
            line += f"  <- {_formula(v)}"
        if v["retired_by"]:
            line += f"  (superseded by {v['retired_by']})"
        out.append(line)
        if v.get("choice"):
            out.append(" " * 6 + "choice: " + one_line(v["choice"]))
        elif v.get("rationale"):
            out.append(" " * 6 + "rationale: " + one_line(v["rationale"]))
    return "\n".join(out) + "\n"


def fast_main(args: list[str]) -> int | None:
    """Run ``docket list ARGS`` without Typer; None when Typer should handle the arguments."""
    return COMMAND.run_light(args, run)


def register(app: Any) -> None:
    """Add ``docket list`` to the Typer app."""
    COMMAND.register(app, run)
