"""``docket mcp [--repo PATH]``: the ledger as Model Context Protocol tools, over stdio.

The MCP SDK (``mcp`` on PyPI) is imported here only, inside ``serve``: no hook
or other command pays for it. The tools themselves live in ``cli/mcp_tools.py``.
One process serves one repository for an agent's session: the modules stay
loaded and the index stays in the cache directory, and every call proves the
index current by stat and digest as any command does, so a record another
process (another agent, a ``git pull``) wrote is seen on the next call.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from docket_git.cli.spec import Command, Opt
from docket_git.errors import LedgerError, warn

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

COMMAND = Command(
    "mcp",
    "Serve the ledger as MCP tools over stdio, for agents (docs/mcp.md).",
    "Set up",
    (),
    (Opt("--repo", "repo", "The repository to serve (default: the current directory's).", "PATH", default=None),),
)


def _root(repo: str | None) -> Path:
    from docket_git.ledger import store

    start = Path(repo).expanduser() if repo else Path.cwd()
    if not start.is_dir():
        raise LedgerError(f"--repo {repo}: not a directory; give the repository's path")
    root = store.find_repo_root(start.resolve())
    if root is None:
        raise LedgerError(f"{start} is not inside a git repository; start docket mcp in one or pass --repo PATH")
    return root


def _bare_packages() -> None:
    """Let ``mcp.server.lowlevel`` and ``mcp.server.stdio`` load without the packages' ``__init__``.

    ``mcp/__init__.py`` imports the SDK's client and ``mcp/server/__init__.py`` its high-level
    server (``MCPServer``), neither of which a stdio server built on the low-level ``Server`` uses:
    about a fifth of the SDK's import time. Each package is registered as a bare namespace over its
    real directory, so its submodules import as usual. Only ``docket mcp`` does this, in its own
    process, before anything else imports ``mcp``; where the layout is not the expected one the
    packages load normally.
    """
    import importlib.util

    if "mcp" in sys.modules:
        return
    spec = importlib.util.find_spec("mcp")
    if spec is None or not spec.submodule_search_locations:
        return
    top = list(spec.submodule_search_locations)
    server = [os.path.join(p, "server") for p in top]
    if not all(os.path.isfile(os.path.join(p, "lowlevel", "server.py")) for p in server):
        return
    for name, path in (("mcp", top), ("mcp.server", server)):
        bare = importlib.util.spec_from_loader(name, None, is_package=True)
        assert bare is not None
        bare.submodule_search_locations = path
        module = importlib.util.module_from_spec(bare)
        module.__path__ = path
        sys.modules[name] = module


def serve(root: Path) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin."""
    import gc

    _bare_packages()
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel.server import Server
    from mcp.server.stdio import stdio_server

    from docket_git import __version__
    from docket_git.cli import mcp_tools

    gc.enable()  # entry.py turns the collector off for short commands; a server lives for a session
    os.chdir(root)  # the commands the tools call resolve the repository from the working directory
    tools = [
        types.Tool(name=t["name"], description=t["description"], input_schema=t["inputSchema"])
        for t in mcp_tools.tool_list()
    ]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        result = mcp_tools.call(root, params.name, params.arguments)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.text)],
            structured_content=result.structured,
            is_error=result.error,
        )

    server = Server(
        "docket",
        version=__version__,
        instructions=mcp_tools.instructions(root),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)


def run(values: dict[str, Any]) -> None:
    """``docket mcp``: find the repository, then serve it."""
    root = _root(values["repo"])
    import importlib.util

    # The SDK, present or not, before the agent's handshake waits on us (found, not loaded: serve loads it).
    if importlib.util.find_spec("mcp") is None or importlib.util.find_spec("mcp_types") is None:
        raise LedgerError("docket mcp needs the MCP SDK: pip install 'mcp>=2.3' into docket's environment")
    if sys.stdin.isatty():
        warn(f"serving {root} over MCP on stdin/stdout; agents start this themselves (docs/mcp.md); Ctrl-D ends it")
    serve(root)


def fast_main(args: list[str]) -> int | None:
    """Run ``docket mcp`` without Typer; None when Typer should handle the arguments."""
    return COMMAND.run_light(args, run)


def register(app: Any) -> None:
    """Add ``docket mcp`` to the Typer app."""
    COMMAND.register(app, run)
