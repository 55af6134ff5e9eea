"""The options that bound a user's SQL statement (``docket sql``, ``docket ledger query``), declared once.

Both commands run the statement through ``ledger.db.run_sandboxed``; these
options raise its limits, and ``limits`` turns their values into
``db.Limits``, refusing a value out of range with the option's name.
"""

from __future__ import annotations

import math

from docket_git.cli.spec import Opt
from docket_git.errors import UsageError

TYPE_CHECKING = False  # typing costs every light command ~3 ms at start
if TYPE_CHECKING:
    from typing import Any

    from docket_git.ledger import db

#: The largest --timeout (a day) and --max-rows / --max-bytes (SQLite's own ceiling on one value).
MAX_TIMEOUT, MAX_COUNT = 86400.0, 1_000_000_000

OPTIONS = (
    Opt("--timeout", "timeout", "Stop the statement after this many seconds (default 5).", "SECONDS", default=None),
    Opt("--max-rows", "max_rows", "Refuse a result of more rows (default 1000000).", "N", default=None, integer=True),
    Opt(
        "--max-bytes",
        "max_bytes",
        "Refuse a result, or one value, of more bytes (default 268435456).",
        "N",
        default=None,
        integer=True,
    ),
)


def limits(values: dict[str, Any]) -> db.Limits:
    """The limits the options give (the defaults for those not given); raises ``UsageError`` out of range."""
    from docket_git.ledger import db

    out = db.Limits()
    if values.get("timeout") is not None:
        text = values["timeout"]
        try:
            seconds = float(text)
        except ValueError:
            seconds = math.nan
        if not (0 < seconds <= MAX_TIMEOUT):  # nan and inf fail too
            raise UsageError(f"--timeout {text!r}: give seconds above 0 and at most {MAX_TIMEOUT:g}, e.g. --timeout 30")
        out.timeout = seconds
    for name in ("max_rows", "max_bytes"):
        value = values.get(name)
        if value is not None:
            if not 1 <= value <= MAX_COUNT:
                flag = "--" + name.replace("_", "-")
                raise UsageError(f"{flag} {value}: give a number from 1 to {MAX_COUNT:,}")
            setattr(out, name, value)
    return out
