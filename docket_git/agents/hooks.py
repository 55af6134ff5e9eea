"""Agent hook commands: ``docket hook session-start`` and ``docket hook pre-tool-use``.

Started by agents on every session event and tool call, so this module is
reached from the fast entry path: no Typer, click or rich; pygit2 only when
git history is needed. A hook never fails the agent's session: bad input is
ignored and an internal error prints one ``docket:`` line and exits 0.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from docket_git.agents import guard
from docket_git.agents import state as hookstate

if TYPE_CHECKING:
    from docket_git.context.outline import Outline

AGENTS = ("claude", "codex", "gemini", "copilot", "cursor")
USAGE = "usage: docket hook session-start|pre-tool-use [--for claude|codex|gemini|copilot|cursor]"
MAX_GOVERNING = 8


def _read_payload() -> dict | None:
    try:
        data = json.loads(sys.stdin.buffer.read() or b"{}")
    except (ValueError, OSError):
        return None
    return data if isinstance(data, dict) else None


def _emit(payload: dict) -> None:
    sys.stdout.write(json.dumps(payload, ensure_ascii=False) + "\n")


# Agents name the same facts differently: Claude, Codex and Gemini (and Copilot's
# PascalCase events) send snake_case; Copilot's camelCase events send sessionId,
# toolName and toolArgs (a JSON string); Cursor sends conversation_id and
# workspace_roots, and a bare command for beforeShellExecution.


def session_of(payload: dict) -> str:
    """The agent's session ID, whichever field carries it ("" when none does)."""
    for key in ("session_id", "sessionId", "conversation_id"):
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def cwd_of(payload: dict) -> Path:
    """The directory the agent works in: cwd, else the first workspace root, else ours."""
    cwd = payload.get("cwd")
    if not (isinstance(cwd, str) and cwd):
        roots = payload.get("workspace_roots")
        cwd = roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) else ""
    return Path(cwd or os.getcwd())


def tool_call(payload: dict) -> tuple[str, dict] | None:
    """(tool name, tool arguments) of a pre-tool-use payload, or None when it names no tool call."""
    tool = payload.get("tool_name", payload.get("toolName"))
    args = payload.get("tool_input", payload.get("toolArgs"))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return None
    if args is None and isinstance(payload.get("command"), str):
        tool, args = "Bash", {"command": payload["command"]}  # Cursor's beforeShellExecution
    if not isinstance(tool, str) or not isinstance(args, dict):
        return None
    return tool, args


# -- pre-tool-use ---------------------------------------------------------------


def _ask(agent: str, reason: str) -> dict:
    """The agent's way of saying: ask the user before this tool call runs."""
    if agent == "cursor":
        out = {"permission": "ask", "user_message": reason, "agent_message": reason}
    elif agent == "copilot":
        out = {"permissionDecision": "ask", "permissionDecisionReason": reason}
    elif agent == "gemini":
        # Gemini's BeforeTool knows allow and deny only: deny, and the reason tells the agent the way.
        out = {"decision": "deny", "reason": reason}
    else:
        out = {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "ask",
                "permissionDecisionReason": reason,
            }
        }
    return out


def _add_context(out: dict, agent: str, text: str, event: str) -> None:
    if agent == "cursor":
        out["additional_context"] = text
    elif agent == "copilot":
        out["additionalContext"] = text
    else:
        specific = out.setdefault("hookSpecificOutput", {"hookEventName": event})
        specific["additionalContext"] = text


#: Exact path or directory scopes govern a file; globs and component names do not.
_GOVERNING_WEIGHTS = {"scope_exact": 1, "scope_prefix": 1, "scope_glob": 0}


def scope_covers(scope: str, path: str) -> bool:
    """True when a record scope governs a repository-relative file: exact path or directory."""
    from docket_git.context.scope import normalize, strength

    return strength([normalize(path)], normalize(scope), _GOVERNING_WEIGHTS) > 0


def governing(outline: Outline, rel_path: str) -> list[str]:
    """Current decisions whose scope covers rel_path, newest first."""
    hits = {
        rid
        for scope, holders in outline.scopes.items()
        if scope_covers(scope, rel_path)
        for rid in holders
        if rid[0] == "d"  # an ID's prefix is its kind: no record needs decoding to know it
    }
    return sorted(hits, key=outline.pos.__getitem__, reverse=True)


def _governing_context(payload: dict, path: str, cwd: Path) -> str | None:
    from docket_git.ledger import store

    ledger = store.find_ledger(cwd)
    if ledger is None:
        return None
    root = ledger.parent.parent
    try:
        rel = (cwd / path).resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return None
    try:
        raw = ledger.read_bytes()
    except OSError:
        return None
    # Cheap prefilter: no scope mentions the file's first directory or name.
    first = rel.split("/", 1)[0]
    if first.encode() not in raw:
        return None
    session = session_of(payload)
    state = hookstate.load(session)
    seen = set(state.get("governed", []))
    if rel in seen:
        return None
    from docket_git.context.briefing import read_outline
    from docket_git.ledger.project import view as project_view

    outline = read_outline(ledger)[0]
    hits = governing(outline, rel)
    if not hits:
        return None
    lines = [f"Recorded decisions govern {rel}; read one with `docket show ID`:"]
    for rid in hits[:MAX_GOVERNING]:
        view = project_view(outline.records[rid], outline.derived)
        text = view["text"] if len(view["text"]) <= 90 else view["text"][:89] + "…"
        lines.append(f"{view['id']} {view['kind']} {view['state']}: {text}")
    if len(hits) > MAX_GOVERNING:
        lines.append(f"+{len(hits) - MAX_GOVERNING} more")
    state["governed"] = sorted(seen | {rel})
    hookstate.save(session, state)
    return "\n".join(lines)


