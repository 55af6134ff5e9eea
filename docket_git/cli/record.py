"""Recording: ``docket claim|decision|question|record``, declared once for Typer and the light parser.

Agents record many times a session, so ``entry.py`` hands a plain invocation
to ``fast_main`` before Typer is imported; anything the light parser does not
take for certain goes to the Typer command built from the same declaration,
which calls the same executor.
"""

from __future__ import annotations

import json
import os
import posixpath
import subprocess
import sys
from pathlib import Path

from docket_git.cli.spec import Arg, Command, Opt
from docket_git.errors import UsageError, warn
from docket_git.ledger import canonical, index, project, recording, store
from docket_git.ledger.append import append

TYPE_CHECKING = False  # typing costs every light command ~3 ms at start
if TYPE_CHECKING:
    from typing import Any

PANEL = "Record"
SCOPE = Opt(
    "--scope", "scope", "A file, directory (dir/), glob or component this governs. Repeatable.", "PATH", repeat=True
)
RATIONALE = Opt("--rationale", "rationale", "Why; the reasoning behind the record.")
SUPPORTS = Opt(
    "--supports",
    "supports",
    "Grounds as a comma list (one AND set); repeat for OR: --supports c1,c2 --supports c3.",
    "IDS",
    repeat=True,
)
ANSWERS = Opt("--answers", "answers", "Questions this answers (IDs, repeatable or comma list).", "IDS", repeat=True)
TAIL = (
    Opt(
        "--supersedes",
        "supersedes",
        "Same-kind records this retires (IDs, repeatable or comma list).",
        "IDS",
        repeat=True,
    ),
    Opt(
        "--evidence",
        "evidence",
        'A reference, or JSON {"ref":..,"checked_at":..,"commit":..}. Repeatable.',
        "REF",
        repeat=True,
    ),
    Opt("--revisit", "revisit", "When or why to look at this again."),
    Opt("--cost", "cost", "What breaks if this turns out wrong."),
    Opt("--pin", "pin", "Give the record a fixed bonus in every briefing.", bare=True),
    Opt("--dry-run", "dry_run", "Validate and print the record; write nothing.", bare=True),
    Opt("--json", "as_json", "Print the written record as JSON.", bare=True),
)
STATES = {"claim": ("unassessed", "accepted", "disputed", "rejected"), "decision": ("adopted", "revoked")}

COMMANDS: dict[str, Command] = {
    "claim": Command(
        "claim",
        "Record a claim: a scoped proposition the work relies on.",
        PANEL,
        (Arg("text", "The proposition, stated (not asked).", "TEXT"),),
        (
            Opt("--state", "state", "unassessed, accepted, disputed or rejected.", "STATE", default="unassessed"),
            SCOPE,
            RATIONALE,
            SUPPORTS,
            ANSWERS,
            *TAIL,
        ),
    ),
    "decision": Command(
        "decision",
        "Record a decision: a commitment to a choice, with what it beat and why.",
        PANEL,
        (Arg("text", "What the decision commits to, as a statement.", "TEXT"),),
        (
            Opt("--choice", "choice", "The option chosen.", required=True),
            Opt("--alternative", "alternative", "An option the choice beat. Repeatable.", repeat=True),
            Opt("--state", "state", "adopted or revoked.", "STATE", default="adopted"),
            Opt("--decided-by", "decided_by", "Who made the call, if not the recorder.", "WHO"),
            SCOPE,
            RATIONALE,
            SUPPORTS,
            Opt(
                "--depends-on",
                "depends_on",
                "Prerequisite claims/decisions (IDs, repeatable or comma list).",
                "IDS",
                repeat=True,
            ),
            ANSWERS,
            *TAIL,
        ),
    ),
    "question": Command(
        "question",
        "Record an open question. Answer it later with a claim or decision --answers ID.",
        PANEL,
        (Arg("text", "The open inquiry.", "TEXT"),),
        (SCOPE, RATIONALE, SUPPORTS, *TAIL),
    ),
    "record": Command(
        "record",
        """Record a batch from JSONL, all or nothing.

    Each line holds one record's own fields (kind, text, choice, scope,
    supports, answers, ...); IDs are allocated. Cite an earlier line of the
    batch as @N (counting from 1), e.g. {"kind":"decision",...,"depends_on":["@1"]}.
    """,
        PANEL,
        (Arg("file", "A JSONL file of records, or - for stdin.", "FILE", default="-"),),
        (
            Opt("--dry-run", "dry_run", "Validate and print the record; write nothing.", bare=True),
            Opt("--json", "as_json", "Print the written records as JSONL.", bare=True),
        ),
    ),
}


def _supports(values: list[str] | None) -> list[list[str]]:
    return [group for group in (recording.split_ids([v]) for v in values or []) if group]


