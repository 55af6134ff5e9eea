"""``docket session write``, declared once for Typer and the light parser.

Every agent of a multi-agent workflow writes its step through this command,
so ``entry.py`` hands a plain invocation to ``fast_main`` before Typer is
imported; anything else goes to the Typer command ``cli/session.py`` builds
from the same declaration, which calls the same executor.
"""

from __future__ import annotations

import sys
from pathlib import Path

from docket_git.cli.spec import Command, Opt
from docket_git.errors import UsageError

TYPE_CHECKING = False  # typing costs every light command ~3 ms at start
if TYPE_CHECKING:
    from typing import Any

WRITE = Command(
    "write",
    "Append a step's block (a delta re-audit if the step has one); print where it went.",
    "",
    (),
    (
        Opt("--step", "step", "The step number or identifier (0, 1, S0, S1...).", required=True),
        Opt("--agent", "agent", "The agent that ran the step.", required=True),
        Opt("--status", "status", "completed, in_progress or pending.", required=True),
        Opt("--input", "input", "Summary of the input the agent received (@FILE, - stdin).", required=True),
        Opt("--output", "output", "The agent's output: JSON, text, a reference (@FILE, -).", required=True),
        Opt("--file", "file", "The session file (default: the one the last 'session init' made here).", default=None),
        Opt("--reasoning-trace", "reasoning_trace", "The agent's reasoning before its answer (@FILE, -)."),
        Opt("--total", "total", "Number of steps, for 'Step N of M'."),
        Opt("--metrics", "metrics", 'A JSON object, e.g. {"tokens": 1200}.'),
        Opt("--record", "record", "Also record a claim 'Step N by A: status' scoped to the session file.", bare=True),
    ),
)


#: The most an ``@FILE`` option reads (a session file holds at most 32 MiB).
ARG_FILE_CAP = 32 * 1024 * 1024


def text_option(option: str, value: str, used_stdin: list[bool]) -> str:
    """An option's text: as given, from a file (``@path``) or from stdin (``-``, once per command)."""
    if value == "-":
        if used_stdin:
            raise UsageError(f"{option} -: only one option can read stdin")
        used_stdin.append(True)
        return sys.stdin.read()
    if value.startswith("@"):
        from docket_git.repo import files  # a regular file, capped: never a FIFO or /dev/zero

        try:
            return files.read_bytes(Path(value[1:]), None, ARG_FILE_CAP, follow=True).decode("utf-8")
        except files.UnsafePath as exc:
            raise UsageError(f"{option} {value}: {exc}") from None
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or "not UTF-8"
            raise UsageError(f"{option} {value}: cannot read {value[1:]}: {reason}") from None
    return value


def run_write(values: dict[str, Any]) -> None:
    """Append a step's block and print ``PATH:LINE: Step N block|re-audit`` (and the claim, with --record)."""
    from docket_git.sessions import files

    step, agent, status = values["step"], values["agent"], values["status"]
    stdin: list[bool] = []
    trace, metrics = values["reasoning_trace"], values["metrics"]
    texts = {
        "input": text_option("--input", values["input"], stdin),
        "output": text_option("--output", values["output"], stdin),
        "trace": text_option("--reasoning-trace", trace, stdin) if trace else "",
        "metrics": text_option("--metrics", metrics, stdin) if metrics else "",
    }
    path = files.resolve_file(Path.cwd(), values["file"])
    ledger = None
    if values["record"]:
        ledger = claim(path, f"Step {step} by {agent}: {status}", "", dry_run=True)
    written = files.write(path, step=step, agent=agent, status=status, total=values["total"], **texts)
    kind = "re-audit" if written.reaudit else "block"
    print(f"{written.path}:{written.line}: Step {written.step} {kind}", flush=True)
    if ledger is not None:
        text = f"Step {step} by {agent}: {status}" + (" (re-audit)" if written.reaudit else "")
        claim(path, text, f"{written.line}", dry_run=False)


def claim(session: Path, text: str, line: str, *, dry_run: bool) -> Path:
    """Record (or, dry_run, check that docket can record) the claim that summarises a written step."""
    from docket_git.ledger import recording, store
    from docket_git.ledger.append import append

    ledger = store.locate(Path.cwd())
    root = ledger.parent.parent
    scope = recording.normalize_scope(str(session.resolve()), root)
    fields: dict = {"scope": [scope], "rationale": "Recorded by 'docket session write --record'."}
    if line:
        fields["evidence"] = [{"ref": f"{scope}:{line}"}]
    draft = recording.draft("claim", text, fields, recording.provenance(ledger))
    records = append(ledger, [draft], dry_run=dry_run)
    if not dry_run:
        print(f"{records[0]['id']}  {records[0]['state']}  {records[0]['text']}", flush=True)
    return ledger


def fast_main(args: list[str]) -> int | None:
    """Run ``docket session write ARGS`` when the light parser takes them; None to hand them to Typer."""
    return WRITE.run_light(args, run_write)


def register(session_app: Any) -> None:
    """Add ``write`` to the ``docket session`` Typer app."""
    WRITE.register(session_app, run_write)
