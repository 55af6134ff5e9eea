"""Wiring a clone into git: merge attributes, the merge driver, a chained pre-commit hook.

Every step is idempotent, reports what it did, and never clobbers what a user
already had: an existing pre-commit hook is moved aside and run first by
ours. ``diagnose`` reports the same wiring for ``docket doctor``.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from docket_git.repo import gitio

ATTRIBUTE_PATTERN = ".docket/**/*.jsonl"
ATTRIBUTE_LINE = f"{ATTRIBUTE_PATTERN} merge=docket"
LEDGER_PATH = ".docket/ledger.jsonl"
DRIVER_COMMAND = "docket merge-driver %O %A %B %P"
DRIVER_NAME = "docket ledger merge (renumbers the incoming tail)"
HOOK_MARKER = "# docket-git pre-commit hook"
CHAINED_NAME = "pre-commit.docket-chained"
NOTICE = "# merge driver not set up in this clone; run docket init"
PRE_COMMIT_CONFIG = ".pre-commit-config.yaml"

HOOK_SCRIPT = f"""#!/bin/sh
{HOOK_MARKER} (installed by 'docket init'; 'docket init --no-git-hooks' skips it).
# Runs the pre-commit hook that was here before it, then checks the staged ledger.
hook_dir=$(dirname "$0")
if [ -x "$hook_dir/{CHAINED_NAME}" ]; then
    "$hook_dir/{CHAINED_NAME}" "$@" || exit $?
fi
if command -v docket >/dev/null 2>&1; then
    exec docket check --staged
fi
echo "docket: docket is not on PATH, so the staged ledger was not checked; run 'docket doctor'" >&2
exit 0
"""


@dataclass
class Finding:
    """One thing ``docket doctor`` looked at: whether it is fine, and the fix if not."""

    ok: bool
    what: str
    fix: str = ""


# -- attributes -------------------------------------------------------------------


def _attributes_assign(root: Path) -> bool:
    """True when git's attributes route the ledger to the docket driver in this checkout."""
    return gitio.attribute(root, LEDGER_PATH, "merge") == "docket"


def _gitattributes_mentions(root: Path) -> bool:
    try:
        text = (root / ".gitattributes").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return any("merge=docket" in line.split() for line in text.splitlines() if not line.lstrip().startswith("#"))


def ensure_attributes(root: Path) -> str:
    """Append the merge=docket line to .gitattributes unless a line already assigns it."""
    path = root / ".gitattributes"
    if _gitattributes_mentions(root) and _attributes_assign(root):
        return f"docket: {path} already routes ledgers to the docket merge driver"
    try:
        existing = path.read_bytes() if path.exists() else b""
        sep = b"" if not existing or existing.endswith(b"\n") else b"\n"
        with open(path, "ab") as handle:
            handle.write(sep + ATTRIBUTE_LINE.encode() + b"\n")
    except OSError as exc:
        return f"docket: could not update {path}: {exc.strerror}"
    return f"docket: added '{ATTRIBUTE_LINE}' to {path}; commit it"


# -- the driver -----------------------------------------------------------------------


def _driver_runnable(command: str | None) -> bool:
    return bool(command and command.split() and shutil.which(command.split()[0]))


def register_driver(root: Path) -> str:
    """Write merge.docket.driver and .name to this clone's config, if docket is on PATH."""
    if shutil.which("docket") is None:
        return (
            "docket: merge driver not registered: docket is not on PATH, so git could not run it. "
            "Put docket on PATH and run docket init again."
        )
    if gitio.config_get(root, "merge.docket.driver") == DRIVER_COMMAND and gitio.config_get(root, "merge.docket.name"):
        return "docket: the ledger merge driver is already registered in this clone's git config"
    try:
        # driver before name: a name without a driver makes git abort merges ("lacks command line").
        gitio.config_set_local(root, "merge.docket.driver", DRIVER_COMMAND)
        gitio.config_set_local(root, "merge.docket.name", DRIVER_NAME)
    except Exception as exc:
        return f"docket: merge driver not registered: git config failed ({exc}); run docket doctor"
    return "docket: registered the ledger merge driver in this clone's git config"


def driver_notice(repo_root: Path) -> str | None:
    """The briefing's top line when .gitattributes asks for the driver and this clone lacks it."""
    if not _gitattributes_mentions(repo_root):
        return None
    if _driver_runnable(gitio.config_get(repo_root, "merge.docket.driver")):
        return None
    return NOTICE


# -- the pre-commit hook -------------------------------------------------------------


def _is_ours(path: Path) -> bool:
    try:
        return HOOK_MARKER in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def _framework_runs_check(root: Path) -> bool:
    try:
        return "docket-check" in (root / PRE_COMMIT_CONFIG).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


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
    if state:
        return [f"docket: the pre-commit hook already runs docket check --staged ({hooks})"]
    if hooks is None:
        return ["docket: could not find the git hooks directory; pre-commit hook not installed"]
    hook = hooks / "pre-commit"
    chained = hooks / CHAINED_NAME
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
        tmp = hooks / f".pre-commit.docket.{os.getpid()}.tmp"
        tmp.write_text(HOOK_SCRIPT)
        tmp.chmod(tmp.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        os.replace(tmp, hook)
    except OSError as exc:
        return [*out, f"docket: could not install the pre-commit hook in {hooks}: {exc.strerror}"]
    out.append(f"docket: installed a pre-commit hook running 'docket check --staged' ({hook})")
    return out


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
    if not command and name:
        findings.append(
            Finding(
                False,
                "merge.docket.name is set without merge.docket.driver, so git aborts every ledger merge "
                "('custom merge driver docket lacks command line')",
                "run docket init",
            )
        )
    elif not command:
        findings.append(Finding(False, "merge.docket.driver is not set in this clone", "run docket init"))
    elif not _driver_runnable(command):
        findings.append(
            Finding(
                False,
                f"merge.docket.driver runs '{command.split()[0] if command.split() else command}', "
                "which is not on PATH",
                "put docket on PATH, then run docket init",
            )
        )
    else:
        findings.append(Finding(True, f"merge.docket.driver = {command}"))
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
    hooks, state = _hook_state(root)
    if state == "framework":
        findings.append(Finding(True, f"{PRE_COMMIT_CONFIG} runs docket-check"))
    elif state:
        where = hooks / ("pre-commit" if state == "hook" else "pre-commit.legacy")  # type: ignore[operator]
        findings.append(Finding(True, f"pre-commit hook runs docket check --staged ({where})"))
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
        findings.append(
            Finding(
                False,
                "no pre-commit hook checks the staged ledger",
                "run docket init (or add id: docket-check to .pre-commit-config.yaml)",
            )
        )
    return findings
