"""``docket sql "SELECT ..." [--json]`` and ``docket sql --schema``: read-only SQL over the ledger index.

Declared once for Typer and the light parser (a script asking for a count
should not pay for Typer). The index is proven current first
(``ledger.index``); the statement then runs on a connection opened with
``mode=ro``, through ``db.run_sandboxed``: it can read, and attach, create or
write no file; it stops at ``--timeout`` seconds and past ``--max-rows`` rows
or ``--max-bytes`` bytes.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

from docket_git.cli import limits
from docket_git.cli.spec import Arg, Command, Opt
from docket_git.errors import UsageError, notice
from docket_git.ledger import db, index, store

TYPE_CHECKING = False  # typing costs every light command ~3 ms at start
if TYPE_CHECKING:
    from typing import Any

COMMAND = Command(
    "sql",
    "Query the ledger index with one read-only SQL statement (schema: docket sql --schema).",
    "Read",
    (Arg("statement", "One SQL statement, e.g. \"SELECT id, text FROM records WHERE state = 'open'\".", "SQL", None),),
    (
        Opt("--json", "as_json", "Rows as a JSON array of objects.", bare=True),
        Opt("--schema", "schema", "Print the tables and columns the index holds.", bare=True),
        *limits.OPTIONS,
    ),
)


def cell(value: object) -> str:
    """A value as the table shows it: NULL for null, line breaks as ⏎."""
    if value is None:
        return "NULL"
    text = value.hex() if isinstance(value, bytes) else str(value)
    return text.replace("\r\n", "\n").replace("\n", " ⏎ ") if "\n" in text else text


def table(columns: list[str], rows: list[tuple]) -> str:
    """Columns aligned under their headers, a rule under the header, numbers to the right."""
    cells = [[cell(v) for v in row] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    numeric = [bool(rows) and all(isinstance(r[i], int | float) for r in rows) for i in range(len(columns))]

    def line(values: list[str]) -> str:
        parts = [v.rjust(w) if n else v.ljust(w) for v, w, n in zip(values, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    out = [line(columns), "  ".join("-" * w for w in widths)]
    out.extend(line(r) for r in cells)
    return "\n".join(out) + "\n"


def _json_value(value: object) -> object:
    return value.hex() if isinstance(value, bytes) else value


def run(values: dict[str, Any]) -> None:
    """Run the statement (or print the schema)."""
    statement, as_json = values["statement"], values["as_json"]
    if values["schema"]:
        if statement is not None:
            raise UsageError("sql: give a statement or --schema, not both")
        sys.stdout.write(index.SCHEMA)
        return
    if statement is None or not statement.strip():
        raise UsageError('sql: missing the statement; e.g. docket sql "SELECT count(*) FROM records"')
    bounds = limits.limits(values)
    path = store.find_ledger(Path.cwd())
    if path is None:
        notice(store.no_ledger(Path.cwd()))
        conn = sqlite3.connect(":memory:")
        conn.executescript(index.SCHEMA)
        columns, rows = _query(conn, statement, bounds)
    else:
        with index.opened(path) as ix:
            reader = ix.reader()
            try:
                columns, rows = _query(reader, statement, bounds)
            finally:
                if reader is not ix.conn:
                    reader.close()
    if as_json:
        from docket_git.ledger import pretty

        objects = [{c: _json_value(v) for c, v in zip(columns, row, strict=True)} for row in rows]
        pretty.write_list(objects, sys.stdout.write)  # json.dumps(objects, indent=2, ensure_ascii=False), faster
        sys.stdout.write("\n")
    elif columns:
        sys.stdout.write(table(columns, rows))
    sys.stdout.flush()


def _query(conn: sqlite3.Connection, statement: str, bounds: db.Limits) -> tuple[list[str], list[tuple]]:
    try:
        return db.run_sandboxed(conn, statement, bounds)
    except db.Refused as exc:
        raise UsageError(f"sql: {exc}") from None
    except sqlite3.Error as exc:
        reason = str(exc)
        if "readonly" in reason or "query_only" in reason or "read-only" in reason:
            reason += " (docket sql is read-only: the ledger changes only through docket commands)"
        raise UsageError(f"sql: {reason}") from None
    except (ValueError, OverflowError) as exc:  # e.g. a NUL character in the statement
        raise UsageError(f"sql: {exc}") from None


def fast_main(args: list[str]) -> int | None:
    """Run ``docket sql`` without Typer when the light parser takes the arguments; None otherwise."""
    return COMMAND.run_light(args, run)


def register(app: Any) -> None:
    """Add ``docket sql`` to the Typer app."""
    COMMAND.register(app, run)
