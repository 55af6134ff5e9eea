"""Agent hook settings: what each agent needs, and merging it into their files.

The entries here are the single source of the files in ``hooks/`` (a test
keeps them equal). Merging never clobbers: other hooks and settings stay,
and an entry that already runs ``docket hook ...`` is not added twice.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from docket_git.ledger.store import LedgerError
from docket_git.repo import files

SESSION = "session-start"
GUARD = "pre-tool-use"

#: How a settings file names docket's hook commands, whatever form wraps them.
_DOCKET_HOOK = re.compile(r"docket['\"]?\s+hook\s+(session-start|pre-tool-use)\b")


def hook_command(hook: str, agent: str, docket: str | None = None) -> str:
    """The shell command an agent's settings run for one of docket's hooks.

    It exits 0 and prints nothing when docket cannot start, because Copilot
    denies a tool on a non-zero exit (127: command not found) and Gemini on one
    with text on stderr: a missing docket must cost the briefing and the guard,
    never the agent's tools. With docket (an absolute path, for files that stay
    on this machine) it needs no PATH; without, it looks docket up on PATH, for
    files committed for a team, whose paths differ per machine.
    """
    args = f"hook {hook}" if agent == "claude" else f"hook {hook} --for {agent}"
    if docket is None:
        return f"command -v docket >/dev/null 2>&1 && docket {args} || true"
    exe = shlex.quote(docket)
    return f"[ -x {exe} ] && {exe} {args} || true"


@dataclass(frozen=True)
class Agent:
    """Where an agent keeps its hook settings and what docket adds there."""

    name: str
    project_file: str
    user_file: str
    build: Callable[[str | None], dict]

    @property
    def settings(self) -> dict:
        """The portable settings (docket looked up on PATH): what ``hooks/`` holds."""
        return self.build(None)

    def path(self, root: Path, *, user: bool) -> Path:
        """The settings file for this project (root) or for the user."""
        return Path(self.user_file).expanduser() if user else root / self.project_file


def _nested(agent: str, event_matchers: list[tuple[str, str | None, str, int]], docket: str | None) -> dict:
    hooks: dict[str, list] = {}
    for event, matcher, hook, timeout in event_matchers:
        command = hook_command(hook, agent, docket)
        entry: dict = {"hooks": [{"type": "command", "command": command, "timeout": timeout}]}
        if matcher is not None:
            entry = {"matcher": matcher, **entry}
        hooks.setdefault(event, []).append(entry)
    return {"hooks": hooks}


def _claude(docket: str | None) -> dict:
    return _nested(
        "claude",
        [
            ("SessionStart", "startup|resume|clear|compact", SESSION, 10),
            ("PreToolUse", "Edit|Write|MultiEdit|NotebookEdit|Bash", GUARD, 5),
        ],
        docket,
    )


def _codex(docket: str | None) -> dict:
    return _nested(
        "codex",
        [
            ("SessionStart", "startup|resume|clear|compact", SESSION, 10),
            ("PreToolUse", "Bash|apply_patch|Edit|Write", GUARD, 5),
        ],
        docket,
    )


def _gemini(docket: str | None) -> dict:
    # Gemini's timeouts are in milliseconds.
    return _nested(
        "gemini",
        [
            ("SessionStart", None, SESSION, 10000),
            ("BeforeTool", "write_file|replace|run_shell_command", GUARD, 5000),
        ],
        docket,
    )


def _copilot(docket: str | None) -> dict:
    def entry(hook: str, timeout: int) -> dict:
        return {"type": "command", "bash": hook_command(hook, "copilot", docket), "timeoutSec": timeout}

    return {"version": 1, "hooks": {"sessionStart": [entry(SESSION, 10)], "preToolUse": [entry(GUARD, 5)]}}


def _cursor(docket: str | None) -> dict:
    return {
        "version": 1,
        "hooks": {
            "sessionStart": [{"command": hook_command(SESSION, "cursor", docket)}],
            "beforeShellExecution": [{"command": hook_command(GUARD, "cursor", docket)}],
            # File tools: Cursor's preToolUse enforces deny (not ask); shell calls are beforeShellExecution's.
            "preToolUse": [
                {"command": hook_command(GUARD, "cursor", docket), "matcher": "Write|StrReplace|Delete|Edit"}
            ],
        },
    }


AGENTS: dict[str, Agent] = {
    "claude": Agent("claude", ".claude/settings.json", "~/.claude/settings.json", _claude),
    "codex": Agent("codex", ".codex/hooks.json", "~/.codex/hooks.json", _codex),
    "gemini": Agent("gemini", ".gemini/settings.json", "~/.gemini/settings.json", _gemini),
    "copilot": Agent("copilot", ".github/hooks/docket.json", "~/.copilot/hooks/docket.json", _copilot),
    "cursor": Agent("cursor", ".cursor/hooks.json", "~/.cursor/hooks.json", _cursor),
}


def parse_agents(value: str) -> list[str]:
    """``claude,codex`` -> names, refusing unknown ones (a usage error)."""
    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in AGENTS]
    if unknown or not names:
        from docket_git.ledger.recording import UsageError

        raise UsageError(
            f"--agents takes a comma list of {', '.join(AGENTS)}; unknown: {', '.join(unknown) or '(none)'}"
        )
    return list(dict.fromkeys(names))


def _commands(entry: object) -> list[str]:
    """Every command string an entry (flat or nested) runs."""
    if not isinstance(entry, dict):
        return []
    found = [entry[k] for k in ("command", "bash") if isinstance(entry.get(k), str)]
    for inner in entry.get("hooks") or []:
        found.extend(_commands(inner))
    return found


def _hooks_run(entry: object) -> set[str]:
    """The docket hooks (session-start, pre-tool-use) an entry runs."""
    return {m.group(1) for c in _commands(entry) for m in [_DOCKET_HOOK.search(c)] if m}


def _only_docket(entry: object) -> bool:
    commands = _commands(entry)
    return bool(commands) and all(_DOCKET_HOOK.search(c) for c in commands)


def merge_settings(existing: dict, wanted: dict) -> tuple[dict, list[str]]:
    """existing settings plus docket's hook entries; and the events it added or updated.

    An older docket entry (another command form or matcher) is replaced in place,
    so re-running the installer upgrades it; an entry that mixes docket with the
    user's own commands is left alone.
    """
    merged = json.loads(json.dumps(existing))
    for key, value in wanted.items():
        if key != "hooks":
            merged.setdefault(key, value)
    hooks = merged.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise LedgerError("the settings file's 'hooks' is not an object; fix it by hand first")
    changed: list[str] = []
    for event, entries in wanted["hooks"].items():
        current = hooks.setdefault(event, [])
        if not isinstance(current, list):
            raise LedgerError(f"the settings file's hooks.{event} is not a list; fix it by hand first")
        for entry in entries:
            names = _hooks_run(entry)
            mine = [i for i, e in enumerate(current) if _hooks_run(e) & names]
            if not mine:
                current.append(entry)
                changed.append(event)
            elif current[mine[0]] != entry and _only_docket(current[mine[0]]):
                current[mine[0]] = entry
                changed.append(f"{event} (updated)")
    return merged, changed


def install(agent: str, root: Path, *, user: bool = False, docket: str | None = None) -> tuple[Path, list[str]]:
    """Merge docket's hooks into one agent's settings file; return it and the events added or updated.

    docket, an absolute path to the docket command, is written into user-level
    files only: project files are committed and must work on every machine.
    """
    spec = AGENTS[agent]
    path = spec.path(root, user=user)
    inside = None if user else root  # a project file is committed: untrusted, never through a link
    existing: dict = {}
    try:
        text = _read_settings(path, inside)
    except OSError as exc:
        raise LedgerError(f"cannot read {path}: {exc.strerror}") from None
    if text is not None:
        try:
            existing = json.loads(text or "{}")
        except (ValueError, RecursionError) as exc:
            raise LedgerError(f"{path} is not valid JSON ({exc}); fix or move it, then re-run") from None
        if not isinstance(existing, dict):
            raise LedgerError(f"{path} does not hold a JSON object; fix or move it, then re-run")
    merged, added = merge_settings(existing, spec.build(docket if user else None))
    if added:
        try:
            files.make_dirs(path.parent, inside)
            files.write_replace(path, (json.dumps(merged, indent=2, ensure_ascii=False) + "\n").encode(), inside)
        except OSError as exc:
            raise LedgerError(f"cannot write {path}: {exc.strerror}") from None
    return path, added


def _read_settings(path: Path, root: Path | None) -> str | None:
    """A settings file's text (None when missing): a project file (root given) only as a regular file, capped.

    A user-level file (root None) is the user's own and may be a link (dotfile managers make them).
    """
    try:
        return files.read_text(path, root, follow=root is None)  # a user file may be a link; both regular, capped
    except FileNotFoundError:
        return None


#: What a user must know about an agent once docket's hooks are in its settings.
NOTES = {
    "codex": (
        "codex runs project hooks only in a trusted project and skips a hooks file it has not reviewed: "
        "open Codex's /hooks view and approve {path} (again after every change to it); "
        "`codex exec` skips unreviewed hooks without a word"
    ),
    "gemini": (
        "gemini reads a project's hooks only in a trusted folder (trust it when gemini asks; for headless runs "
        "set GEMINI_CLI_TRUST_WORKSPACE=true: --skip-trust runs without the hooks); older gemini versions run hooks only when enabled: set tools.enableHooks to true "
        "in {path}; gemini fires no SessionStart after compressing a conversation (run `docket context` then)"
    ),
    "copilot": (
        "copilot runs a repository's hooks only in a trusted folder (`copilot -p` needs --trust-folder); "
        "its cloud agent runs {path} only with docket installed in its environment: add "
        "`pip install docket-git` to .github/workflows/copilot-setup-steps.yml (docs/hooks.md)"
    ),
}


def notes(root: Path) -> list[str]:
    """``doctor`` notes about wired agents: reviews they need, and hook entries an older docket wrote."""
    out: list[str] = []
    for name, where in wired(root).items():
        if where is None:
            continue
        user = not Path(where).resolve().is_relative_to(root.resolve())
        try:
            data = json.loads(_read_settings(Path(where), None if user else root) or "")
        except (OSError, ValueError, RecursionError, LedgerError):
            continue
        hooks = data.get("hooks", {}) if isinstance(data, dict) else {}
        current = {c for entries in hooks.values() if isinstance(entries, list) for e in entries for c in _commands(e)}
        wanted = {c for entries in AGENTS[name].settings["hooks"].values() for e in entries for c in _commands(e)}
        if not user and not wanted <= current:
            flag = " --user" if user else ""
            out.append(
                f"{name}'s hooks in {where} are from an older docket; update: docket install-hooks --agents {name}{flag}"
            )
        if name in NOTES:
            out.append(NOTES[name].format(path=where))
    return out


def wired(root: Path) -> dict[str, str | None]:
    """For each agent, the settings file (project, then user) that runs docket's hooks, or None."""
    out: dict[str, str | None] = {}
    for name, spec in AGENTS.items():
        out[name] = None
        for user in (False, True):
            path = spec.path(root, user=user)
            try:
                data = json.loads(_read_settings(path, None if user else root) or "")
            except (OSError, ValueError, RecursionError, LedgerError):
                continue
            hooks = data.get("hooks") if isinstance(data, dict) else None
            if isinstance(hooks, dict) and any(
                SESSION in _hooks_run(e) for entries in hooks.values() if isinstance(entries, list) for e in entries
            ):
                out[name] = str(path)
                break
    return out


