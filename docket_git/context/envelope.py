"""The JSON each agent harness's session hook expects around the briefing.

Importable without Typer, so a session hook can wrap ``build_briefing``'s
text on its fast path.
"""

from __future__ import annotations

import json

HARNESSES: tuple[str, ...] = ("claude", "codex", "gemini", "copilot", "cursor")


def payload(text: str, harness: str) -> dict:
    """The hook output object for harness carrying text as additional context."""
    if harness in ("claude", "codex", "gemini"):
        return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}
    if harness == "copilot":
        return {"additionalContext": text}
    if harness == "cursor":
        return {"additional_context": text}
    raise ValueError(f"--for must be one of {', '.join(HARNESSES)}; got {harness!r}")


def wrap(text: str, harness: str) -> str:
    """The briefing as one line of hook JSON for harness; "" for an empty briefing."""
    if not text:
        return ""
    return json.dumps(payload(text, harness), ensure_ascii=False) + "\n"
