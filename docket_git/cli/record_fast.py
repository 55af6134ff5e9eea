"""``docket claim|decision|question|record`` without Typer: the option table, a strict parser, the executors.

Agents record many times a session, and Typer (with the pydantic it now
builds its parameters with) costs such a command over a tenth of a second
before it starts. ``entry.py`` hands a plain invocation to ``fast_main``;
anything this parser does not take for certain (``--help``, an unknown or
malformed option, a missing argument) returns None, and the Typer command,
which calls the same ``execute``, handles or reports it. A test keeps
``OPTIONS`` equal to the Typer commands' parameters.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from docket_git.ledger import canonical, recording, store


@dataclass(frozen=True)
class Opt:
    """One option: its flag, the executor's name for it, and whether it repeats or is a bare flag."""

    flag: str
    dest: str
    repeat: bool = False
    bare: bool = False
    required: bool = False

    @property
    def default(self) -> object:
        return [] if self.repeat else False if self.bare else ""


_SHARED = (
    Opt("--scope", "scope", repeat=True),
    Opt("--rationale", "rationale"),
    Opt("--supports", "supports", repeat=True),
)
_TAIL = (
    Opt("--supersedes", "supersedes", repeat=True),
    Opt("--evidence", "evidence", repeat=True),
    Opt("--revisit", "revisit"),
    Opt("--cost", "cost"),
    Opt("--pin", "pin", bare=True),
    Opt("--dry-run", "dry_run", bare=True),
    Opt("--json", "as_json", bare=True),
)
ANSWERS = Opt("--answers", "answers", repeat=True)

#: Each recording command's options, in the order its --help lists them.
OPTIONS: dict[str, tuple[Opt, ...]] = {
    "claim": (Opt("--state", "state"), *_SHARED, ANSWERS, *_TAIL),
    "decision": (
        Opt("--choice", "choice", required=True),
        Opt("--alternative", "alternative", repeat=True),
        Opt("--state", "state"),
        Opt("--decided-by", "decided_by"),
        *_SHARED,
        Opt("--depends-on", "depends_on", repeat=True),
        ANSWERS,
        *_TAIL,
    ),
    "question": (*_SHARED, *_TAIL),
}
STATES = {"claim": ("unassessed", "accepted", "disputed", "rejected"), "decision": ("adopted", "revoked")}


def parse(kind: str, args: list[str]) -> tuple[str, dict] | None:
    """(text, options) for a plain invocation; None for anything Typer should see."""
    table = {opt.flag: opt for opt in OPTIONS[kind]}
    values: dict[str, object] = {opt.dest: opt.default for opt in table.values()}
    values["state"] = STATES[kind][0] if kind in STATES else ""
    seen: set[str] = set()
    text: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not arg.startswith("-") or arg == "-":
            if text is not None:
                return None  # an extra argument: Typer says so
            text = arg
            continue
        flag, eq, inline = arg.partition("=")
        opt = table.get(flag)
        if opt is None:
            return None  # --help, -h, --, an unknown or abbreviated option
        if opt.bare:
            if eq:
                return None
            values[opt.dest] = True
            continue
        if eq:
            value = inline
        elif i < len(args):
            value, i = args[i], i + 1
        else:
            return None  # the option's value is missing
        if opt.repeat:
            values[opt.dest].append(value)  # type: ignore[union-attr]
        else:
            values[opt.dest] = value
        seen.add(opt.flag)
    if text is None or any(opt.required and opt.flag not in seen for opt in table.values()):
        return None
    return text, values


def _supports(values: list[str] | None) -> list[list[str]]:
    return [group for group in (recording.split_ids([v]) for v in values or []) if group]


def _warn(message: str) -> None:
    print(f"docket: {message}", file=sys.stderr)