#: What ``doctor`` sends each registered command: a pre-tool-use write to the ledger, which every
#: agent's guard answers (so a command that prints nothing did not start docket), and a session start.
_PROBE_TIMEOUT = 10.0


def _probe_payload(root: Path, hook: str) -> bytes:
    if hook == GUARD:
        payload = {
            "session_id": "docket-doctor-probe",
            "cwd": str(root),
            "hook_event_name": "PreToolUse",
            "tool_name": "Write",
            "tool_input": {"file_path": str(root / ".docket" / "ledger.jsonl"), "content": ""},
        }
    else:
        payload = {"session_id": "docket-doctor-probe", "cwd": str(root), "source": "startup"}
    return json.dumps(payload).encode()


def _registered(data: object) -> dict[str, list[str]]:
    """Each docket hook (session-start, pre-tool-use) and the distinct commands a settings object runs for it."""
    hooks = data.get("hooks") if isinstance(data, dict) else None
    found: dict[str, list[str]] = {}
    for entries in hooks.values() if isinstance(hooks, dict) else ():
        for entry in entries if isinstance(entries, list) else ():
            for command in _commands(entry):
                match = _DOCKET_HOOK.search(command)
                if match and command not in found.setdefault(match.group(1), []):
                    found[match.group(1)].append(command)
    return found