def execute(kind: str, text: str, opts: dict[str, Any]) -> None:
    """Validate, append and report one record (``--dry-run``: validate and report only).

    Raises ``UsageError`` (exit 2) for a bad --state, ``LedgerError`` (exit 1)
    for a record or ledger the rules refuse.
    """
    if kind in STATES and opts["state"] not in STATES[kind]:
        raise UsageError(f"--state must be one of {', '.join(STATES[kind])}; got {opts['state']!r}")
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
    here = Path.cwd()
    scopes = [_scope(s, root, here) for s in fields.pop("scope", None) or []]
    fields["scope"] = list(dict.fromkeys(scopes))
    hints = path_like_components(fields["scope"], root, batch=False, here=here)
    if not hints and fields["scope"] and _hints_wanted():
        hints = unmatched_scopes(fields["scope"], root, path)
    for hint in hints:
        warn(hint)
    fields["evidence"] = [recording.parse_evidence(e) for e in fields.pop("evidence", None) or []]
    author, unknown = recording.detect_author(path.parent)
    if unknown:
        warn('could not detect an author; recording "unknown". Set DOCKET_AUTHOR to identify this harness.')
    draft = recording.draft(kind, text, fields, recording.provenance(path, author))
    records = append(path, [draft], dry_run=opts["dry_run"])
    report(records, as_json=opts["as_json"], dry_run=opts["dry_run"])
    explain_effects(path, records, dry_run=opts["dry_run"])


def execute_batch(file: str, *, dry_run: bool, as_json: bool) -> None:
    """``docket record FILE``: append a JSONL batch all or nothing (``-`` reads stdin)."""
    if file == "-":
        data = sys.stdin.buffer.read()
    else:
        from docket_git.repo import files

        try:
            data = files.read_bytes(Path(file), None, files.LEDGER_CAP, follow=True)
        except files.UnsafePath as exc:
            raise UsageError(str(exc)) from None
        except OSError as exc:
            raise UsageError(f"cannot read {file}: {exc.strerror}") from None
    append_batch(data, dry_run=dry_run, as_json=as_json)


def append_batch(data: bytes, *, dry_run: bool, as_json: bool) -> None:
    """Append the JSONL batch ``data`` all or nothing and report it (``docket record`` and the MCP tool)."""
    path = store.locate(Path.cwd())
    drafts = recording.parse_batch(data, recording.provenance(path))
    scopes = [scope for d in drafts for scope in d.get("scope") or ()]
    for hint in path_like_components(list(dict.fromkeys(scopes)), path.parent.parent, batch=True):
        warn(hint)
    records = append(path, drafts, dry_run=dry_run)
    report(records, as_json=as_json, dry_run=dry_run, jsonl=True)
    explain_effects(path, records, dry_run=dry_run)


def explain_effects(path: Path, records: list[dict], *, dry_run: bool) -> None:
    """Say in one line each what the new records silently changed (blocked decisions, reopened questions).

    Only a record that supersedes or answers something can have such an
    effect, so a plain append never pays for the extra read.
    """
    if not any(r.get("supersedes") or r.get("answers") for r in records):
        return
    found = index.effects(path, records, dry_run=dry_run)
    if found is not None:  # the index settles what the records reach (the ledger has not grown past them)
        for line in found:
            warn(line)
        return
    existing = index.read(path).records
    if dry_run:
        existing = existing + records
    else:
        last = {r["id"] for r in records}
        end = max((i for i, r in enumerate(existing) if r["id"] in last), default=-1) + 1
        existing = existing[:end]
    for line in project.consequences(existing, len(records)):
        warn(line)


def _below(here: Path, root: Path) -> str:
    """Where ``here`` is under ``root``, as a root-relative POSIX path ("" at the root or outside it)."""
    try:
        rel = here.resolve().relative_to(root.resolve()).as_posix()
    except (OSError, ValueError):
        return ""
    return "" if rel == "." else rel


def from_here(scope: str, root: Path, here: Path) -> str:
    """A ``--scope`` path read from the current directory, as git reads a pathspec.

    A relative path, ``dir/`` or glob given in ``src/pay`` names ``src/pay/...``
    (``./api.py`` is ``src/pay/api.py``, ``../x/`` is ``src/x/``); a component
    name (no ``/``, no glob character) and an absolute path are left as they
    are. ``recording.normalize_scope`` then makes the result root-relative.
    """
    value = scope.strip().replace("\\", "/")
    if not value or os.path.isabs(value) or ("/" not in value and not set("*?[]") & set(value)):
        return scope
    below = _below(here, root)
    return posixpath.join(below, value) if below else scope


def _scope(scope: str, root: Path, here: Path) -> str:
    """One ``--scope`` value read from ``here``, stored root-relative; a refusal names the value as typed."""
    joined = from_here(scope, root, here)
    try:
        return recording.normalize_scope(joined, root)
    except UsageError:
        if joined == scope:
            raise
        raise UsageError(
            f"--scope {scope} points outside the repository (read from {_below(here, root)}/, as git reads paths);"
            " use a path inside it"
        ) from None


def _known_components(ledger: Path) -> set[str]:
    """The component names the ledger's records already use (empty when it cannot be read)."""
    if not ledger.exists():
        return set()
    try:
        found = index.open_index(ledger)
    except Exception:  # advice only: a ledger that cannot be read is reported by the command itself
        return set()
    try:
        return {scope.casefold() for scope in index.component_scopes(found.conn)}
    except Exception:
        return set()
    finally:
        found.close()


