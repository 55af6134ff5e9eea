"""``docket check``: every fault in the ledger with its line number; ``--staged`` is the commit guard.

The pre-commit hook runs ``docket check --staged`` on every commit, so the
command has a Typer-free parser (``cli/spec``): a plain invocation never
loads Typer, click or rich (about 0.3 s of CPU).
"""

from __future__ import annotations

import sys
from pathlib import Path

from docket_git.cli.spec import Command, Opt
from docket_git.errors import LedgerError, UsageError
from docket_git.ledger import store, validate

TYPE_CHECKING = False  # typing costs every light command ~3 ms at start
if TYPE_CHECKING:
    from typing import Any

COMMAND = Command(
    "check",
    "Report every fault in the ledger with its line number (exit 1 if any).",
    "Maintain",
    (),
    (
        Opt(
            "--staged",
            "staged",
            "Check the ledger as staged in git's index, and that it only grows (pre-commit).",
            bare=True,
        ),
        Opt("--against", "against", "With --staged: the commit to compare with (default HEAD).", "REV", default=None),
    ),
)


def run(values: dict[str, Any]) -> int:
    """Check the ledger (or, with --staged, the staged one against HEAD); the exit code."""
    staged, against = values["staged"], values["against"]
    if against is not None and not staged:
        raise UsageError("--against only applies with --staged")
    if staged:
        code = _check_staged(against)
        return max(code, _check_sessions(staged=True, against=against))
    path = store.find_ledger(Path.cwd())
    if path is None:
        print(f"docket: {store.no_ledger(Path.cwd())}")
        return _check_sessions()
    try:
        with store.locked(path, exclusive=False) as fd:
            data = store.current_bytes(path, fd)
    except FileNotFoundError:
        data = b""
    except OSError as exc:
        raise LedgerError(f"cannot read {path}: {exc.strerror}") from None
    count = _clean_count(path, data)
    if count is not None:
        print(f"docket: {path} reads cleanly, {count} record{'s' if count != 1 else ''}")
        return _check_sessions()
    code = check_bytes(path, data)
    if code:
        from docket_git.ledger import broken

        found = broken.committed_break(path, data)
        if found is not None:
            print(f"docket: {found[2].what(found[1])}; rebuild it with '{broken.COMMAND}'")
    return max(code, _check_sessions())


def fast_main(args: list[str]) -> int | None:
    """Run ``docket check`` without Typer when the light parser takes the arguments; None otherwise."""
    return COMMAND.run_light(args, run)


def register(app: Any) -> None:
    """Add ``docket check`` to the Typer app."""
    COMMAND.register(app, run)


ORDER_ADVICE = (
    "Duplicate or out-of-order IDs usually mean two branches recorded separately. "
    "Recover the other branch's ledger and run:\n  docket rebase OTHER_LEDGER"
)


def check_bytes(path: Path | str, data: bytes) -> int:
    """Print every fault in ledger bytes the way ``docket check`` does; return the exit code."""
    lines = []
    number = 0
    torn = None
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if raw.strip():
            lines.append((number, raw))
    if data and not data.endswith(b"\n") and lines and lines[-1][0] == number:
        torn = number
    faults, count = validate.check_all(lines)
    for fault in faults:
        if fault.line == torn and fault.message.startswith("invalid JSON"):
            fault.message += " (a torn final line with no newline; the next append removes it)"
    if not faults:
        print(f"docket: {path} reads cleanly, {count} record{'s' if count != 1 else ''}")
        return 0
    print(f"docket: {path} has {len(faults)} fault(s)")
    for fault in faults:
        print(f"  {fault}")
    messages = " ".join(f.message for f in faults)
    if "duplicate id" in messages or "does not increase past" in messages:
        print(ORDER_ADVICE)
    elif "conflict marker" in messages:
        print("docket: run 'docket resolve-conflict' to merge git's two sides of the ledger as the driver does")
    return 1


def _clean_count(path: Path, data: bytes) -> int | None:
    """How many records data holds when it validates, checking only the lines the ledger index has not seen.

    None when it does not (or ends in a torn line): then every line is checked, to report every fault.
    """
    if data and not data.endswith(b"\n"):
        return None
    from docket_git.ledger import index

    try:
        return index.parse(path, data, records=False).index.count
    except store.LedgerError:
        return None


def _check_sessions(*, staged: bool = False, against: str | None = None) -> int:
    """Session step logs in context-ledger/: well-formed, and (staged) append-only against HEAD."""
    from docket_git.sessions import check as sessions_check

    return sessions_check.report(Path.cwd(), staged=staged, against=against)


def _check_staged(against: str | None) -> int:
    """The pre-commit check: the staged ledger validates and extends the committed one."""
    from docket_git.merging import staged
    from docket_git.repo import gitio

    root = gitio.workdir(Path.cwd())
    if root is None:
        raise LedgerError("--staged needs a git repository; run it inside one")
    found = store.find_ledger(Path.cwd()) or (root / store.LEDGER_DIR / store.LEDGER_NAME)
    try:
        rel = found.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = f"{store.LEDGER_DIR}/{store.LEDGER_NAME}"
    data = gitio.staged_blob(root, rel)
    rev = against or "HEAD"
    exists, committed = gitio.blob_at(root, rev, rel)
    if against is not None and not exists:
        raise UsageError(f"--against {against} names no commit")
    parents = [(rev, committed)] if committed is not None else []
    if against is None:
        for head in gitio.merge_heads(root):
            _, theirs = gitio.blob_at(root, head, rel)
            if theirs is not None:
                parents.append((head[:12], theirs))
    if data is None:
        if parents:
            raise LedgerError(
                f"{rel} is staged for deletion, and the ledger is append-only; "
                f"restore it with 'git checkout HEAD -- {rel}'"
            )
        return _check_staged_typed(root, against)
    code = 0
    if not _staged_valid(found, data):
        code = check_bytes(f"{rel} (staged)", data)
        if code:
            print(
                f"docket: commit blocked; fix or remove the faulty line(s) and 'git add {rel}' again, "
                f"or drop your edits with 'git checkout HEAD -- {rel}'",
                file=sys.stderr,
            )
    fault = staged.append_only_fault(parents, data, rel) or (against is None and staged.merge_fault(root, rel, data))
    if fault and against is None and len(parents) == 1:
        from docket_git.merging import repair

        if repair.accepts(root, rel, data, committed):  # HEAD's ledger was committed broken: its repair may replace it
            fault = None
    if fault:
        print(f"docket: {fault}", file=sys.stderr)
        code = 1
    return code | _check_staged_typed(root, against)


def _check_staged_typed(root: Path, against: str | None) -> int:
    """Typed ledgers (.docket/ledgers/*.jsonl): every staged record valid, no committed record lost."""
    from docket_git.typed import staged as typed_staged

    faults = typed_staged.check(root, against)
    for fault in faults:
        print(f"docket: {fault}", file=sys.stderr)
    return 1 if faults else 0


def _staged_valid(path: Path, data: bytes) -> bool:
    # Fast path: the staged bytes usually share all but their last lines with the indexed worktree ledger.
    try:
        from docket_git.ledger import index

        index.parse(path, data, records=False)
    except store.LedgerError:
        return False
    return not data or data.endswith(b"\n")
