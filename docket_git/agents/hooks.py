"""Agent hook commands: ``docket hook session-start`` and ``docket hook pre-tool-use``.

Started by agents on every session event and tool call, so this module is
reached from the fast entry path: no Typer, click or rich; pygit2 only when
git history is needed. A hook never fails the agent's session: bad input is
ignored and an internal error prints one ``docket:`` line and exits 0.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

# typing.TYPE_CHECKING without importing typing (a few ms of every hook's start); type
# checkers read the name the same way. The guard (regexes) and the session state
# (the state directory) are imported by the paths that use them, not at start.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from docket_git.context.outline import Outline

AGENTS = ("claude", "codex", "gemini", "copilot", "cursor")
USAGE = "usage: docket hook session-start|pre-tool-use [--for claude|codex|gemini|copilot|cursor]"
MAX_GOVERNING = 8


#: The largest hook payload read (an apply_patch of a big file is the largest real one).
MAX_PAYLOAD = 16 * 1024 * 1024


def _read_payload() -> dict | None:
    """The hook JSON, or None when it is not a JSON object (too big, too deep, not JSON at all)."""
    raw = sys.stdin.buffer.read(MAX_PAYLOAD + 1)
    if len(raw) > MAX_PAYLOAD:
        _note(f"hook payload over {MAX_PAYLOAD} bytes; ignored")
        return None
    try:
        data = json.loads(raw or b"{}")
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _emit(payload: dict) -> None:
    # ASCII-only JSON (\\u escapes) reads the same through any stdout encoding.
    sys.stdout.write(json.dumps(payload, ensure_ascii=True) + "\n")


def _note(text: str) -> None:
    """One ``docket:`` line on stderr, whatever its encoding can show."""
    print(f"docket: {text}".replace("\n", " "), file=sys.stderr)


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
        except (ValueError, RecursionError):
            # Copilot's apply_patch may send the bare patch text as its arguments.
            args = {"input": args} if "*** Begin Patch" in args else None
            if args is None:
                return None
    if args is None and isinstance(payload.get("command"), str):
        tool, args = "Bash", {"command": payload["command"]}  # Cursor's beforeShellExecution
    if not isinstance(tool, str) or not isinstance(args, dict):
        return None
    return tool, args


# -- pre-tool-use ---------------------------------------------------------------

ASK_REASON = (
    "docket: this writes {target} directly. The ledger is append-only and validated on every read, "
    "so an edit made around docket can break every command (and the next session's briefing). "
    "The agent can {how}. Approve only if you mean to edit the file itself."
)
#: Told to the agent (the model): a deny, or Claude's additionalContext beside an ask.
AGENT_REASON = (
    "docket: do not write {target} by hand. The ledger is append-only and validated on every read, "
    "so an edit made around docket can break every command. "
    "{How}; find faults with `docket check`. "
    "If the file itself must change, ask the user to edit it."
)
#: The docket way to write each kind of ledger: the record ledger, or a typed one under ``.docket/ledgers/``.
HOW_TO_RECORD = (
    "record with `docket claim`, `docket decision` or `docket question`, or join another branch's ledger "
    "with `docket rebase OTHER`"
)
HOW_TO_APPEND = "append to a typed ledger with `docket ledger append NAME OPERATION` (it validates and hashes it)"


def stop(agent: str, target: str, event: str = "") -> dict:
    """The agent's way of stopping a ledger write: ask where the agent enforces it, else deny.

    Claude asks the user (who sees the reason) and tells the model the docket way;
    Codex treats "ask" as a failed hook and runs the call, Cursor's preToolUse
    ignores "ask", Gemini knows allow and deny only, and Copilot's cloud agent
    denies on "ask": they all deny, with the reason addressed to the agent.
    """
    how = HOW_TO_APPEND if "/ledgers/" in f"/{target}" else HOW_TO_RECORD
    ask = ASK_REASON.format(target=target, how=how)
    tell = AGENT_REASON.format(target=target, How=how[0].upper() + how[1:])
    if agent == "cursor":
        if event == "beforeShellExecution":
            return {"permission": "ask", "user_message": ask, "agent_message": tell}
        # preToolUse: documented as permission/user_message/agent_message and as decision/reason
        # depending on the Cursor version; both spellings say deny.
        return {"permission": "deny", "decision": "deny", "reason": tell, "user_message": tell, "agent_message": tell}
    if agent == "copilot":
        return {"permissionDecision": "deny", "permissionDecisionReason": tell}
    if agent == "gemini":
        return {"decision": "deny", "reason": tell}
    if agent == "codex":
        # Codex shows the model "Command blocked by PreToolUse hook: REASON. Command: ...": no final stop of ours.
        reason = tell.rstrip(".")
        specific = {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}
        return {"hookSpecificOutput": specific}
    specific = {
        "hookEventName": "PreToolUse",
        "permissionDecision": "ask",
        "permissionDecisionReason": ask,
        "additionalContext": tell,
    }
    return {"hookSpecificOutput": specific}


#: Agents whose pre-tool hook output can carry added context for the model.
CONTEXT_AGENTS = ("claude", "codex")


#: Exact path or directory scopes govern a file; globs and component names do not.
_GOVERNING_WEIGHTS = {"scope_exact": 1, "scope_prefix": 1, "scope_glob": 0}


def governing(outline: Outline, rel_path: str) -> list[str]:
    """Current decisions whose scope covers rel_path (its exact path or a directory above it), newest first."""
    from docket_git.context.scope import matched_scopes

    scopes = outline.scopes
    hits = {
        rid
        for scope in matched_scopes(scopes, [rel_path], _GOVERNING_WEIGHTS)
        for rid in scopes[scope]
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
    from docket_git.ledger import index
    from docket_git.repo import files

    if not index.db_path(ledger).exists():  # a fresh clone's ledger is read in memory: first, a cheap look
        try:
            raw = files.read_bytes(ledger, root, files.LEDGER_CAP)
        except (OSError, store.LedgerError):
            return None
        if rel.split("/", 1)[0].encode() not in raw:
            return None  # no scope mentions the file's first directory or name
        del raw  # a build may follow: its peak memory need not hold the ledger twice
    from docket_git.agents import state as hookstate

    session = session_of(payload)
    state = hookstate.load(session)
    seen = set(state.get("governed", []))
    if rel in seen:
        return None
    from docket_git.context.briefing import outline_of
    from docket_git.ledger.project import view as project_view

    with outline_of(ledger, defer_index=True) as outline:
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
    """Stop a tool call that writes a ledger; add governing decisions to file edits."""
    from docket_git.agents import guard

    call = tool_call(payload)
    if call is None:
        return
    tool, tool_input = call
    cwd = cwd_of(payload)
    target = guard.ledger_write(tool, tool_input, str(cwd))
    if target is not None:
        _emit(stop(agent, target, str(payload.get("hook_event_name") or "")))
        return
    paths = guard.edited_paths(tool, tool_input)
    if not paths or agent not in CONTEXT_AGENTS:
        return  # Gemini's BeforeTool, Copilot's preToolUse and Cursor's have no channel for added context
    notes = [c for c in (_governing_context(payload, path, cwd) for path in paths[:MAX_GOVERNING]) if c]
    if notes:
        specific = {"hookEventName": "PreToolUse", "additionalContext": "\n\n".join(notes)}
        _emit({"hookSpecificOutput": specific})


# -- session-start -------------------------------------------------------------------


#: The most context each agent takes from a hook (Claude Code: 10,000 characters).
CONTEXT_LIMITS = {"claude": 10_000, "codex": 10_000, "gemini": 10_000, "copilot": 10_000, "cursor": 10_000}


#: A second start event for the same session within this many seconds is a repeat, not news.
REPEAT_SECONDS = 10.0


def _repeat_window() -> float:
    try:
        return float(os.environ.get("DOCKET_HOOK_REPEAT_SECONDS", REPEAT_SECONDS))
    except ValueError:
        return REPEAT_SECONDS


def _ledger(cwd: Path) -> Path | None:
    from docket_git.ledger import store

    return store.find_ledger(cwd)


def session_start(payload: dict, agent: str) -> None:
    """Print the briefing (or, on resume, what changed) in the agent's envelope; remember the baseline.

    A repeat within seconds (two agents' settings running the hook for one
    session, or Claude's extra ``startup`` beside a ``resume``) prints nothing.
    A resume whose session left no baseline (a new session ID) takes the
    transcript's, else the last briefing given in this worktree.
    """
    from docket_git.agents import state as hookstate

    source = str(payload.get("source") or payload.get("trigger") or "startup")
    cwd = cwd_of(payload)
    if not cwd.is_dir():
        return
    session = session_of(payload)
    transcript = payload.get("transcript_path") or payload.get("transcriptPath")
    transcript_key = f"transcript:{transcript}" if isinstance(transcript, str) and transcript else ""
    key = session or transcript_key
    window = _repeat_window()
    ledger = _ledger(cwd)
    worktree_key = f"worktree:{(ledger.parent.parent if ledger else cwd).resolve()}"
    state = hookstate.load(session) or hookstate.load(transcript_key)
    if source == "startup":
        repeat = hookstate.recent(f"any:{key}", window) or (
            not state and hookstate.recent(f"resume:{worktree_key}", window)
        )
        if repeat or not hookstate.claim(f"startup:{key}", window):
            return
    elif not hookstate.claim(f"{source}:{key}", window):
        return
    hookstate.claim(f"any:{key}", 0.0001)  # touch: a startup right after this event is a repeat
    if source == "resume":
        hookstate.claim(f"resume:{worktree_key}", 0.0001)
    worktree = hookstate.load(worktree_key)
    # startup, clear and compact leave the agent with no record in context: brief in full.
    since = (state.get("baseline") or worktree.get("baseline")) if source == "resume" else None
    if ledger is not None and not since:
        from docket_git.context import scope

        scope.prefetch(ledger.parent.parent)  # git reads the work at hand while the briefing's modules load
    from docket_git.context import build_briefing, envelope
    from docket_git.repo import gitio

    try:
        briefing = build_briefing(cwd, max_chars=CONTEXT_LIMITS[agent], since=since or None, defer_index=True)
    except Exception as exc:
        if not (_brief_during_conflict(cwd, agent) or _brief_from_head(cwd, agent, exc)):
            raise exc from None
        return
    finally:
        gitio.drop_prefetched()
    for note in briefing.notes:
        _note(note)
    if not briefing.text:
        return
    _emit(envelope.payload(briefing.text, agent))
    if briefing.baseline:
        from docket_git.repo.gitio import head_commit

        state["baseline"] = briefing.baseline
        state["commit"] = head_commit(cwd) or ""
        for name in (session, transcript_key):
            hookstate.save(name, state)
        hookstate.save(worktree_key, {"baseline": briefing.baseline})
    if ledger is not None:
        from docket_git.history import warm

        warm.later(ledger)  # merges' renumberings kept once the agent has its briefing


def _brief_during_conflict(cwd: Path, agent: str) -> bool:
    """While git has a merge, rebase or cherry-pick open: brief from HEAD's ledger and say so."""
    from docket_git.ledger import store
    from docket_git.merging import conflict

    found = conflict.in_progress(cwd)
    if found is None:
        return False
    what, rel, head = found
    try:  # recommend resolve-conflict only when it would succeed (the driver may have refused for a reason)
        conflict.resolve(store.find_repo_root(cwd) or cwd, rel)
        step = f"Run 'docket resolve-conflict', then finish the {what}."
    except conflict.NotResolved as exc:
        step = f"'docket resolve-conflict' cannot merge it: {exc}; or give up with '{conflict.abort_hint(what)}'."
    note = (
        f"# a git {what} is in progress and {rel} cannot be read (conflicted); this briefing is from HEAD's "
        f"ledger. {step}\n"
    )
    _brief_from(cwd, agent, note, head)
    return True


def _brief_from_head(cwd: Path, agent: str, exc: Exception) -> bool:
    """The ledger cannot be read (a bad line): brief from HEAD's, with one line first saying what and the fix.

    The agent is never left unbriefed without knowing why: when HEAD has no
    ledger (or it cannot be read either), the line alone is the briefing.
    """
    import re

    from docket_git.ledger import store
    from docket_git.merging.conflict import committed

    if not isinstance(exc, store.LedgerError):
        return False
    found = committed(cwd)
    if found is None:
        return False
    rel, head = found
    said = " ".join(str(exc).split())
    from docket_git.context.config import ConfigError

    if isinstance(exc, ConfigError):  # the settings, not the ledger: brief this ledger with the defaults
        from docket_git.repo import files

        conf = f"{rel.rsplit('/', 1)[0]}/config.toml"
        fix = f"Fix: correct {conf} (or 'git checkout HEAD -- {conf}')."
        _note(f"{conf} cannot be read ({said[:300]}); the agent is briefed with the default settings. {fix}")
        ledger = store.find_ledger(cwd)
        note = f"# docket: {conf} cannot be read ({said[:300]}); this briefing uses the default settings. {fix}\n"
        try:
            data = files.read_bytes(ledger, ledger.parent.parent, files.LEDGER_CAP)  # type: ignore[union-attr]
            _brief_from(cwd, agent, note, data, settings=False)
        except Exception:  # the ledger cannot be read either: the line alone
            from docket_git.context import envelope

            _emit(envelope.payload(note, agent))
        return True
    line = re.search(r"\bline (\d+)\b", said)
    where = f"line {line.group(1)} of {rel}" if line else rel
    fix = (
        f"Fix: run 'docket check', then repair or delete {where} (or 'git checkout HEAD -- {rel}' "
        "to drop every uncommitted record)."
    )
    _note(f"{rel} cannot be read ({said[:300]}); the agent is briefed from HEAD's ledger. {fix}")
    if head is not None:
        note = (
            f"# docket: {rel} cannot be read ({said[:300]}); this briefing is from HEAD's ledger, without the "
            f"records after it. {fix}\n"
        )
        try:
            _brief_from(cwd, agent, note, head)
            return True
        except Exception:  # HEAD's ledger cannot be read either: the line alone
            pass
    from docket_git.context import envelope

    note = f"# docket: {rel} cannot be read ({said[:300]}) and no committed ledger can; no briefing. {fix}\n"
    _emit(envelope.payload(note, agent))
    return True


def _brief_from(cwd: Path, agent: str, note: str, head: bytes, *, settings: bool = True) -> None:
    """Emit note and then the briefing of head (a ledger's bytes), with this checkout's settings (or the defaults)."""
    import tempfile

    from docket_git.context import build_briefing, envelope
    from docket_git.ledger import store
    from docket_git.repo import files

    config = store.find_ledger(cwd).parent / "config.toml"  # type: ignore[union-attr]
    with tempfile.TemporaryDirectory() as tmp:
        # Under a directory named like the checkout's: the briefing's header names the project by it.
        ledger = Path(tmp) / config.parent.parent.resolve().name / ".docket" / "ledger.jsonl"
        ledger.parent.mkdir(parents=True)
        ledger.write_bytes(head)
        with contextlib.suppress(FileNotFoundError):
            if settings:
                (ledger.parent / "config.toml").write_bytes(files.read_bytes(config, config.parent.parent))
        root = store.find_repo_root(cwd)
        briefing = build_briefing(cwd, ledger=ledger, max_chars=CONTEXT_LIMITS[agent] - len(note), root=root)
    _emit(envelope.payload(note + briefing.text, agent))


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
    _tolerant_streams()
    try:
        payload = _read_payload()
        if payload is None:
            return 0  # not a JSON object: stay out of the agent's way
        if args[0] == "pre-tool-use":
            pre_tool_use(payload, agent)
        else:
            session_start(payload, agent)
    except BaseException as exc:  # a hook must never fail (or lock) the agent's session
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            return 0
        _note(f"hook {args[0]} failed: {type(exc).__name__}: {exc}"[:500])
    return 0


def _tolerant_streams() -> None:
    """Never fail on an encoding: unencodable text is replaced (stdout JSON is ASCII anyway)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError, OSError):
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