def pre_tool_use(payload: dict, agent: str) -> None:
    """Ask before a tool call writes a ledger; add governing decisions to file edits."""
    call = tool_call(payload)
    if call is None:
        return
    tool, tool_input = call
    cwd = cwd_of(payload)
    reason = guard.ask_reason(tool, tool_input, str(cwd))
    if reason is not None:
        _emit(_ask(agent, reason))
        return
    path = guard.edited_path(tool, tool_input)
    if path is None:
        return
    if agent == "gemini":
        return  # Gemini's BeforeTool has no channel for added context
    context = _governing_context(payload, path, cwd)
    if context:
        out: dict = {}
        _add_context(out, agent, context, "PreToolUse")
        _emit(out)


# -- session-start -------------------------------------------------------------------


#: The most context each agent takes from a hook (Claude Code: 10,000 characters).
CONTEXT_LIMITS = {"claude": 10_000, "codex": 10_000, "gemini": 10_000, "copilot": 10_000, "cursor": 10_000}


def session_start(payload: dict, agent: str) -> None:
    """Print the briefing (or, on resume, what changed) in the agent's envelope; remember the baseline."""
    from docket_git.context import build_briefing
    from docket_git.context.envelope import wrap

    source = str(payload.get("source") or payload.get("trigger") or "startup")
    cwd = cwd_of(payload)
    if not cwd.is_dir():
        return
    session = session_of(payload)
    state = hookstate.load(session)
    # startup, clear and compact leave the agent with no record in context: brief in full.
    since = state.get("baseline") if source == "resume" else None
    try:
        briefing = build_briefing(cwd, max_chars=CONTEXT_LIMITS[agent], since=since or None)
    except Exception as exc:
        if not _brief_during_conflict(cwd, agent):
            raise exc from None
        return
    for note in briefing.notes:
        print(f"docket: {note}", file=sys.stderr)
    if not briefing.text:
        return
    sys.stdout.write(wrap(briefing.text, agent))
    if briefing.baseline:
        from docket_git.repo.gitio import head_commit

        state["baseline"] = briefing.baseline
        state["commit"] = head_commit(cwd) or ""
        hookstate.save(session, state)


def _brief_during_conflict(cwd: Path, agent: str) -> bool:
    """While git has a merge, rebase or cherry-pick open: brief from HEAD's ledger and say so."""
    import shutil
    import tempfile

    from docket_git.context import build_briefing
    from docket_git.context.envelope import wrap
    from docket_git.ledger import store
    from docket_git.merging.conflict import in_progress

    found = in_progress(cwd)
    if found is None:
        return False
    what, rel, head = found
    note = (
        f"# a git {what} is in progress and {rel} cannot be read (conflicted); this briefing is from HEAD's "
        f"ledger. Run 'docket resolve-conflict', then finish the {what}.\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        ledger = Path(tmp) / ".docket" / "ledger.jsonl"
        ledger.parent.mkdir()
        ledger.write_bytes(head)
        settings = store.find_ledger(cwd).parent / "config.toml"  # type: ignore[union-attr]
        if settings.is_file():
            shutil.copyfile(settings, ledger.parent / "config.toml")
        briefing = build_briefing(cwd, ledger=ledger, max_chars=CONTEXT_LIMITS[agent] - len(note))
    sys.stdout.write(wrap(note + briefing.text, agent))
    return True


# -- dispatch -----------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    """Run ``docket hook NAME [--for AGENT]``; always exit 0 once the arguments parse."""
    args = list(argv)
    agent = "claude"
    if "--for" in args:
        i = args.index("--for")
        if i + 1 >= len(args) or args[i + 1] not in AGENTS:
            print(f"docket: {USAGE}", file=sys.stderr)
            return 2
        agent = args[i + 1]
        del args[i : i + 2]
    if len(args) != 1 or args[0] not in ("session-start", "pre-tool-use"):
        if args[:1] in (["-h"], ["--help"]):
            print(USAGE)
            return 0
        print(f"docket: {USAGE}", file=sys.stderr)
        return 2
    payload = _read_payload()
    if payload is None:
        return 0  # not JSON: stay out of the agent's way
    try:
        if args[0] == "pre-tool-use":
            pre_tool_use(payload, agent)
        else:
            session_start(payload, agent)
    except Exception as exc:
        print(f"docket: hook {args[0]} failed: {exc}", file=sys.stderr)
    return 0
