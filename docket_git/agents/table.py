"""Agent hook settings: what each agent needs, and merging it into their files.

The entries here are the single source of the files in ``hooks/`` (a test
keeps them equal). Merging never clobbers: other hooks and settings stay,
and an entry that already runs ``docket hook ...`` is not added twice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from docket_git.ledger.store import LedgerError, write_atomic

SESSION = "docket hook session-start"
GUARD = "docket hook pre-tool-use"


@dataclass(frozen=True)
class Agent:
    """Where an agent keeps its hook settings and what docket adds there."""

    name: str
    project_file: str
    user_file: str
    settings: dict

    def path(self, root: Path, *, user: bool) -> Path:
        """The settings file for this project (root) or for the user."""
        return Path(self.user_file).expanduser() if user else root / self.project_file


def _nested(event_matchers: list[tuple[str, str | None, str, int]]) -> dict:
    hooks: dict[str, list] = {}
    for event, matcher, command, timeout in event_matchers:
        entry: dict = {"hooks": [{"type": "command", "command": command, "timeout": timeout}]}
        if matcher is not None:
            entry = {"matcher": matcher, **entry}
        hooks.setdefault(event, []).append(entry)
    return {"hooks": hooks}


AGENTS: dict[str, Agent] = {
    "claude": Agent(
        "claude",
        ".claude/settings.json",
        "~/.claude/settings.json",
        _nested(
            [
                ("SessionStart", "startup|resume|clear|compact", SESSION, 10),
                ("PreToolUse", "Edit|Write|MultiEdit|Bash", GUARD, 5),
            ]
        ),
    ),
    "codex": Agent(
        "codex",
        ".codex/hooks.json",
        "~/.codex/hooks.json",
        _nested(
            [
                ("SessionStart", "startup|resume|clear|compact", f"{SESSION} --for codex", 10),
                ("PreToolUse", "Bash|apply_patch|Edit|Write", f"{GUARD} --for codex", 5),
            ]
        ),
    ),
    "gemini": Agent(
        "gemini",
        ".gemini/settings.json",
        "~/.gemini/settings.json",
        _nested(
            [
                ("SessionStart", None, f"{SESSION} --for gemini", 10000),
                ("BeforeTool", "write_file|replace|run_shell_command", f"{GUARD} --for gemini", 5000),
            ]
        ),
    ),
    "copilot": Agent(
        "copilot",
        ".github/hooks/docket.json",
        "~/.copilot/hooks/docket.json",
        {
            "version": 1,
            "hooks": {
                "sessionStart": [{"type": "command", "bash": f"{SESSION} --for copilot", "timeoutSec": 10}],
                "preToolUse": [{"type": "command", "bash": f"{GUARD} --for copilot", "timeoutSec": 5}],
            },
        },
    ),
    "cursor": Agent(
        "cursor",
        ".cursor/hooks.json",
        "~/.cursor/hooks.json",
        {
            "version": 1,
            "hooks": {
                "sessionStart": [{"command": f"{SESSION} --for cursor"}],
                "beforeShellExecution": [{"command": f"{GUARD} --for cursor"}],
            },
        },
    ),
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


def _is_docket(entry: object, command: str) -> bool:
    return any(c.startswith(command.split(" --for")[0]) for c in _commands(entry))


def merge_settings(existing: dict, wanted: dict) -> tuple[dict, list[str]]:
    """existing settings plus docket's hook entries; and the events it added."""
    merged = json.loads(json.dumps(existing))
    for key, value in wanted.items():
        if key != "hooks":
            merged.setdefault(key, value)
    hooks = merged.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise LedgerError("the settings file's 'hooks' is not an object; fix it by hand first")
    added: list[str] = []
    for event, entries in wanted["hooks"].items():
        current = hooks.setdefault(event, [])
        if not isinstance(current, list):
            raise LedgerError(f"the settings file's hooks.{event} is not a list; fix it by hand first")
        for entry in entries:
            command = _commands(entry)[0]
            if not any(_is_docket(e, command) for e in current):
                current.append(entry)
                added.append(event)
    return merged, added


def install(agent: str, root: Path, *, user: bool = False) -> tuple[Path, list[str]]:
    """Merge docket's hooks into one agent's settings file; return it and the events added."""
    spec = AGENTS[agent]
    path = spec.path(root, user=user)
    existing: dict = {}
    if path.exists():
        try:
            existing = json.loads(path.read_text() or "{}")
        except (OSError, ValueError) as exc:
            raise LedgerError(f"{path} is not valid JSON ({exc}); fix or move it, then re-run") from None
        if not isinstance(existing, dict):
            raise LedgerError(f"{path} does not hold a JSON object; fix or move it, then re-run")
    merged, added = merge_settings(existing, spec.settings)
    if added:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, (json.dumps(merged, indent=2, ensure_ascii=False) + "\n").encode())
    return path, added


def wired(root: Path) -> dict[str, str | None]:
    """For each agent, the settings file (project, then user) that runs docket's hooks, or None."""
    out: dict[str, str | None] = {}
    for name, spec in AGENTS.items():
        out[name] = None
        for user in (False, True):
            path = spec.path(root, user=user)
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            hooks = data.get("hooks") if isinstance(data, dict) else None
            if isinstance(hooks, dict) and any(
                _is_docket(e, SESSION) for entries in hooks.values() if isinstance(entries, list) for e in entries
            ):
                out[name] = str(path)
                break
    return out