def _ours(command: str, hook: str, agent: str, *, user: bool) -> bool:
    """Whether command is exactly a form docket writes, so doctor may run it.

    A project file is committed, so untrusted: only the PATH form runs (it starts
    ``docket`` and nothing else). A user file may name docket by absolute path.
    """
    if command == hook_command(hook, agent):
        return True
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return user and len(words) > 2 and command == hook_command(hook, agent, words[2])


def run_hook(command: str, root: Path, hook: str, env: dict[str, str]) -> tuple[int | None, str, str]:
    """Run one registered hook command as an agent does: ``sh -c``, the repository as cwd, a JSON payload on stdin."""
    import subprocess

    try:
        proc = subprocess.run(
            ["/bin/sh", "-c", command],
            input=_probe_payload(root, hook),
            cwd=root,
            env=env,
            capture_output=True,
            timeout=_PROBE_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return None, "", f"no answer in {_PROBE_TIMEOUT:g} s"
    except OSError as exc:
        return None, "", str(exc)
    return proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")


def probe(root: Path, where: dict[str, str | None] | None = None) -> list[tuple[bool, str, str]]:
    """(ok, what it saw, fix) for every wired agent: its registered hook commands, run the way it runs them.

    With this process's PATH (the one an agent started from this shell has),
    in the repository, through ``/bin/sh -c``. Hook state goes to a scratch
    directory, so a probe never counts as a session's briefing.
    """
    import os
    import shutil
    import tempfile

    found: list[tuple[bool, str, str]] = []
    path_var = os.environ.get("PATH", "")
    ledger = root / ".docket" / "ledger.jsonl"
    has_records = ledger.is_file() and ledger.stat().st_size > 0
    for name, settings in (where if where is not None else wired(root)).items():
        if settings is None:
            continue
        user = not Path(settings).resolve().is_relative_to(root.resolve())
        try:
            commands = _registered(json.loads(_read_settings(Path(settings), None if user else root) or ""))
        except (OSError, ValueError, RecursionError, LedgerError):
            continue
        fix = (
            f"put docket on the PATH {name} starts with (pipx install, or activate the virtualenv before "
            f"starting {name}), or register this docket by absolute path: docket init --agents {name} --user"
        )
        started = True  # whether every guard command answered: else an empty session start proves nothing
        with tempfile.TemporaryDirectory() as state:
            env = {**os.environ, "XDG_STATE_HOME": state, "DOCKET_HOOK_REPEAT_SECONDS": "0"}
            for hook in (GUARD, SESSION):
                for command in commands.get(hook, []):
                    if not _ours(command, hook, name, user=user):
                        continue  # never run a command a clone committed; notes() asks to update it
                    code, out, err = run_hook(command, root, hook, env)
                    how = f"{name}'s {hook} hook in {settings}, run as {name} runs it (sh -c, PATH={path_var})"
                    said = " ".join(err.split())[:200]
                    try:
                        answer = json.loads(out) if out.strip() else None
                    except ValueError:
                        answer = None
                    if code is None or (out.strip() and not isinstance(answer, dict)):
                        started = started and hook != GUARD
                        found.append((False, f"{how}: {said or 'output that is not a JSON object'}", fix))
                    elif hook == SESSION and not answer and not started:
                        continue  # the guard's problem above says why
                    elif hook == GUARD and not answer:
                        started = False
                        missing = shutil.which("docket", path=path_var) is None and "command -v docket" in command
                        why = "docket is not on that PATH" if missing else said or "it printed nothing"
                        found.append((False, f"{how} did not stop a write to the ledger: {why}", fix))
                    elif hook == SESSION and ("failed" in said or (has_records and not answer)):
                        found.append((False, f"{how} gave no briefing: {said or 'it printed nothing'}", fix))
                    elif hook == GUARD:
                        found.append((True, f"{name}'s {hook} hook answers ({settings})", ""))
                    else:
                        size = len(json.dumps(answer)) if answer else 0
                        what = f"briefs ({size} characters of hook JSON)" if answer else "runs (the ledger is empty)"
                        note = f"; it said: {said}" if said else ""
                        found.append((True, f"{name}'s {hook} hook {what} ({settings}){note}", ""))
    return found
