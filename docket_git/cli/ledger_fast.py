"""``docket ledger append`` and ``docket ledger query``, declared once for Typer and the light parser.

Scripts and agents append to and query typed ledgers in loops, and starting
Typer (click, pydantic) costs each call more than the work. So ``entry.py``
hands a plain invocation to ``fast_main`` before Typer is imported; anything
the light parser does not take for certain (``--help``, an unknown option)
goes to the Typer command ``cli/ledger.py`` builds from the same declaration,
which calls the same executor.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from docket_git.cli import limits
from docket_git.cli.spec import Arg, Command, Opt
from docket_git.errors import UsageError

TYPE_CHECKING = False  # typing costs every light command ~3 ms at start
if TYPE_CHECKING:
    from typing import Any

TXN = Opt(
    "--txn",
    "txn",
    "Transaction ID: record IDs derive from it, so retrying the same write is a no-op.",
    "ID",
    default=None,
)
APPEND = Command(
    "append",
    "Append one operation (or '-': JSONL operations on stdin, all or nothing); prints each record ID.",
    "",
    (
        Arg("name", "The ledger, as declared in .docket/config.toml.", "NAME"),
        Arg(
            "operation",
            'A JSON object, e.g. \'{"operation": "put", "key": "k", "value": 1}\', or - for JSONL.',
            "OPERATION",
        ),
    ),
    (
        TXN,
        Opt("--json", "as_json", "Print each operation's persistence result as a JSON object (one a line).", bare=True),
    ),
)
QUERY = Command(
    "query",
    "Run read-only SQL on the ledger's SQLite projection (tables: records, state, notes, ...).",
    "",
    (Arg("name", "The ledger.", "NAME"), Arg("sql", "One read-only SQL statement.", "SQL")),
    (
        Opt("--json", "as_json", "Rows as a JSON list of objects.", bare=True),
        Opt(
            "--strict",
            "strict",
            "Fail, as gh-aw's projection does, when replay skipped anything (or strict = true in the declaration).",
            bare=True,
        ),
        *limits.OPTIONS,
    ),
)
COMMANDS = {"append": APPEND, "query": QUERY}


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


def json_arg(text: str, what: str, example: str = '\'{"operation": "append", "value": 1}\'') -> object:
    """A JSON argument, or a refusal (exit 1, as a value the ledger refuses) that shows how to quote one."""
    from docket_git.errors import LedgerError

    try:
        return json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise LedgerError(f"{what} is not JSON ({exc}); quote it, e.g. {example}") from None


def resolve(name: str | None, ltype: str | None = None) -> tuple[Path, Any]:
    """The repository root and the declared ledger called name (or the only one of ltype)."""
    from docket_git.typed import api

    root = api.repo_root(Path.cwd())
    return root, api.resolve(root, name, ltype)


def write(
    name: str | None, ltype: str | None, operations: list[object], txn: str | None, as_json: bool = False
) -> None:
    """Append operations to a ledger and print each one's persistence result: one readable line (the record ID
    first), or with ``as_json`` one JSON object a line (ledger, type, operation, record ID, transaction ID,
    validation status; never the values)."""
    from docket_git.typed import api

    root, ledger = resolve(name, ltype)
    txn = txn or api.default_txn()
    written = api.append(root, ledger, operations, txn=txn)
    out = sys.stdout
    for op, (rid, new) in zip(operations, written, strict=True):
        result = api.persistence_result(ledger, op, rid, txn, new)
        out.write((json.dumps(result, ensure_ascii=False) if as_json else api.result_line(result)) + "\n")
    out.flush()


def run_append(values: dict[str, Any]) -> None:
    """``docket ledger append NAME OPERATION|- [--txn ID] [--json]``."""
    operation = values["operation"]
    if operation == "-":
        ops = []
        for number, line in enumerate(sys.stdin.read().splitlines(), start=1):
            if line.strip():
                ops.append(json_arg(line, f"stdin line {number}"))
        if not ops:
            raise UsageError("no operations on stdin")
    else:
        ops = [json_arg(operation, "OPERATION")]
    write(values["name"], None, ops, values["txn"], values["as_json"])


def run_query(values: dict[str, Any]) -> None:
    """``docket ledger query NAME SQL [--json] [--strict]``."""
    from docket_git.typed import api
    from docket_git.typed.strict import strict_error

    bounds = limits.limits(values)
    root, ledger = resolve(values["name"])
    if values["strict"] or ledger.strict:
        refusal = strict_error(root, ledger)
        if refusal is not None:
            raise refusal
    columns, rows = api.query(root, ledger, values["sql"], bounds)
    as_json, out = values["as_json"], sys.stdout
    if ledger.type == "notes":
        print(f"# {api.UNTRUSTED}", file=sys.stderr if as_json else out)
    if as_json:
        out.write(json.dumps([dict(zip(columns, row, strict=True)) for row in rows], ensure_ascii=False) + "\n")
    else:
        out.write("\t".join(columns) + "\n")
        for row in rows:
            out.write("\t".join("NULL" if v is None else str(v) for v in row) + "\n")
    out.flush()
    skipped = api.query(root, ledger, "SELECT count(*) FROM diagnostics")[1][0][0]
    if skipped:
        # docket skips what gh-aw's projection would fail on; a reader of the rows must know (issue 30 item 3).
        print(
            f"docket: note: {skipped} diagnostic(s): lines or operations replay skipped; "
            f"'docket ledger check {ledger.name}' lists them",
            file=sys.stderr,
        )


RUN = {"append": run_append, "query": run_query}


def fast_main(sub: str, args: list[str]) -> int | None:
    """Run ``docket ledger SUB ARGS`` when the light parser takes them; None to hand them to Typer."""
    return COMMANDS[sub].run_light(args, RUN[sub])