def _tracked(root: Path) -> list[str] | None:
    """The repository's tracked paths, casefolded (None when git cannot list them)."""
    try:
        proc = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return [p.decode("utf-8", "surrogateescape").casefold() for p in proc.stdout.split(b"\0") if p]


def unmatched_scopes(scopes: list[str], root: Path, ledger: Path) -> list[str]:
    """One hint for each scope that names no path here and no component another record uses.

    A file or directory on disk matches without asking git; only a glob
    (or a path not on disk) lists the tracked files, and only a component
    name reads the ledger, so a plain ``--scope src/app.py`` costs a stat.
    """
    from docket_git.context.scope import GLOB_CHARS, is_component, strength

    out: list[str] = []
    tracked: list[str] | None = None
    known: set[str] | None = None
    weights = {"scope_exact": 3, "scope_glob": 2, "scope_prefix": 1}
    for scope in scopes:
        if scope in (".", "./"):
            continue
        if is_component(scope):
            if known is None:
                known = _known_components(ledger)
            if scope.casefold() not in known:
                out.append(
                    f"--scope {scope!r} is a component name no record uses yet, and it names no file:"
                    " it matches query text only (write a path, ./NAME or dir/, to scope files)"
                )
            continue
        if not GLOB_CHARS & set(scope) and os.path.lexists(root / scope):
            continue
        if tracked is None:
            tracked = _tracked(root)
        if tracked is None or strength(tracked, scope.casefold(), weights):
            continue
        out.append(f"--scope {scope!r} matches no tracked path (paths are read from the current directory)")
    return out


def path_like_components(scopes: list[str], root: Path, *, batch: bool, here: Path | None = None) -> list[str]:
    """Advice for component scopes (no slash, no glob) that name a file or directory here or at the root.

    A component matches query text, never a file (the seed's rule), so
    ``--scope a.py`` would never reach ``docket context --file a.py``. In a
    subdirectory the path spelling is ``./a.py`` (read from there).
    """
    out = []
    below = _below(here, root) if here is not None else ""
    flag = '"scope"' if batch else "--scope"
    for scope in scopes:
        if "/" in scope or set("*?[]") & set(scope):
            continue
        if below and here is not None and os.path.lexists(here / scope):
            spelling = f"./{scope}/" if (here / scope).is_dir() else f"./{scope}"
            out.append(
                f"{flag} {scope!r} is a component name, which matches query text only, though {scope} exists"
                f" in {below}/; to scope the path, write {spelling!r}"
            )
            continue
        if not os.path.lexists(root / scope):
            continue
        if (root / scope).is_dir():
            spelling = f"{scope}/"
        elif scope[0] not in "!^":
            spelling = f"[{scope[0]}]{scope[1:]}"
        else:
            spelling = f"{scope}*"
        out.append(
            f"{flag} {scope!r} is a component name, which matches query text only, though {scope} exists here;"
            f" to scope the path, write {spelling!r}"
            + ("" if spelling.endswith("/") else " (a glob: a file at the root has no slash to mark it a path)")
        )
    return out


def _hints_wanted() -> bool:
    """The record hints are on unless ``hints = false`` in the ledger's config.toml."""
    from docket_git.context.config import ConfigError, hints_enabled

    path = store.find_ledger(Path.cwd())
    try:
        return path is None or hints_enabled(path)
    except ConfigError:
        return True  # the record is written: a bad config is the briefing's to report, not a failure here


def report(records: list[dict], *, as_json: bool, dry_run: bool, jsonl: bool = False) -> None:
    """Print the records (one line each, or JSON), then their hints and the dry-run note on stderr."""
    for record in records:
        if as_json:
            out = canonical.dumps(record) if jsonl else json.dumps(record, indent=2, ensure_ascii=False)
        else:
            out = f"{record['id']}  {record['state']}  {record['text']}"
        sys.stdout.write(out + "\n")
    sys.stdout.flush()
    said = [hint for record in records for hint in recording.hints(record, batch=jsonl)]
    if said and _hints_wanted():
        for hint in said:
            warn(hint)
    if dry_run:
        warn(f"dry run: {len(records)} record(s) valid; nothing written")


def run(kind: str, values: dict[str, Any]) -> None:
    """Run a recording command on its parsed values (from either parser)."""
    if kind == "record":
        execute_batch(values["file"], dry_run=values["dry_run"], as_json=values["as_json"])
    else:
        execute(kind, values.pop("text"), values)


def fast_main(kind: str, args: list[str]) -> int | None:
    """Run ``docket KIND ARGS`` when the light parser takes them; None to hand them to Typer."""
    return COMMANDS[kind].run_light(args, lambda values: run(kind, values))


def register(app: Any) -> None:
    """Add the recording commands to the Typer app."""
    for kind, command in COMMANDS.items():
        command.register(app, lambda values, kind=kind: run(kind, values))
