"""Session files on disk: init, write (atomic, locked), the active session, load-last and list.

Writes lock the ledger directory itself (``flock`` on its descriptor, so no
lock file lands beside the sessions), re-read the file under the lock, and
replace it through a temp file and a rename: ``last_updated`` in the
frontmatter changes on every write, so a plain append cannot do it, and a
reader never sees half a block. Nothing here follows a symlink inside the
repository: a session directory or file that is one is refused, and files
are opened with ``O_NOFOLLOW``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from docket_git.digest import sha256
from docket_git.ledger import store
from docket_git.ledger.recording import UsageError
from docket_git.ledger.store import LedgerError
from docket_git.repo import files
from docket_git.sessions import fmt

DEFAULT_DIR = "context-ledger"
MAX_BYTES = 32 * 1024 * 1024
NO_ACTIVE = "No active ledger file — run init first"


def now() -> datetime:
    """The current UTC time to the second."""
    return datetime.now(UTC).replace(microsecond=0)


def iso(moment: datetime) -> str:
    """``2026-12-01T07:50:43+00:00``."""
    return moment.isoformat()


# -- safe file access -------------------------------------------------------------


def refuse_symlink(path: Path, what: str) -> None:
    """LedgerError when path is a symlink (a cloned repository is untrusted input)."""
    if path.is_symlink():
        raise LedgerError(f"{what} {path} is a symlink; docket does not follow symlinks here. Use a real {what}")


def _dir_fd(directory: Path) -> int:
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        return os.open(directory, flags)
    except OSError as exc:
        raise LedgerError(f"cannot open directory {directory}: {exc.strerror}") from None


@contextlib.contextmanager
def dir_locked(directory: Path) -> Iterator[None]:
    """Hold an exclusive lock on the session directory (one writer at a time, no lock file)."""
    refuse_symlink(directory, "session directory")
    fd = _dir_fd(directory)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def read_text(path: Path) -> str:
    """A session file's text: a regular file, not a symlink, at most MAX_BYTES, UTF-8 (``repo.files.read_bytes``)."""
    refuse_symlink(path.parent, "session directory")
    try:
        data = files.read_bytes(path, None, MAX_BYTES)
    except FileNotFoundError:
        raise LedgerError(f"ledger file {path} not found; run 'docket session init' first or check the path") from None
    except OSError as exc:
        raise LedgerError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LedgerError(
            f"{path} is not UTF-8 (byte {exc.start}); start a new session with 'docket session init'"
        ) from None


