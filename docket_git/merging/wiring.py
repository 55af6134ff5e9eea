"""Wiring a clone into git: merge attributes, the merge driver, a chained pre-commit hook.

Every step is idempotent, reports what it did, and never clobbers what a user
already had: an existing pre-commit hook is moved aside and run first by
ours. ``diagnose`` reports the same wiring for ``docket doctor``.
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
from collections.abc import Callable
from pathlib import Path

from docket_git.errors import LedgerError
from docket_git.plain import Plain
from docket_git.repo import files, gitio

ATTRIBUTE_PATTERN = ".docket/**/*.jsonl"
#: ``-text``: git never converts a ledger's line ends (the format is LF only, see docs/merging.md).
ATTRIBUTE_LINE = f"{ATTRIBUTE_PATTERN} merge=docket -text"
LEDGER_PATH = ".docket/ledger.jsonl"
DRIVER_ARGS = "merge-driver %O %A %B %P"
DRIVER_NAME = "docket ledger merge (renumbers the incoming tail)"
#: The inner merge of a criss-cross's merge bases: git's binary driver takes the bases' own
#: ancestor. Our driver there would build a virtual base equal to one side, and git would then
#: skip the driver for the outer merge and take the other side's file whole.
RECURSIVE_DRIVER = "binary"
HOOK_MARKER = "# docket-git pre-commit hook"
CHAINED_NAME = "pre-commit.docket-chained"
NOTICE = "# merge driver not set up in this clone; run docket init"
PRE_COMMIT_CONFIG = ".pre-commit-config.yaml"
NOT_REGISTERED = "docket: merge driver not registered"
#: The environment doctor and init start the driver in: what an IDE or GUI client may give git.
BARE_ENV = {"PATH": "/usr/bin:/bin"}
REWIRE = (
    "run 'docket init' again with the docket you use now (after a virtualenv moved or was rebuilt, "
    "that re-writes the driver and the hook with its interpreter)"
)


def docket_command() -> str:
    """The shell words that start this docket without PATH: its absolute interpreter, isolated.

    ``-I`` keeps the repository (untrusted, and git's cwd) off ``sys.path``, so a
    ``docket_git`` directory in a clone is never imported instead of the install.
    """
    return f"{shlex.quote(sys.executable)} -I -m docket_git"


def driver_command(docket: str | None = None) -> str:
    """merge.docket.driver: docket's driver, and conflict markers if it could not start or left none.

    Git substitutes %O %A %B already quoted. A driver that fails without writing
    markers (not found, a broken install) would leave ours looking merged, and
    staging it would drop the other side: ``git merge-file`` writes markers then.
    """
    docket = docket or docket_command()
    return (
        f"{docket} {DRIVER_ARGS} || {{ s=$?; grep -q '^<<<<<<<' %A || "
        "git merge-file -L ours -L base -L theirs %A %O %B; exit $s; }"
    )


def hook_script(docket: str | None = None) -> str:
    """The pre-commit hook: chained hook first, then this docket's staged check; loud if it cannot start."""
    docket = docket or docket_command()
    interpreter = shlex.split(docket)[0]
    return f"""#!/bin/sh
{HOOK_MARKER} (installed by 'docket init'; 'docket init --no-git-hooks' skips it).
# Runs the pre-commit hook that was here before it, then checks the staged ledger.
hook_dir=$(dirname "$0")
if [ -x "$hook_dir/{CHAINED_NAME}" ]; then
    "$hook_dir/{CHAINED_NAME}" "$@" || exit $?
fi
if [ -x {shlex.quote(interpreter)} ]; then
    exec {docket} check --staged
fi
echo {shlex.quote(f"docket: docket not found ({interpreter} is gone); did you forget to activate your virtualenv?")} >&2
echo {shlex.quote(f"docket: the staged ledger was not checked, so the commit is refused; {REWIRE}")} >&2
exit 1
"""


class Finding(Plain):
    """One thing ``docket doctor`` looked at: whether it is fine, and the fix if not."""

    __slots__ = ("area", "fix", "ok", "what")

    def __init__(self, ok: bool, what: str, fix: str = "", area: str = "merge") -> None:
        self.ok = ok
        self.what = what
        self.fix = fix
        #: What a problem here breaks: "merge" (git merges ledgers as text) or "commit" (nothing checks commits).
        self.area = area

    __hash__ = None  # type: ignore[assignment]  # compared by value, like the dataclass it was


# -- attributes -------------------------------------------------------------------


def _attributes_assign(root: Path) -> bool:
    """True when git's attributes route the ledger to the docket driver in this checkout."""
    return gitio.attribute(root, LEDGER_PATH, "merge") == "docket"


def _gitattributes_mentions(root: Path) -> bool:
    try:
        text = files.read_text(root / ".gitattributes", root)
    except (OSError, LedgerError):
        return False  # missing, or a link / special file docket will not read
    return any("merge=docket" in line.split() for line in text.splitlines() if not line.lstrip().startswith("#"))


def _append_line(path: Path, root: Path, line: str) -> str | None:
    """Add line at the end of path (after a newline if needed); the reason when it could not.

    Read and replaced through ``repo.files``: a committed link at path (say
    ``.gitattributes -> ../.bashrc``) or a special file raises ``UnsafePath``
    and nothing is written anywhere.
    """
    try:
        try:
            existing = files.read_bytes(path, root)
        except FileNotFoundError:
            existing = b""
        sep = b"" if not existing or existing.endswith(b"\n") else b"\n"
        files.write_replace(path, existing + sep + line.encode() + b"\n", root)
    except OSError as exc:
        return f"docket: could not update {path}: {exc.strerror}"
    return None


def ensure_attributes(root: Path) -> str:
    """Append the merge=docket -text line to .gitattributes unless lines already assign both."""
    path = root / ".gitattributes"
    if _gitattributes_mentions(root) and _attributes_assign(root):
        if gitio.attribute(root, LEDGER_PATH, "text") is False:
            return f"docket: {path} already routes ledgers to the docket merge driver"
        # An older init wrote merge=docket alone: add the line-end rule.
        line = f"{ATTRIBUTE_PATTERN} -text"
        return _append_line(path, root, line) or f"docket: added '{line}' to {path} (ledgers are LF only); commit it"
    return _append_line(path, root, ATTRIBUTE_LINE) or f"docket: added '{ATTRIBUTE_LINE}' to {path}; commit it"


# -- the driver -----------------------------------------------------------------------


def _first_word(command: str | None) -> str | None:
    try:
        words = shlex.split(command or "")
    except ValueError:
        return None
    return words[0] if words else None


def _driver_runnable(command: str | None) -> bool:
    """Cheap (no process): the command's program exists, as an absolute path or on PATH."""
    import shutil

    program = _first_word(command)
    if not program:
        return False
    if os.path.isabs(program):
        return os.access(program, os.X_OK)
    return shutil.which(program) is not None


def starts_bare(command: str | None) -> tuple[bool, str]:
    """Whether a configured driver command starts docket from a bare environment; (ok, what it said)."""
    if not command or f" {DRIVER_ARGS}" not in command:
        return False, "it is not a docket merge-driver command"
    import subprocess  # only doctor and init probe the driver; the briefing's notice must not pay for it

    probe = command.split(f" {DRIVER_ARGS}", 1)[0] + " merge-driver --help"
    try:
        proc = subprocess.run(
            ["/bin/sh", "-c", probe], env=BARE_ENV, capture_output=True, text=True, timeout=30, cwd="/"
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return False, str(exc)
    said = " ".join((proc.stderr + proc.stdout).split())
    return proc.returncode == 0 and "merge-driver" in said, said[:200]


def register_driver(root: Path) -> str:
    """Write merge.docket.driver, .recursive and .name to this clone's config, with a command that needs no PATH."""
    command = driver_command()
    ok, said = starts_bare(command)
    if not ok:
        return (
            f"{NOT_REGISTERED}: '{command}' does not start without PATH ({said}); reinstall docket and run docket init"
        )
    wanted = {"merge.docket.driver": command, "merge.docket.recursive": RECURSIVE_DRIVER}
    if all(gitio.config_get(root, k) == v for k, v in wanted.items()) and gitio.config_get(root, "merge.docket.name"):
        return "docket: the ledger merge driver is already registered in this clone's git config"
    try:
        # driver before name: a name without a driver makes git abort merges ("lacks command line").
        for key, value in wanted.items():
            gitio.config_set_local(root, key, value)
        gitio.config_set_local(root, "merge.docket.name", DRIVER_NAME)
    except Exception as exc:
        return f"{NOT_REGISTERED}: git config failed ({exc}); fix the repository's .git/config and run docket init"
    return f"docket: registered the ledger merge driver in this clone's git config ({command})"


def driver_notice(repo_root: Path, config_get: Callable[[Path, str], str | None] | None = None) -> str | None:
    """The briefing's top line when .gitattributes asks for the driver and this clone lacks it.

    ``config_get``: how the driver's config value is read (default ``gitio.config_get``, a git process).
    """
    if not _gitattributes_mentions(repo_root):
        return None
    if _driver_runnable((config_get or gitio.config_get)(repo_root, "merge.docket.driver")):
        return None
    return NOTICE


# -- the pre-commit hook -------------------------------------------------------------


def _is_ours(path: Path) -> bool:
    return HOOK_MARKER in (_read(path) or "")


def _framework_runs_check(root: Path) -> bool:
    try:
        text = files.read_text(root / PRE_COMMIT_CONFIG, root)
    except (OSError, LedgerError):
        return False
    from docket_git.merging import precommit

    return precommit.runs_guard(text)  # a hooks entry with id: docket-check, not a mere mention


def _hook_state(root: Path) -> tuple[Path | None, str]:
    """(hooks dir, how the docket check runs: "hook", "legacy", "framework" or "")."""
    hooks = gitio.hooks_dir(root)
    if _framework_runs_check(root):
        return hooks, "framework"
    if hooks is None:
        return None, ""
    if _is_ours(hooks / "pre-commit"):
        return hooks, "hook"
    # The pre-commit framework moves a hook it replaces to pre-commit.legacy and still runs it.
    if _is_ours(hooks / "pre-commit.legacy"):
        return hooks, "legacy"
    return hooks, ""


def install_hook(root: Path) -> list[str]:
    """Install the chained pre-commit hook running ``docket check --staged``."""
    hooks, state = _hook_state(root)
    if state == "framework":
        return [f"docket: {PRE_COMMIT_CONFIG} runs docket-check; no git hook needed"]
    script = hook_script()
    if state in ("hook", "legacy") and hooks is not None:
        where = hooks / ("pre-commit" if state == "hook" else "pre-commit.legacy")
        refused = hooks_refusal(root)
        if refused and _read(where) != script:
            return [f"docket: pre-commit hook not updated: {refused}"]
        if _read(where) != script:
            return _write_hook(where, script, [f"docket: updated the pre-commit hook to run this docket ({where})"])
    if state:
        return [f"docket: the pre-commit hook already runs docket check --staged ({hooks})"]
    if hooks is None:
        return ["docket: could not find the git hooks directory; pre-commit hook not installed"]
    hook = hooks / "pre-commit"
    chained = hooks / CHAINED_NAME
    refused = hooks_refusal(root) or _not_regular(hook) or _not_regular(chained)
    if refused:
        return [f"docket: pre-commit hook not installed: {refused}"]
    out: list[str] = []
    try:
        hooks.mkdir(parents=True, exist_ok=True)
        if hook.exists() or hook.is_symlink():
            if chained.exists() or chained.is_symlink():
                return [
                    f"docket: pre-commit hook not installed: both {hook} and {chained} exist; "
                    f"add 'docket check --staged' to your hook by hand"
                ]
            os.replace(hook, chained)
            out.append(f"docket: moved your pre-commit hook to {chained}; the docket hook runs it first")
    except OSError as exc:
        return [*out, f"docket: could not install the pre-commit hook in {hooks}: {exc.strerror}"]
    return _write_hook(
        hook, script, [*out, f"docket: installed a pre-commit hook running 'docket check --staged' ({hook})"]
    )


def _hook_interpreter(script: str) -> str | None:
    """The interpreter a docket hook script starts, or None for an older hook that relies on PATH."""
    for line in script.splitlines():
        if line.startswith("if [ -x ") and line.endswith(" ]; then") and "hook_dir" not in line:
            return _first_word(line[len("if [ -x ") : -len(" ]; then")])
    return None


def _read(path: Path) -> str | None:
    """A hook's text, or None: missing, or not a regular file (a FIFO there must not hang init or doctor).

    A hook may be a link (hook managers make them), so it is followed; it is read capped, never blocking.
    """
    try:
        return files.read_text(path, None, follow=True)
    except (OSError, LedgerError):
        return None


def _not_regular(path: Path) -> str | None:
    """Why the hook at path is no file docket can chain or replace (a FIFO, a device, a directory), or None."""
    try:
        mode = os.stat(path).st_mode  # a link to a regular file is fine: it is moved aside, never written through
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"
    return f"{path} is not a regular file ({kind}), so git cannot run it as a hook; move it aside: mv {path} {path}.bak"


def hooks_refusal(root: Path) -> str | None:
    """Why docket will not write into hooks, or None.

    A hooks directory that is a symbolic link is followed only when the user
    named it (``core.hooksPath``) or when it points inside the git directory;
    a link elsewhere (a shared directory, another repository, ``~``) would
    make ``init`` write a ``pre-commit`` there.
    """
    if gitio.config_get(root, "core.hooksPath"):
        return None
    dirs = gitio._git_dirs(root)  # git names the hooks directory resolved: look at <common git dir>/hooks itself
    if dirs is None:
        return None
    hooks = dirs[1] / "hooks"
    try:
        if not hooks.is_symlink():
            return None
        target = hooks.resolve()
        git_dir = dirs[1].resolve()
    except (OSError, RuntimeError):
        return f"{hooks} is a symbolic link docket cannot resolve; replace it: rm {hooks} && mkdir {hooks}"
    if target.is_relative_to(git_dir):
        return None
    return (
        f"{hooks} is a symbolic link to {target}, outside the git directory {git_dir}; docket writes a hook "
        f"only there or into core.hooksPath. If that directory is meant to hold this clone's hooks, say so: "
        f"git config core.hooksPath {shlex.quote(str(target))}; else replace the link: rm {hooks} && mkdir {hooks}"
    )


def _write_hook(hook: Path, script: str, said: list[str]) -> list[str]:
    """Replace hook with script atomically; said on success, the reason otherwise."""
    tmp = hook.parent / f".pre-commit.docket.{os.getpid()}.tmp"
    try:
        tmp.write_text(script)
        tmp.chmod(tmp.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        os.replace(tmp, hook)
    except OSError as exc:
        return [f"docket: could not install the pre-commit hook in {hook.parent}: {exc.strerror}"]
    return said


# -- together ------------------------------------------------------------------------


def wire(root: Path, *, hooks: bool = True) -> list[str]:
    """Everything ``docket init`` does to git; the report lines."""
    lines = [ensure_attributes(root), register_driver(root)]
    if hooks:
        lines.extend(install_hook(root))
    return lines


def diagnose(root: Path) -> list[Finding]:
    """Whether this clone is wired, one finding per part, each with its fix."""
    findings: list[Finding] = []
    command = gitio.config_get(root, "merge.docket.driver")
    name = gitio.config_get(root, "merge.docket.name")
    orphan = [k for k in ("name", "recursive") if gitio.config_get(root, f"merge.docket.{k}")]
    if not command and orphan:
        findings.append(
            Finding(
                False,
                f"merge.docket.{orphan[0]} is set without merge.docket.driver, so git aborts every ledger merge "
                "('custom merge driver docket lacks command line')",
                "run docket init",
            )
        )
    elif not command:
        findings.append(Finding(False, "merge.docket.driver is not set in this clone", "run docket init"))
    else:
        ok, said = starts_bare(command)
        if ok:
            findings.append(Finding(True, f"merge.docket.driver = {command} (starts without PATH)"))
        else:
            findings.append(
                Finding(
                    False,
                    f"merge.docket.driver '{command}' does not start docket from a bare environment "
                    f"(PATH={BARE_ENV['PATH']}, as an IDE or GUI client may run git): {said or 'no output'}",
                    REWIRE,
                )
            )
    if command and gitio.config_get(root, "merge.docket.recursive") != RECURSIVE_DRIVER:
        findings.append(
            Finding(
                False,
                f"merge.docket.recursive is not '{RECURSIVE_DRIVER}', so a criss-cross merge can take the other "
                "side's ledger whole",
                "run docket init",
            )
        )
    if command and not name:
        findings.append(Finding(False, "merge.docket.name is not set", "run docket init"))
    if _attributes_assign(root):
        findings.append(Finding(True, f"git attributes route {LEDGER_PATH} to merge=docket"))
    else:
        value = gitio.attribute(root, LEDGER_PATH, "merge")
        now = f" (now merge={value})" if isinstance(value, str) else ""
        findings.append(
            Finding(
                False,
                f"git attributes do not route {LEDGER_PATH} to the docket driver{now}",
                f"run docket init (it appends '{ATTRIBUTE_LINE}' to .gitattributes), then commit .gitattributes",
            )
        )
    commit_checks = len(findings)
    hooks, state = _hook_state(root)
    if state == "framework":
        findings.append(Finding(True, f"{PRE_COMMIT_CONFIG} runs docket-check"))
    elif state:
        where = hooks / ("pre-commit" if state == "hook" else "pre-commit.legacy")  # type: ignore[operator]
        script = _read(where) or ""
        interpreter = _hook_interpreter(script)
        if interpreter is not None and os.access(interpreter, os.X_OK):
            findings.append(Finding(True, f"pre-commit hook runs docket check --staged ({where})"))
        else:
            gone = f"runs {interpreter}, which is gone" if interpreter else "finds docket only on PATH"
            findings.append(Finding(False, f"the pre-commit hook {where} {gone}", REWIRE))
        chained = hooks / CHAINED_NAME  # type: ignore[operator]
        if chained.exists() and not os.access(chained, os.X_OK):
            findings.append(
                Finding(
                    False, f"the chained hook {chained} is not executable, so it does not run", f"chmod +x {chained}"
                )
            )
        elif chained.exists():
            findings.append(Finding(True, f"your previous pre-commit hook still runs first ({chained})"))
    else:
        refused = None if hooks is None else hooks_refusal(root) or _not_regular(hooks / "pre-commit")
        findings.append(
            Finding(
                False,
                "no pre-commit hook checks the staged ledger" + (f" ({refused.split('; ', 1)[0]})" if refused else ""),
                refused.split("; ", 1)[1]
                if refused
                else "run docket init (or add id: docket-check to .pre-commit-config.yaml)",
            )
        )
    for finding in findings[commit_checks:]:
        finding.area = "commit"
    return findings
