"""The bounded context briefing (``docket context``): config, scope, score, select, render, delta.

Pure functions over records, plus ``build_briefing`` for callers that start
from a directory. Nothing here imports Typer.
"""

from __future__ import annotations

from .briefing import Briefing, build_briefing, compose, compose_delta
from .select import Request

__all__ = ["Briefing", "Request", "build_briefing", "compose", "compose_delta"]