def _write_new(path: Path, text: str) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o644)
    try:
        data = text.encode("utf-8")
        store.fault_point(fd, data, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = _dir_fd(directory)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


#: The session files whose temp files (``.NAME.PID.tmp``) a writer holding the directory lock may remove.
_SESSION_NAMES = r"[^/]+\.md"


def replace_text(path: Path, text: str, *, new: bool = False) -> None:
    """Replace path with text: a new temp file beside it (O_EXCL, O_NOFOLLOW), fsync, rename. All or nothing.

    Call it holding the directory's lock (``dir_locked``): it first removes the
    temp files killed writers left. ``new``: path must not exist yet
    (``FileExistsError``), so a killed ``init`` never leaves a partial file.
    """
    store.remove_stale_temps(path, _SESSION_NAMES)
    if new and os.path.lexists(path):
        raise FileExistsError(errno.EEXIST, "exists", str(path))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()  # an earlier process with this pid left it: under the lock nobody else writes it
        _write_new(tmp, text)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise LedgerError(f"cannot write {path}: {exc.strerror}; the file is unchanged") from None
    _sync_dir(path.parent)


def parse(path: Path, text: str) -> tuple[dict[str, str], list[fmt.Block]]:
    """(frontmatter, blocks) of a session file; a LedgerError that names the line for a corrupt one."""
    try:
        meta, _, _ = fmt.split_frontmatter(text)
        blocks = fmt.parse_blocks(text)
        fmt.check_chain(blocks)
    except fmt.FormatError as exc:
        where = f" line {exc.line}" if exc.line else ""
        raise LedgerError(
            f"{path}{where}: {exc.message}. Fix the file, or start a new session with 'docket session init'"
        ) from None
    return meta, blocks


# -- the active session ---------------------------------------------------------------


def _pointer(cwd: Path) -> Path:
    from docket_git.dirs import state_dir
    from docket_git.ledger.store import find_repo_root

    key = str((find_repo_root(cwd) or cwd).resolve())
    digest = sha256(key.encode())[:16]
    return Path(state_dir()) / "context-ledger" / f"active-{digest}"


def set_active(cwd: Path, path: Path) -> None:
    """Remember path as this repository's (or directory's) active session; outside the repository."""
    pointer = _pointer(cwd)
    with contextlib.suppress(OSError):
        pointer.parent.mkdir(parents=True, exist_ok=True)
        pointer.write_text(str(path.resolve()) + "\n")


def active(cwd: Path) -> Path:
    """The active session file: ``$DOCKET_SESSION_FILE``, else the last init here; LedgerError if none."""
    named = os.environ.get("DOCKET_SESSION_FILE")
    if named:
        return Path(named)
    try:
        path = Path(files.read_text(_pointer(cwd), None, follow=True).strip())
    except (OSError, LedgerError):
        raise LedgerError(NO_ACTIVE) from None
    if not path.is_file():
        raise LedgerError(NO_ACTIVE)
    return path


# -- init ---------------------------------------------------------------------------


def default_dir(cwd: Path) -> Path:
    """``context-ledger/`` at the repository root (or in cwd outside a repository)."""
    from docket_git.ledger.store import find_repo_root

    return (find_repo_root(cwd) or cwd) / DEFAULT_DIR


def _single_line(option: str, value: str) -> None:
    if "\n" in value or "\r" in value or "\x00" in value:
        raise UsageError(f"{option} must be one line of text")


def parse_steps(value: str) -> list[str]:
    """A comma list of step numbers or identifiers (``1,2,3`` or ``S0,S1``)."""
    steps = [part.strip() for part in value.split(",") if part.strip()]
    for step in steps:
        if not fmt.STEP_RE.match(step):
            raise UsageError(f"step {step!r} is not a step number or identifier like 2 or S1")
    return list(dict.fromkeys(steps))


def _make_dir(cwd: Path, directory: Path) -> None:
    """Create a session directory; inside a repository no committed link on the way is followed."""
    from docket_git.ledger.store import find_repo_root

    try:
        files.make_dirs(directory, find_repo_root(cwd))
    except OSError as exc:
        raise LedgerError(f"cannot create {directory}: {exc.strerror}") from None


def _checked_dir(cwd: Path, directory: Path) -> None:
    """Refuse a session directory that is, or sits below, a link inside the repository."""
    from docket_git.ledger.store import find_repo_root

    refuse_symlink(directory, "session directory")
    files.check_dirs(directory / "x", find_repo_root(cwd))


def _ledger_dir(cwd: Path, ledger_dir: str | None, *, create: bool) -> Path:
    directory = Path(ledger_dir) if ledger_dir else default_dir(cwd)
    if not directory.is_absolute():
        directory = cwd / directory
    _checked_dir(cwd, directory)
    if not directory.exists():
        if not create:
            shown = ledger_dir if ledger_dir else f"{DEFAULT_DIR}/"
            raise LedgerError(f"Directory {shown} not found (pass --create-dir to create it)")
        _make_dir(cwd, directory)
    if not directory.is_dir():
        raise LedgerError(f"{directory} is not a directory")
    return directory


def init(
    cwd: Path,
    *,
    system: str,
    workflow: str,
    project: str,
    ledger_dir: str | None = None,
    target_dir: str = "",
    mode: str = "",
    steps: str = "",
    create_dir: bool = False,
) -> tuple[Path, bool]:
    """Create a session file (or, in legacy mode, reuse the target's); (its path, whether it is new)."""
    fault = fmt.check_project(project)
    if fault:
        raise UsageError(f"--project: {fault}")
    for option, value in (("--system", system), ("--workflow", workflow), ("--target-dir", target_dir)):
        _single_line(option, value)
    if not system.strip() or not workflow.strip():
        raise UsageError("--system and --workflow need a name")
    if mode and mode not in fmt.MODES:
        raise UsageError(f"--mode must be architect or express, not {mode!r}")
    declared = parse_steps(steps) if steps else []
    moment = now()
    meta = {
        "schema_version": fmt.SCHEMA_VERSION,
        "system": system,
        "workflow": workflow,
        "project_name": project,
        "target_dir": target_dir,
        "mode": mode,
    }
    if declared:
        meta["steps"] = ", ".join(declared)
    meta.update(created=iso(moment), last_updated=iso(moment))
    if ledger_dir is None and target_dir:
        return _init_legacy(cwd, target_dir, meta, create_dir)
    directory = _ledger_dir(cwd, ledger_dir, create=create_dir)
    with dir_locked(directory):
        minute = moment.strftime("%Y-%m-%d-%H-%M")
        second = moment.strftime("%S")
        candidates = [minute, f"{minute}.{second}", *(f"{minute}.{second}.{n:02d}" for n in range(2, 100))]
        for stamp in candidates:
            path = directory / fmt.session_name(stamp, project)
            try:
                replace_text(path, fmt.new_file(meta), new=True)
            except FileExistsError:
                continue
            set_active(cwd, path)
            return path, True
    raise LedgerError(f"over 100 sessions of {project} started in one second in {directory}; wait a second")


def _init_legacy(cwd: Path, target_dir: str, meta: dict[str, str], create_dir: bool) -> tuple[Path, bool]:
    directory = Path(target_dir)
    if not directory.is_absolute():
        directory = cwd / directory
    _checked_dir(cwd, directory)
    if not directory.is_dir():
        if not create_dir:
            raise LedgerError(f"Directory {target_dir} not found (pass --create-dir to create it)")
        _make_dir(cwd, directory)
    path = directory / fmt.LEGACY_NAME
    with dir_locked(directory):
        try:
            replace_text(path, fmt.new_file(meta), new=True)
        except FileExistsError:
            parse(path, read_text(path))  # an existing single-file ledger is kept, never overwritten
            set_active(cwd, path)
            return path, False
    set_active(cwd, path)
    return path, True


# -- write ----------------------------------------------------------------------------


@dataclass
class Written:
    """What a write appended."""

    path: Path
    step: str
    reaudit: bool
    line: int
    status: str
    agent: str


def parse_metrics(text: str) -> str:
    """``--metrics`` JSON (an object) as the Metrics section's lines."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--metrics is not valid JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(value, dict):
        raise UsageError('--metrics must be a JSON object like {"tokens": 1200}')
    for key in value:
        if not fmt.KEY_RE.match(key):
            raise UsageError(f"--metrics key {key!r} must be letters, digits, '_', '.' or '-'")
    return fmt.render_metrics(value)


def resolve_file(cwd: Path, file: str | None) -> Path:
    """The session file a command works on: --file, else the active session."""
    path = Path(file) if file else active(cwd)
    return path if path.is_absolute() else cwd / path


def write(
    path: Path,
    *,
    step: str,
    agent: str,
    status: str,
    input: str,
    output: str,
    trace: str = "",
    total: str = "",
    metrics: str = "",
) -> Written:
    """Append step's block (or its delta re-audit when the step has one) and update last_updated."""
    if not fmt.STEP_RE.match(step):
        raise UsageError(f"--step {step!r} must be a step number or identifier like 2 or S1")
    if status not in fmt.STATUSES:
        raise UsageError(f"--status must be one of {', '.join(fmt.STATUSES)}, not {status!r}")
    _single_line("--agent", agent)
    if not agent.strip() or " — " in agent:
        raise UsageError("--agent needs a name (without ' — ')")
    if total and not total.isdigit():
        raise UsageError(f"--total must be a number of steps, not {total!r}")
    texts = {"--input": input.strip(), "--output": output.strip(), "--reasoning-trace": trace.strip()}
    for option in ("--input", "--output"):
        if not texts[option]:
            raise UsageError(f"{option} is empty; give the text, @FILE or - for stdin")
    for option, text in texts.items():
        try:
            fmt.check_text(option, text)
        except fmt.FormatError as exc:
            raise UsageError(exc.message) from None
    metrics_text = parse_metrics(metrics) if metrics else ""
    refuse_symlink(path.parent, "session directory")
    refuse_symlink(path, "session file")
    if not path.exists():
        raise LedgerError(f"ledger file {path} not found; run 'docket session init' first or check the path")
    with dir_locked(path.parent):
        text = read_text(path)
        meta, blocks = parse(path, text)
        moment = iso(now())
        updated = fmt.set_frontmatter(text, {"last_updated": moment})
        if "schema_version" not in meta:
            _, blocks = parse(path, updated)  # a v1.0 file gains a frontmatter line: count lines after it
        declared = [s.strip() for s in meta.get("steps", "").split(",") if s.strip()]
        new = fmt.Step(
            step=step,
            agent=agent,
            status=status,
            input=texts["--input"],
            output=texts["--output"],
            trace=texts["--reasoning-trace"],
            metrics=metrics_text,
            timestamp=moment,
            total=total or (str(len(declared)) if declared else ""),
        )
        found = fmt.replay(blocks, step)
        if found is None:
            block = fmt.render_block(new)
        else:
            changes, sections = fmt.delta(found[0], new)
            block = fmt.render_reaudit(step, changes, sections, moment, found[2])
        head = updated + ("\n" if updated.endswith("\n") else "\n\n")
        line = head.count("\n") + 1 + fmt.SEPARATOR.count("\n")
        try:
            fmt.parse_block(block, line)  # never write what would not read back
        except fmt.FormatError as exc:
            raise LedgerError(f"{path}: the new block would not read back ({exc.message}); nothing written") from None
        replace_text(path, head + block)
    return Written(path, step, found is not None, line, status, agent)


# -- load-last and list ---------------------------------------------------------------


def sessions(directory: Path, project: str) -> list[Path]:
    """project's session files in directory, oldest first (by timestamp prefix)."""
    found = []
    for entry in directory.iterdir():
        stamp = fmt.stamp_of(entry.name, project)
        if stamp is not None and entry.is_file() and not entry.is_symlink():
            found.append((stamp, entry))
    return [path for _, path in sorted(found)]


def open_dir(cwd: Path, ledger_dir: str | None, target_dir: str | None, command: str) -> Path:
    """The ledger directory for load-last/list; legacy single-file mode has none."""
    if ledger_dir is None and target_dir:
        raise UsageError(
            f"{command} is not available in legacy single-file mode (--target-dir without --ledger-dir): "
            f"{target_dir}/{fmt.LEGACY_NAME} holds one ledger. Pass --ledger-dir to use per-session files"
        )
    return _ledger_dir(cwd, ledger_dir, create=False)


def load_last(directory: Path, project: str) -> Path | None:
    """The most recent session file of project, or None."""
    fault = fmt.check_project(project)
    if fault:
        raise UsageError(f"--project: {fault}")
    found = sessions(directory, project)
    return found[-1] if found else None


@dataclass
class Summary:
    """A session file at a glance, for ``docket session list``."""

    path: Path
    project: str
    created: str
    steps: int
    status: str
    error: str = ""
    #: Steps the workflow declared (``steps`` in the frontmatter) that were never written.
    missing: tuple[str, ...] = ()

    def status_text(self) -> str:
        """The status as ``session list`` prints it (an incomplete session names its missing steps)."""
        if self.status == "incomplete":
            return f"incomplete (never written: Step {', Step '.join(self.missing)})"
        return self.status


def summarize(path: Path) -> Summary:
    """Steps and overall status of a session file (``completed`` when every step's latest state is)."""
    match = fmt.NAME_RE.match(path.name)
    project = match[2] if match else ""
    try:
        meta, blocks = parse(path, read_text(path))
    except LedgerError as exc:
        return Summary(path, project, "", 0, "unreadable", str(exc))
    written = fmt.step_ids(blocks)
    states = [fmt.replay(blocks, step) for step in written]
    statuses = [found[0].status for found in states if found]
    declared = [s.strip() for s in meta.get("steps", "").split(",") if s.strip()]
    missing = [step for step in dict.fromkeys(declared) if step not in written]
    if not statuses:
        status = "empty"
    elif all(s == "completed" for s in statuses):
        # Every step written is completed, but the workflow declared steps that never were.
        status = "incomplete" if missing else "completed"
    else:
        last = next(found[0] for found in reversed(states) if found and found[0].status != "completed")
        status = f"{last.status} (Step {last.step})"
    return Summary(
        path, meta.get("project_name", project), meta.get("created", ""), len(statuses), status, "", tuple(missing)
    )


def listing(directory: Path, project: str | None) -> list[Summary]:
    """Every session file in directory (of one project if given), oldest first."""
    names = []
    for entry in directory.iterdir():
        match = fmt.NAME_RE.match(entry.name)
        if not match or not entry.is_file() or entry.is_symlink():
            continue
        if project is not None and fmt.stamp_of(entry.name, project) is None:
            continue
        names.append((match[1], entry.name, entry))
    return [summarize(entry) for _, _, entry in sorted(names)]
