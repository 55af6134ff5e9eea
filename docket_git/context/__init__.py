"""The bounded context briefing (``docket context``): config, scope, score, select, render, delta.

Pure functions over records, plus ``build_briefing`` for callers that start
from a directory. Nothing here imports Typer.

May import ``history``, ``merging``, ``ledger``, ``repo`` and ``errors``; the
command that prints it lives in ``cli.context``.
"""

from __future__ import annotations

from docket_git.context.briefing import Briefing, build_briefing, compose, compose_delta
from docket_git.context.select import Request

__all__ = ["Briefing", "Request", "build_briefing", "compose", "compose_delta"]
