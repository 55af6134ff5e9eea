"""The bounded context briefing (``docket context``): config, scope, score, select, render, delta.

Pure functions over records, plus ``build_briefing`` for callers that start
from a directory. Nothing here imports Typer.

May import ``history``, ``merging``, ``ledger``, ``repo`` and ``errors``; the
command that prints it lives in ``cli.context``.
"""

from __future__ import annotations

__all__ = ["Briefing", "Request", "build_briefing", "compose", "compose_delta"]


def __getattr__(name: str) -> object:
    """The briefing's entry points, imported on first use (PEP 562).

    Importing one of this package's modules (``context.where`` for ``list
    --where``, ``context.outline``) must not import the whole briefing.
    """
    if name == "Request":
        from docket_git.context.select import Request

        return Request
    if name in __all__:
        from docket_git.context import briefing

        return getattr(briefing, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
