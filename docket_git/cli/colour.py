"""Colour for people at a terminal; plain text for pipes, files, agents, ``TERM=dumb`` and ``NO_COLOR``."""

from __future__ import annotations

import os
from typing import TextIO

#: SGR codes by effective state: available support green/blue, open work yellow, refused red.
STATE_SGR = {
    "accepted": "32",
    "adopted": "34",
    "resolved": "36",
    "open": "33",
    "disputed": "33",
    "rejected": "31",
    "revoked": "2",
}
#: Set by agent harnesses: their output is read by a model, for which escape codes are noise.
AGENT_VARIABLES = ("AI_AGENT", "CLAUDECODE", "CODEX_SANDBOX", "GEMINI_CLI")


def enabled(stream: TextIO) -> bool:
    """True when text written to stream may carry colour (https://no-color.org: any NO_COLOR value disables it)."""
    env = os.environ
    if env.get("NO_COLOR") or env.get("TERM") == "dumb" or any(env.get(name) for name in AGENT_VARIABLES):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def state(text: str, name: str, on: bool) -> str:
    """text (a state word, maybe padded) in the colour of state name when on."""
    code = STATE_SGR.get(name)
    return f"\x1b[{code}m{text}\x1b[0m" if on and code else text