def execute(kind: str, text: str, opts: dict) -> None:
    """Validate, append and report one record (``--dry-run``: validate and report only).

    Raises ``UsageError`` (exit 2) for a bad --state, ``LedgerError`` (exit 1)
    for a record or ledger the rules refuse.
    """
    if kind in STATES and opts["state"] not in STATES[kind]:
        raise recording.UsageError(f"--state must be one of {', '.join(STATES[kind])}; got {opts['state']!r}")
    fields: dict = {}
    if kind != "question":
        fields["state"] = opts["state"]
    if kind == "decision":
        fields.update(
            choice=opts["choice"], alternatives=list(opts["alternative"] or []), decided_by=opts["decided_by"]
        )
    fields.update(scope=opts["scope"], rationale=opts["rationale"], supports=_supports(opts["supports"]))
    if kind == "decision":
        fields["depends_on"] = recording.split_ids(opts["depends_on"])
    if kind != "question":
        fields["answers"] = recording.split_ids(opts["answers"])
    fields.update(
        supersedes=recording.split_ids(opts["supersedes"]),
        evidence=opts["evidence"],
        revisit=opts["revisit"],
        cost_if_wrong=opts["cost"],
        pinned=opts["pin"],
    )
    path = store.locate(Path.cwd())
    root = path.parent.parent
    scopes = [recording.normalize_scope(s, root) for s in fields.pop("scope", None) or []]
    fields["scope"] = list(dict.fromkeys(scopes))
    fields["evidence"] = [recording.parse_evidence(e) for e in fields.pop("evidence", None) or []]
    _author, unknown = recording.detect_author()
    if unknown:
        _warn('could not detect an author; recording "unknown". Set DOCKET_AUTHOR to identify this harness.')
    draft = recording.draft(kind, text, fields, recording.provenance(path))
    records = store.append(path, [draft], dry_run=opts["dry_run"])
    report(records, as_json=opts["as_json"], dry_run=opts["dry_run"])


def execute_batch(file: str, *, dry_run: bool, as_json: bool) -> None:
    """``docket record FILE``: append a JSONL batch all or nothing (``-`` reads stdin)."""
    if file == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            data = Path(file).read_bytes()
        except OSError as exc:
            raise recording.UsageError(f"cannot read {file}: {exc.strerror}") from None
    path = store.locate(Path.cwd())
    drafts = recording.parse_batch(data, recording.provenance(path))
    records = store.append(path, drafts, dry_run=dry_run)
    report(records, as_json=as_json, dry_run=dry_run, jsonl=True)


def parse_batch_args(args: list[str]) -> tuple[str, bool, bool] | None:
    """(file, --dry-run, --json) for a plain ``docket record`` call; None for anything Typer should see."""
    flags = {"--dry-run": False, "--json": False}
    files: list[str] = []
    for arg in args:
        if arg in flags:
            flags[arg] = True
        elif arg == "-" or not arg.startswith("-"):
            files.append(arg)
        else:
            return None
    if len(files) > 1:
        return None
    return (files[0] if files else "-"), flags["--dry-run"], flags["--json"]


def report(records: list[dict], *, as_json: bool, dry_run: bool, jsonl: bool = False) -> None:
    """Print the records (one line each, or JSON), then their hints and the dry-run note on stderr."""
    for record in records:
        if as_json:
            out = canonical.dumps(record) if jsonl else json.dumps(record, indent=2, ensure_ascii=False)
        else:
            out = f"{record['id']}  {record['state']}  {record['text']}"
        sys.stdout.write(out + "\n")
    sys.stdout.flush()
    for record in records:
        for hint in recording.hints(record):
            _warn(hint)
    if dry_run:
        _warn(f"dry run: {len(records)} record(s) valid; nothing written")


def fast_main(kind: str, args: list[str]) -> int | None:
    """Run ``docket KIND ARGS`` (``record`` too) when the strict parser takes them; None to hand them to Typer."""
    if kind == "record":
        batch = parse_batch_args(args)
        if batch is None:
            return None
        return _guarded(lambda: execute_batch(batch[0], dry_run=batch[1], as_json=batch[2]))
    parsed = parse(kind, args)
    if parsed is None:
        return None
    text, opts = parsed
    return _guarded(lambda: execute(kind, text, opts))


def _guarded(run: Callable[[], None]) -> int:
    """Run a command; a ledger or usage error becomes ``docket: ...`` and its exit code."""
    try:
        run()
    except store.LedgerError as exc:
        print(f"docket: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        return 0
    return 0
