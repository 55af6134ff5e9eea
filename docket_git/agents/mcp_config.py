"""Registering ``docket mcp`` in each agent's project-level MCP configuration (docs/mcp.md).

One server entry named ``docket`` per agent file, merged with the servers
already there and written through ``repo/files.py`` (never through a link).
The entry starts this docket's interpreter when it exists on this machine
(the merge driver's rule: no PATH needed) and ``docket`` from PATH otherwise,
so a committed file also works for a teammate whose docket lives elsewhere;
when neither starts, the agent reports the server failed and works on.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import tomllib
from pathlib import Path

from docket_git.ledger.store import LedgerError
from docket_git.merging import wiring
from docket_git.repo import files

SERVER = "docket"
#: agent -> (project file, its format, the keys the agent wants beside command and args).
FILES: dict[str, tuple[str, str, dict]] = {
    "claude": (".mcp.json", "json", {"type": "stdio"}),
    # Codex gives a server 10 s to start by default; loading the MCP SDK can take longer on a busy machine.
    "codex": (".codex/config.toml", "toml", {"startup_timeout_sec": 30}),
    "gemini": (".gemini/settings.json", "json", {}),
    "copilot": (".github/mcp.json", "json", {"type": "local", "tools": ["*"]}),
    "cursor": (".cursor/mcp.json", "json", {}),
}
_INTERPRETER = re.compile(r"^\[ -x (.+?) \] && exec ")


def launch(docket: str | None = None) -> tuple[str, list[str]]:
    """The command and arguments an agent starts: this docket's interpreter if present, else docket on PATH."""
    docket = docket or wiring.docket_command()
    interpreter = shlex.quote(shlex.split(docket)[0])
    return "sh", ["-c", f"[ -x {interpreter} ] && exec {docket} mcp; exec docket mcp"]


def wanted(agent: str, docket: str | None = None) -> dict:
    """The entry docket writes for an agent."""
    command, args = launch(docket)
    return {**FILES[agent][2], "command": command, "args": args}


def _ours(entry: object) -> bool:
    return (
        isinstance(entry, dict) and entry.get("command") == "sh" and "docket mcp" in " ".join(entry.get("args") or [])
    )


def runnable(entry: object) -> bool:
    """An entry of ours that starts a docket here: its interpreter exists, or docket is on PATH."""
    if not _ours(entry):
        return False
    script = (entry.get("args") or ["", ""])[-1]  # type: ignore[union-attr]
    match = _INTERPRETER.match(script)
    if match is not None:
        words = shlex.split(match.group(1))
        if words and os.access(words[0], os.X_OK):
            return True
    import shutil

    return shutil.which("docket") is not None


def _read(path: Path, root: Path) -> str | None:
    try:
        return files.read_text(path, root)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LedgerError(f"cannot read {path}: {exc.strerror}") from None


def _servers(agent: str, text: str | None, path: Path) -> dict:
    """The file's MCP servers table (empty for a missing file); ``LedgerError`` for one docket cannot read."""
    if not text:
        return {}
    if FILES[agent][1] == "toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise LedgerError(f"{path} is not valid TOML ({exc}); fix or move it, then re-run") from None
        servers = data.get("mcp_servers", {})
    else:
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise LedgerError(f"{path} is not valid JSON ({exc}); fix or move it, then re-run") from None
        if not isinstance(data, dict):
            raise LedgerError(f"{path} does not hold a JSON object; fix or move it, then re-run")
        servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        key = "mcp_servers" if FILES[agent][1] == "toml" else "mcpServers"
        raise LedgerError(f"{path}: {key} is not a table of servers; fix or move it, then re-run")
    return servers


def _toml_block(entry: dict) -> str:
    # JSON strings and arrays of strings are valid TOML basic strings and arrays.
    lines = [f"[mcp_servers.{SERVER}]"] + [f"{k} = {json.dumps(v)}" for k, v in entry.items()]
    return "\n".join(lines) + "\n"


def _toml_text(text: str, entry: dict, path: Path) -> str:
    """text with docket's ``[mcp_servers.docket]`` table added or replaced, the rest byte for byte."""
    block = _toml_block(entry)
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.strip() == f"[mcp_servers.{SERVER}]"), None)
    if start is None:
        new = text + ("\n" if text and not text.endswith("\n") else "") + ("\n" if text.strip() else "") + block
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
        tail = "".join(lines[end:])
        new = "".join(lines[:start]) + block + ("\n" + tail if tail else "")
    try:
        if tomllib.loads(new).get("mcp_servers", {}).get(SERVER) == entry:
            return new
    except tomllib.TOMLDecodeError:
        pass
    raise LedgerError(f"cannot add [mcp_servers.{SERVER}] to {path} safely; add it by hand (docs/mcp.md)")


def install(agent: str, root: Path, docket: str | None = None) -> tuple[Path, str]:
    """Register ``docket mcp`` in the agent's project MCP file; (the file, what happened)."""
    path = root / FILES[agent][0]
    text = _read(path, root)
    servers = _servers(agent, text, path)
    entry = wanted(agent, docket)
    current = servers.get(SERVER)
    if current == entry or (_ours(current) and runnable(current)):
        return path, "already starts docket mcp"
    if current is not None and not _ours(current):
        return path, f"has a server named '{SERVER}' of its own; left it alone"
    if FILES[agent][1] == "toml":
        data = _toml_text(text or "", entry, path).encode()
    else:
        whole = json.loads(text) if text else {}
        whole.setdefault("mcpServers", {})[SERVER] = entry
        data = (json.dumps(whole, indent=2, ensure_ascii=False) + "\n").encode()
    try:
        files.make_dirs(path.parent, root)
        files.write_replace(path, data, root)
    except OSError as exc:
        raise LedgerError(f"cannot write {path}: {exc.strerror}") from None
    return path, "updated its docket mcp entry" if current is not None else "registered docket mcp"


def status(root: Path) -> dict[str, tuple[str, str] | None]:
    """For each agent: (its project MCP file, "ok", "stale" or "foreign") for a server named docket, or None."""
    out: dict[str, tuple[str, str] | None] = {}
    for agent, (rel, _, _) in FILES.items():
        path = root / rel
        try:
            current = _servers(agent, _read(path, root), path).get(SERVER)
        except (LedgerError, OSError):
            current = None
        if current is None:
            out[agent] = None
        elif not _ours(current):
            out[agent] = (rel, "foreign")
        else:
            out[agent] = (rel, "ok" if runnable(current) else "stale")
    return out
