"""Each agent's documented hook payloads, run through the command its installed settings register.

The fixtures in ``tests/agents/<agent>/`` are built from the fields each agent's hook
reference documents (the first line of each cites the page); ``output-schema.json``
beside them writes down what that agent accepts back. Every case runs the exact
command string from the settings file through ``sh -c``, as the agents do: with
docket on PATH, with a bare PATH (no docket: exit 0, no output, so no agent is locked
out of its tools), and from the user-level file, which names docket by absolute path.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from docket_git.agents.table import AGENTS, GUARD, hook_command

from .conftest import Repo

FIXTURES = Path(__file__).resolve().parent / "agents"
BARE_PATH = "/usr/bin:/bin"
#: The settings event that runs each hook, per agent (Cursor's guard event comes from the payload).
EVENTS = {
    "claude": {"session-start": "SessionStart", "pre-tool-use": "PreToolUse"},
    "codex": {"session-start": "SessionStart", "pre-tool-use": "PreToolUse"},
    "gemini": {"session-start": "SessionStart", "pre-tool-use": "BeforeTool"},
    "copilot": {"session-start": "sessionStart", "pre-tool-use": "preToolUse"},
    "cursor": {"session-start": "sessionStart"},
}
CASES = sorted(
    (agent.name, path.stem) for agent in FIXTURES.iterdir() if agent.is_dir() for path in agent.glob("*--*.json")
)


def fixture_text(agent: str, name: str, cwd: Path) -> str:
    lines = (FIXTURES / agent / f"{name}.json").read_text().splitlines()
    assert lines[0].startswith("// ") and "http" in lines[0], "each fixture cites its doc page on line 1"
    return "\n".join(line for line in lines if not line.startswith("//")).replace("$CWD", str(cwd))


def registered(settings: dict, event: str) -> str:
    """The command docket's entry for event runs, read from a settings file as the agent reads it."""
    for entry in settings["hooks"][event]:
        for hook in entry.get("hooks", [entry]):
            command = hook.get("bash") or hook.get("command") or ""
            if "docket" in command:
                return command
    raise AssertionError(f"no docket hook for {event}")


def run(command: str, payload: str, cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    proc = subprocess.run(["sh", "-c", command], input=payload.encode(), cwd=cwd, env=env, capture_output=True)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def stop_text(agent: str, out: dict, event: str) -> tuple[str, str]:
    """(the decision the agent enforces, the text the agent's model reads) of a stopped call."""
    if agent == "claude":
        specific = out["hookSpecificOutput"]
        return specific["permissionDecision"], specific["additionalContext"]
    if agent == "codex":
        specific = out["hookSpecificOutput"]
        return specific["permissionDecision"], specific["permissionDecisionReason"]
    if agent == "gemini":
        return out["decision"], out["reason"]
    if agent == "copilot":
        return out["permissionDecision"], out["permissionDecisionReason"]
    return out["permission"], out["agent_message"]


#: What each agent's model must see: ask only where the agent enforces it (Claude; Cursor's shell hook).
EXPECTED_STOP = {"claude": "ask", "codex": "deny", "gemini": "deny", "copilot": "deny", "cursor": "deny"}


@pytest.mark.parametrize(("agent", "name"), CASES)
def test_documented_payload_through_the_installed_command(repo: Repo, tmp_path: Path, agent: str, name: str) -> None:
    repo.env["DOCKET_HOOK_REPEAT_SECONDS"] = "0"  # each run below is a separate event
    repo.ok("decision", "Payments retry with idempotency keys", "--choice", "keys", "--scope", "src/pay/")
    repo.ok("claim", "The store is thread-safe", "--scope", "src/pay/store.py")
    repo.ok("install-hooks", "--agents", agent)
    settings = json.loads(AGENTS[agent].path(repo.path, user=False).read_text())
    payload = fixture_text(agent, name, repo.path)
    hook, case = name.split("--")
    kind = json.loads(payload).get("hook_event_name", "")
    event = kind if agent == "cursor" and hook == "pre-tool-use" else EVENTS[agent][hook]
    command = registered(settings, event)
    schemas = json.loads((FIXTURES / agent / "output-schema.json").read_text())
    schema = schemas.get(f"{hook}:{event}") or schemas[hook]

    code, out, err = run(command, payload, repo.path, repo.env)
    assert code == 0, err
    assert out.isascii()
    if case.startswith("read-") or (case.startswith("edit-") and agent not in ("claude", "codex")):
        assert out == "", out  # no channel for added context (Gemini, Copilot, Cursor), or nothing to say
    else:
        data = json.loads(out)
        jsonschema.validate(data, schema)
        if case.startswith("ledger-"):
            decision, told = stop_text(agent, data, event)
            expected = "ask" if event == "beforeShellExecution" else EXPECTED_STOP[agent]
            assert decision == expected
            if ".docket/ledgers/" in payload:  # a typed ledger: the guard names the typed write (issue 31)
                assert "docket ledger append" in told, told
            else:
                assert "docket decision" in told and "docket claim" in told
            assert "Approve" not in told  # nothing for the agent to approve: it is told the docket way
            # Codex 0.171.0 adds ". Command: ..." after the reason (seen in tests/test_real_agents.py).
            assert agent != "codex" or not told.endswith(".")
        elif case.startswith("edit-"):
            assert "Payments retry with idempotency keys" in data["hookSpecificOutput"]["additionalContext"]
        else:
            assert "# docket: " in json.dumps(data)

    # No docket on PATH: allow, say nothing, whatever the agent does with exit codes and stderr.
    assert shutil.which("docket", path=BARE_PATH) is None
    bare = {**repo.env, "PATH": BARE_PATH}
    assert run(command, payload, repo.path, bare) == (0, "", "")

    # The user-level file names docket by its absolute path: no PATH needed at all.
    repo.ok("install-hooks", "--agents", agent, "--user")
    user_command = registered(json.loads(AGENTS[agent].path(repo.path, user=True).read_text()), event)
    assert user_command != command and os.path.isabs(user_command.split()[2])
    fresh = {**bare, "XDG_STATE_HOME": str(tmp_path / "state-user")}  # no memory of the run above
    # docket init wired the merge driver by absolute path as well, so nothing needs PATH: same briefing.
    assert run(user_command, payload, repo.path, fresh) == (0, out, "")


def test_a_docket_that_cannot_start_allows_silently(repo: Repo, tmp_path: Path) -> None:
    payload = fixture_text("copilot", "pre-tool-use--ledger-bash", repo.path)
    missing = hook_command(GUARD, "copilot", str(tmp_path / "gone" / "docket"))
    assert run(missing, payload, repo.path, {**repo.env, "PATH": BARE_PATH}) == (0, "", "")
    broken = tmp_path / "bin"
    broken.mkdir()
    (broken / "docket").write_text("#!/bin/sh\necho 'ImportError: no module named pygit2' >&2\nexit 1\n")
    (broken / "docket").chmod(0o755)
    env = {**repo.env, "PATH": f"{broken}:{BARE_PATH}"}
    code, out, _ = run(hook_command(GUARD, "copilot"), payload, repo.path, env)
    assert (code, out) == (0, "")  # Copilot would deny on exit 1; Gemini on exit 1 with stderr


def test_every_agent_has_fixtures_and_a_schema() -> None:
    for name in AGENTS:
        files = {p.stem for p in (FIXTURES / name).glob("*.json")}
        assert "output-schema" in files and any(f.startswith("session-start--") for f in files), name
        assert any(f.startswith("pre-tool-use--ledger-") for f in files), name
