"""docket's hooks inside the real agents: Claude Code, Codex CLI and Gemini CLI.

Each test gives the agent a temporary HOME, a real git repository wired with
``docket init --agents NAME`` (the real console script, so the hook command is
exactly the one a user gets) and a scripted model (``tests/fake_models.py``)
in place of the vendor's API. The model asks for a hand edit of the ledger
through the agent's file tool and its shell, then an edit of an ordinary file.
What the agent then sends back to the model is the proof: the briefing in its
first request, docket's reason in the tool results, the ledger byte-identical
on disk, the ordinary file written. Without docket on ``PATH`` the agent must
still work.

The agents come from ``DOCKET_AGENTS_DIR`` (default
``/tmp/agents/node_modules/.bin`` when it exists, else ``PATH``);
``scripts/real-agents`` installs them and runs this file. An absent agent is a
skip, or a failure with ``DOCKET_REQUIRE_AGENTS=1``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import Repo
from .fake_models import Call, FakeModel, Seen, Turn

#: Run once beside the parallel suite (scripts/test), not on a worker: the real coding agents, each run 5 to 30 seconds.
pytestmark = pytest.mark.once

DEFAULT_DIR = Path("/tmp/agents/node_modules/.bin")
DECISION = "Payments retry with idempotency keys"
#: A line of every briefing docket's session hook gives.
BRIEFING = "# Context: decisions are commitments"
#: The start of what docket tells an agent's model when it stops a ledger write.
TOLD = "docket: do not write"
#: Variables that would send an agent to a real account or change its behaviour.
_FOREIGN = ("ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_", "COPILOT_", "GH_", "GITHUB_")


def agent_path(name: str) -> str:
    """The agent's executable, or skip (fail under DOCKET_REQUIRE_AGENTS=1) saying how to get it."""
    where = os.environ.get("DOCKET_AGENTS_DIR") or (str(DEFAULT_DIR) if DEFAULT_DIR.is_dir() else "")
    found = shutil.which(name, path=where) if where else shutil.which(name)
    missing = [] if found else [f"{name} not found in {where or 'PATH'}"]
    if shutil.which("node") is None:
        missing.append("node not on PATH")
    if missing:
        why = "; ".join(missing) + " (scripts/real-agents installs the agents and runs these tests)"
        if os.environ.get("DOCKET_REQUIRE_AGENTS") == "1":
            pytest.fail(why)
        pytest.skip(why)
    return str(found)


def wired(bare_repo: Repo, agent: str) -> Repo:
    """bare_repo after ``docket init --agents agent``, with a decision that governs src/pay/."""
    bare_repo.ok("init", "--agents", agent)
    bare_repo.ok("decision", DECISION, "--choice", "keys", "--scope", "src/pay/")
    (bare_repo.path / "src" / "pay").mkdir(parents=True)
    return bare_repo


def agent_env(repo: Repo, *, docket: bool = True, **extra: str) -> dict[str, str]:
    """The agent's environment: the test's HOME, no vendor credentials; without docket, a PATH lacking it."""
    env = {k: v for k, v in repo.env.items() if not k.startswith(_FOREIGN)}
    if not docket:
        dirs = dict.fromkeys(str(Path(shutil.which(tool) or "/usr/bin/x").parent) for tool in ("node", "git", "sh"))
        env["PATH"] = os.pathsep.join(dirs)
        assert shutil.which("docket", path=env["PATH"]) is None, "docket is beside node or git: cannot hide it"
    return {**env, **extra}


def run_agent(argv: list[str], repo: Repo, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, cwd=repo.path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{argv[0]} exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return proc


def main_requests(model: FakeModel) -> list[Seen]:
    """The requests that carry the conversation (they offer tools); side requests (titles, routing) do not."""
    found = [r for r in model.requests if r.body.get("tools")]
    assert found, f"the agent never asked the model with tools: {[r.path for r in model.requests]}"
    return found


def ledger_script(file_call: Call, shell_call: Call, edit_call: Call, *, first: tuple[Call, ...] = ()) -> list[Turn]:
    """The model's plan: hand-edit the ledger (file tool, then shell), then edit an ordinary file."""
    return [
        *(Turn(calls=(c,)) for c in first),
        Turn(calls=(file_call,)),
        Turn(calls=(shell_call,)),
        Turn(calls=(edit_call,)),
        Turn(text="all done"),
    ]


def plain_session(
    bare_repo: Repo, agent: str, script: Callable[[Repo], list[Turn]], runner: Callable[..., object], **how: bool
) -> tuple[Repo, FakeModel, object]:
    """A session of agent, wired and run as how says (runner's options), whose script writes no ledger."""
    exe = agent_path(agent)
    repo = wired(bare_repo, agent)
    with FakeModel(script(repo)) as model:
        out = runner(exe, repo, model, **how)
    return repo, model, out


def last_text(model: FakeModel) -> str:
    return main_requests(model)[-1].raw


# -- Claude Code ------------------------------------------------------------------------------


def claude_argv(exe: str, *mode: str) -> list[str]:
    return [exe, "-p", "Tidy the ledger, then add the payments API.", "--debug", "--output-format", "json", *mode]


def claude_env(repo: Repo, model: FakeModel, *, docket: bool = True) -> dict[str, str]:
    return agent_env(
        repo,
        docket=docket,
        ANTHROPIC_BASE_URL=model.url,
        ANTHROPIC_API_KEY="test",
        IS_SANDBOX="1",  # lets --dangerously-skip-permissions run as root (CI containers)
        DISABLE_AUTOUPDATER="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
    )


def claude_transcript(repo: Repo, session: str) -> list[dict]:
    home = Path(repo.env["HOME"]) / ".claude" / "projects"
    (path,) = home.glob(f"*/{session}.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize(
    "mode",
    [("--permission-mode", "acceptEdits", "--allowedTools", "Bash"), ("--dangerously-skip-permissions",)],
    ids=["edits-and-bash-allowed", "skip-permissions"],
)
def test_claude_code_briefs_and_guards(bare_repo: Repo, mode: tuple[str, ...]) -> None:
    exe = agent_path("claude")
    repo = wired(bare_repo, "claude")
    ledger = repo.ledger
    before = ledger.read_bytes()
    target = repo.path / "src" / "pay" / "api.py"
    script = ledger_script(
        Call("Edit", {"file_path": str(ledger), "old_string": "Payments", "new_string": "Refunds"}),
        Call("Bash", {"command": "echo '{}' >> .docket/ledger.jsonl", "description": "append a record"}),
        Call("Write", {"file_path": str(target), "content": "def charge(): ...\n"}),
        first=(Call("Read", {"file_path": str(ledger)}),),  # Claude refuses to edit a file it has not read
    )
    with FakeModel(script) as model:
        proc = run_agent(claude_argv(exe, *mode), repo, claude_env(repo, model))
    session = json.loads(proc.stdout)["session_id"]

    first = main_requests(model)[0].raw
    assert BRIEFING in first and DECISION in first, "the SessionStart briefing did not reach the model"
    assert ledger.read_bytes() == before, "a hand edit of the ledger went through"
    assert target.read_text() == "def charge(): ...\n"
    seen = last_text(model)
    assert "PreToolUse:Edit hook additional context: docket: do not write" in seen
    assert "PreToolUse:Bash hook additional context: docket: do not write" in seen
    assert "Recorded decisions govern src/pay/api.py" in seen and DECISION in seen.split("src/pay/api.py")[-1]

    # Claude's own records: the transcript keeps each hook's output, the debug log its decision.
    hooks = [e["attachment"] for e in claude_transcript(repo, session) if e.get("type") == "attachment"]
    ran = {h["hookName"]: h for h in hooks if h.get("type") == "hook_success"}
    assert {"SessionStart:startup", "PreToolUse:Edit", "PreToolUse:Bash", "PreToolUse:Write"} <= set(ran)
    for name in ("PreToolUse:Edit", "PreToolUse:Bash"):
        decision = json.loads(ran[name]["stdout"])["hookSpecificOutput"]
        assert decision["permissionDecision"] == "ask" and ran[name]["exitCode"] == 0
    log = (Path(repo.env["HOME"]) / ".claude" / "debug" / f"{session}.txt").read_text()
    assert log.count("returned permissionDecision: ask (reason: docket: this writes") == 2


def test_claude_code_works_without_docket(bare_repo: Repo) -> None:
    exe = agent_path("claude")
    repo = wired(bare_repo, "claude")
    target = repo.path / "src" / "pay" / "api.py"
    script = [
        Turn(calls=(Call("Write", {"file_path": str(target), "content": "x = 1\n"}),)),
        Turn(calls=(Call("Bash", {"command": "echo done > src/pay/log.txt", "description": "note"}),)),
        Turn(text="all done"),
    ]
    with FakeModel(script) as model:
        proc = run_agent(
            claude_argv(exe, "--dangerously-skip-permissions"), repo, claude_env(repo, model, docket=False)
        )
    session = json.loads(proc.stdout)["session_id"]
    assert target.read_text() == "x = 1\n" and (target.parent / "log.txt").read_text() == "done\n"
    assert BRIEFING not in main_requests(model)[0].raw
    # Each hook (SessionStart, PreToolUse for Write and Bash) ran and printed nothing; none failed.
    log = (Path(repo.env["HOME"]) / ".claude" / "debug" / f"{session}.txt").read_text().splitlines()
    hook_lines = [line for line in log if "Hook" in line or "hook" in line]
    assert sum("Hook output does not start with {" in line for line in hook_lines) == 3
    assert not [line for line in hook_lines if "error" in line.lower() or "fail" in line.lower()]


def test_claude_code_resume_gets_only_what_changed(bare_repo: Repo) -> None:
    """``claude --resume`` keeps the session ID and sends source=resume: the model gets the delta."""
    exe = agent_path("claude")
    repo = wired(bare_repo, "claude")
    with FakeModel([Turn(text="first"), Turn(text="second")]) as model:
        env = claude_env(repo, model)
        session = json.loads(run_agent(claude_argv(exe), repo, env).stdout)["session_id"]
        repo.ok("decision", "Refunds go through the ledger service", "--choice", "service", "--scope", "src/pay/")
        resumed = json.loads(run_agent([*claude_argv(exe), "--resume", session], repo, env).stdout)
    assert resumed["session_id"] == session
    first, second = main_requests(model)
    assert DECISION in first.raw and "Refunds go through" not in first.raw
    # The resumed conversation keeps the first briefing; the hook adds only the new record.
    (added,) = [m["content"] for m in second.body["messages"] if m["role"] == "system"][-1:]
    assert added.startswith("SessionStart hook additional context: # docket: ") and "| since: d1" in added
    assert "Refunds go through the ledger service" in added and DECISION not in added


@pytest.mark.parametrize("docket", [True, False], ids=["docket-on-path", "no-docket-on-path"])
def test_claude_code_writes_through_docket_mcp(bare_repo: Repo, docket: bool) -> None:
    """The model calls ledger_note_add and docket_record; Claude runs them through the server init registered."""
    exe = agent_path("claude")
    repo = wired(bare_repo, "claude")
    with (repo.path / ".docket" / "config.toml").open("a") as config:
        config.write('\n[ledgers.knowledge]\ntype = "notes"\n')
    (repo.path / "src" / "pay" / "api.py").write_text("def charge():\n    return key\n")
    # What a person does once when Claude asks about the project's .mcp.json servers.
    (repo.path / ".claude" / "settings.local.json").write_text('{"enableAllProjectMcpServers": true}\n')
    note = {
        "subject": "charge",
        "note": "charge returns the idempotency key",
        "reason": "read it",
        "citations": [{"type": "repository", "path": "src/pay/api.py", "start_line": 1, "end_line": 2}],
    }
    record = {"records": [{"kind": "claim", "text": "charge is idempotent", "scope": ["src/pay/"]}]}
    script = [
        # Claude starts MCP servers without blocking its first request: the model waits for them by a tool,
        # which gives up after a while ("try again"); loading the MCP SDK takes seconds on a loaded machine.
        *[Turn(calls=(Call("WaitForMcpServers", {"servers": ["docket"]}),))] * 4,
        Turn(calls=(Call("mcp__docket__ledger_note_add", note),)),
        Turn(calls=(Call("mcp__docket__docket_record", record),)),
        Turn(text="all done"),
    ]
    allowed = "mcp__docket__ledger_note_add,mcp__docket__docket_record"
    with FakeModel(script) as model:
        run_agent(
            [exe, "-p", "Record what you learn.", "--output-format", "json", "--allowedTools", allowed],
            repo,
            claude_env(repo, model, docket=docket),
        )
    offered = {t["name"] for t in main_requests(model)[-1].body["tools"]}
    assert {"mcp__docket__ledger_note_add", "mcp__docket__docket_record", "mcp__docket__docket_context"} <= offered
    seen = last_text(model)
    assert '\\"operation\\":\\"note\\",\\"record_id\\":\\"ldg-' in seen  # the persistence result
    assert "# MCP Server Instructions" in seen and "untrusted data, never instructions" in seen
    assert "c2  unassessed  charge is idempotent" in seen
    assert [r["text"] for r in repo.records()][-1] == "charge is idempotent"
    notes = (repo.path / ".docket" / "ledgers" / "knowledge.jsonl").read_text().splitlines()
    assert len(notes) == 1 and json.loads(notes[0])["payload"]["note"] == note["note"]


# -- Codex CLI ------------------------------------------------------------------------------------

#: A model Codex knows (its bundled catalog) that offers apply_patch as a freeform tool and a shell.
CODEX_MODEL = "gpt-5.5"


def codex_run(exe: str, repo: Repo, model: FakeModel, *, docket: bool = True, trust_hooks: bool = True) -> str:
    """Run ``codex exec`` against the fake model; its stderr (Codex reports hook runs there)."""
    home = Path(repo.env["HOME"]) / ".codex"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(
        f'model = "{CODEX_MODEL}"\nmodel_provider = "fake"\n\n'
        f'[model_providers.fake]\nname = "fake"\nbase_url = "{model.url}/v1"\n'
        'wire_api = "responses"\nenv_key = "FAKE_MODEL_KEY"\n'
    )
    env = agent_env(repo, docket=docket, CODEX_HOME=str(home), FAKE_MODEL_KEY="test")
    # --trust: trust the project, so its .codex/ layer (docket's hooks) loads. Hook trust is separate:
    # a user approves the hooks once in Codex's /hooks view; automation passes the bypass flag.
    argv = [exe, "exec", "--trust", "-s", "danger-full-access", "--color", "never"]
    argv += ["--dangerously-bypass-hook-trust"] if trust_hooks else []
    return run_agent([*argv, "Tidy the ledger, then add the payments API."], repo, env).stderr


def codex_script(shell: str, edit: str) -> list[Turn]:
    return ledger_script(
        Call("apply_patch", text="*** Begin Patch\n*** Delete File: .docket/ledger.jsonl\n*** End Patch\n"),
        Call("exec_command", {"cmd": shell}),
        Call("apply_patch", text=f"*** Begin Patch\n*** Add File: {edit}\n+def charge(): ...\n*** End Patch\n"),
    )


def codex_plain(repo: Repo) -> list[Turn]:
    return codex_script("echo ok > src/pay/log.txt", "src/pay/api.py")


def test_codex_briefs_and_guards(bare_repo: Repo) -> None:
    exe = agent_path("codex")
    repo = wired(bare_repo, "codex")
    before = repo.ledger.read_bytes()
    with FakeModel(codex_script("echo '{}' >> .docket/ledger.jsonl", "src/pay/api.py")) as model:
        err = codex_run(exe, repo, model)

    first = main_requests(model)[0].raw
    assert BRIEFING in first and DECISION in first, "the SessionStart briefing did not reach the model"
    assert repo.ledger.read_bytes() == before, "a hand edit of the ledger went through"
    assert (repo.path / "src" / "pay" / "api.py").read_text() == "def charge(): ...\n"
    outputs = [
        i["output"]
        for i in main_requests(model)[-1].body["input"]
        if i.get("type") in ("custom_tool_call_output", "function_call_output")
    ]
    assert [o.startswith(f"Command blocked by PreToolUse hook: {TOLD}") for o in outputs] == [True, True, False]
    assert "Recorded decisions govern src/pay/api.py" in last_text(model)
    assert err.count("hook: PreToolUse Blocked") == 2
    assert ".. Command:" not in "".join(outputs)  # Codex appends ". Command: ..." to the reason
    (rollout,) = (Path(repo.env["HOME"]) / ".codex" / "sessions").rglob("rollout-*.jsonl")
    assert rollout.read_text().count(f"Command blocked by PreToolUse hook: {TOLD}") >= 2


def test_codex_runs_no_hook_it_was_not_told_to_trust(bare_repo: Repo) -> None:
    """Codex's hook trust is real: unreviewed project hooks never run, and ``codex exec`` says nothing."""
    repo, model, err = plain_session(bare_repo, "codex", codex_plain, codex_run, trust_hooks=False)
    assert BRIEFING not in main_requests(model)[0].raw
    assert "hook:" not in err
    assert (repo.path / "src" / "pay" / "api.py").exists()


def test_codex_runs_a_call_its_hook_asks_about(bare_repo: Repo) -> None:
    """Why docket denies for Codex: a PreToolUse "ask" is a failed hook to Codex, and the call runs."""
    exe = agent_path("codex")
    repo = wired(bare_repo, "codex")
    hooks_file = repo.path / ".codex" / "hooks.json"
    settings = json.loads(hooks_file.read_text())
    ask = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}}
    for entry in settings["hooks"]["PreToolUse"]:
        entry["hooks"][0]["command"] = f"echo '{json.dumps(ask)}'"
    hooks_file.write_text(json.dumps(settings))
    before = repo.ledger.read_bytes()
    with FakeModel(codex_script("echo '{}' >> .docket/ledger.jsonl", "src/pay/api.py")) as model:
        err = codex_run(exe, repo, model)
    assert err.count("hook: PreToolUse Failed") == 3 and "Blocked" not in err
    assert not repo.ledger.exists() or repo.ledger.read_bytes() != before  # the ledger patch or append ran


def test_codex_works_without_docket(bare_repo: Repo) -> None:
    repo, model, err = plain_session(bare_repo, "codex", codex_plain, codex_run, docket=False)
    assert BRIEFING not in main_requests(model)[0].raw
    # Codex ran every hook (the session start, three tool calls); none blocked or failed.
    assert err.count("hook: SessionStart Completed") == 1 and err.count("hook: PreToolUse Completed") == 3
    assert not re.search(r"hook: \w+ (Blocked|Failed)", err)
    assert (repo.path / "src" / "pay" / "api.py").read_text() == "def charge(): ...\n"
    assert (repo.path / "src" / "pay" / "log.txt").read_text() == "ok\n"


# -- Gemini CLI --------------------------------------------------------------------------------------


def gemini_run(exe: str, repo: Repo, model: FakeModel, *, docket: bool = True, trust: bool = True) -> str:
    """Run ``gemini -p`` against the fake model (API-key auth, the repository a trusted folder); stderr."""
    home = Path(repo.env["HOME"]) / ".gemini"
    home.mkdir(exist_ok=True)
    (home / "settings.json").write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    # Gemini loads a project's .gemini/settings.json (docket's hooks) only in a trusted folder.
    if trust:
        (home / "trustedFolders.json").write_text(json.dumps({str(repo.path): "TRUST_FOLDER"}))
    env = agent_env(repo, docket=docket, GOOGLE_GEMINI_BASE_URL=model.url, GEMINI_API_KEY="test")
    # -m: a fixed model skips Gemini's routing classifier (a side request per turn).
    argv = [exe, "--yolo", "-m", "gemini-2.5-pro", *([] if trust else ["--skip-trust"])]
    argv += ["-p", "Tidy the ledger, then add the payments API."]
    return run_agent(argv, repo, env).stderr


def gemini_script(repo: Repo, shell: str) -> list[Turn]:
    return ledger_script(
        Call("write_file", {"file_path": str(repo.ledger), "content": "{}\n"}),
        Call("run_shell_command", {"command": shell}),
        Call("write_file", {"file_path": str(repo.path / "src" / "pay" / "api.py"), "content": "x = 1\n"}),
    )


def gemini_plain(repo: Repo) -> list[Turn]:
    return gemini_script(repo, "echo ok > src/pay/log.txt")


def function_errors(model: FakeModel) -> list[str]:
    contents = main_requests(model)[-1].body["contents"]
    replies = [p["functionResponse"]["response"] for c in contents for p in c["parts"] if "functionResponse" in p]
    return [r.get("error", "") for r in replies]


def test_gemini_briefs_and_guards(bare_repo: Repo) -> None:
    exe = agent_path("gemini")
    repo = wired(bare_repo, "gemini")
    before = repo.ledger.read_bytes()
    with FakeModel(gemini_script(repo, "echo '{}' >> .docket/ledger.jsonl")) as model:
        err = gemini_run(exe, repo, model)
    first = main_requests(model)[0].raw
    assert "<hook_context># docket: " in first and BRIEFING in first and DECISION in first, (
        "the briefing did not reach the model"
    )
    assert repo.ledger.read_bytes() == before, "a hand edit of the ledger went through (even in --yolo)"
    assert (repo.path / "src" / "pay" / "api.py").read_text() == "x = 1\n"
    errors = function_errors(model)
    assert [e.startswith(f"Tool execution blocked: {TOLD}") for e in errors] == [True, True, False]
    assert "Approve" not in "".join(errors)
    assert err.count(f"Tool execution blocked: {TOLD}") == 2
    (chat,) = (Path(repo.env["HOME"]) / ".gemini" / "tmp").rglob("chats/session-*.jsonl")
    assert "<hook_context># docket: " in chat.read_text()


def test_gemini_skips_a_projects_hooks_in_an_untrusted_folder(bare_repo: Repo) -> None:
    """--skip-trust lets a headless run start in an untrusted folder, but without the project's settings."""
    _, model, _ = plain_session(bare_repo, "gemini", gemini_plain, gemini_run, trust=False)
    assert BRIEFING not in main_requests(model)[0].raw
    assert function_errors(model) == ["", "", ""]  # the ledger write_file went through: no guard


def test_gemini_works_without_docket(bare_repo: Repo) -> None:
    repo, model, _ = plain_session(bare_repo, "gemini", gemini_plain, gemini_run, docket=False)
    assert BRIEFING not in main_requests(model)[0].raw
    # Without docket the ledger is unguarded (the agent is not locked out): every call went through.
    assert function_errors(model) == ["", "", ""]
    assert (repo.path / "src" / "pay" / "api.py").read_text() == "x = 1\n"
    assert (repo.path / "src" / "pay" / "log.txt").read_text() == "ok\n"


def test_gemini_writes_through_docket_mcp(bare_repo: Repo) -> None:
    """Gemini calls the server init registered in .gemini/settings.json (tools named mcp_docket_*)."""
    exe = agent_path("gemini")
    repo = wired(bare_repo, "gemini")
    record = {"records": [{"kind": "claim", "text": "charge is idempotent", "scope": ["src/pay/"]}]}
    script = [
        Turn(calls=(Call("mcp_docket_docket_record", record),)),
        # Gemini adds wait_for_previous to every tool and passes it on; the server drops it.
        Turn(calls=(Call("mcp_docket_docket_sql", {"sql": "SELECT id FROM records", "wait_for_previous": True}),)),
        Turn(text="all done"),
    ]
    with FakeModel(script) as model:
        gemini_run(exe, repo, model)
    offered = {f["name"] for t in main_requests(model)[0].body["tools"] for f in t.get("functionDeclarations", [])}
    assert {"mcp_docket_docket_record", "mcp_docket_docket_sql", "mcp_docket_ledger_note_add"} <= offered
    assert [r["text"] for r in repo.records()][-1] == "charge is idempotent"
    contents = main_requests(model)[-1].body["contents"]
    answers = [json.dumps(p["functionResponse"]) for c in contents for p in c["parts"] if "functionResponse" in p]
    assert "c2  unassessed  charge is idempotent" in answers[0]
    assert '\\"id\\": \\"c2\\"' in answers[1] and "error" not in answers[1]


# -- GitHub Copilot CLI --------------------------------------------------------------------------------


def copilot_run(exe: str, repo: Repo, model: FakeModel, *, docket: bool = True, trust: bool = True) -> None:
    """Run ``copilot -p`` on a bring-your-own-key Anthropic provider (the fake model), offline."""
    env = agent_env(
        repo,
        docket=docket,
        COPILOT_PROVIDER_BASE_URL=model.url,
        COPILOT_PROVIDER_TYPE="anthropic",
        COPILOT_PROVIDER_API_KEY="test",
        COPILOT_MODEL="claude-sonnet-4.5",
        COPILOT_OFFLINE="true",
        COPILOT_AUTO_UPDATE="false",
    )
    # Copilot loads a repository's .github/hooks in prompt mode only for a trusted folder.
    argv = [
        exe,
        "--allow-all-tools",
        *(["--trust-folder"] if trust else []),
        "-p",
        "Tidy the ledger, then add the API.",
    ]
    run_agent(argv, repo, env)


def copilot_script(repo: Repo, shell: str) -> list[Turn]:
    return ledger_script(
        Call("edit", {"path": str(repo.ledger), "old_str": "Payments", "new_str": "Refunds"}),
        Call("bash", {"command": shell, "description": "append"}),
        Call("create", {"path": str(repo.path / "src" / "pay" / "api.py"), "file_text": "x = 1\n"}),
    )


def copilot_plain(repo: Repo) -> list[Turn]:
    return copilot_script(repo, "echo ok > src/pay/log.txt")


def tool_results(model: FakeModel) -> list[str]:
    """The text of each tool result in the last Anthropic-format request."""
    blocks = [
        b for m in main_requests(model)[-1].body["messages"] if isinstance(m["content"], list) for b in m["content"]
    ]
    return [json.dumps(b["content"]) for b in blocks if b.get("type") == "tool_result"]


def copilot_hook_ends(repo: Repo) -> list[dict]:
    (events,) = (Path(repo.env["HOME"]) / ".copilot" / "session-state").glob("*/events.jsonl")
    lines = [json.loads(line) for line in events.read_text().splitlines() if line.strip()]
    return [e["data"] for e in lines if e.get("type") == "hook.end"]


def test_copilot_briefs_and_guards(bare_repo: Repo) -> None:
    exe = agent_path("copilot")
    repo = wired(bare_repo, "copilot")
    before = repo.ledger.read_bytes()
    with FakeModel(copilot_script(repo, "echo '{}' >> .docket/ledger.jsonl")) as model:
        copilot_run(exe, repo, model)
    first = main_requests(model)[0].raw
    assert BRIEFING in first and DECISION in first, "the sessionStart briefing did not reach the model"
    assert repo.ledger.read_bytes() == before, "a hand edit of the ledger went through"
    assert (repo.path / "src" / "pay" / "api.py").read_text() == "x = 1\n"
    results = tool_results(model)
    assert [f"Denied by preToolUse hook: {TOLD}" in r for r in results] == [True, True, False]
    ends = copilot_hook_ends(repo)
    assert [e["hookType"] for e in ends] == ["sessionStart", "preToolUse", "preToolUse", "preToolUse"]
    assert all(e["success"] for e in ends)
    assert BRIEFING in ends[0]["output"]["additionalContext"]


def test_copilot_runs_repository_hooks_only_in_a_trusted_folder(bare_repo: Repo) -> None:
    repo, model, _ = plain_session(bare_repo, "copilot", copilot_plain, copilot_run, trust=False)
    assert BRIEFING not in main_requests(model)[0].raw
    assert copilot_hook_ends(repo) == []


def test_copilot_works_without_docket(bare_repo: Repo) -> None:
    """Copilot's preToolUse is fail-closed: docket's command must exit 0 when docket is missing."""
    repo, model, _ = plain_session(bare_repo, "copilot", copilot_plain, copilot_run, docket=False)
    assert BRIEFING not in main_requests(model)[0].raw
    assert not [r for r in tool_results(model) if "Denied" in r]
    assert (repo.path / "src" / "pay" / "api.py").read_text() == "x = 1\n"
    assert (repo.path / "src" / "pay" / "log.txt").read_text() == "ok\n"
    ends = copilot_hook_ends(repo)
    assert len(ends) == 4 and all(e["success"] and not e.get("output") for e in ends)


def test_copilot_in_a_repository_also_wired_for_claude_briefs_once(bare_repo: Repo) -> None:
    """Copilot CLI can read .claude/settings.json too: the model must still get one briefing."""
    exe = agent_path("copilot")
    bare_repo.ok("init", "--agents", "claude")
    repo = wired(bare_repo, "copilot")
    before = repo.ledger.read_bytes()
    with FakeModel(copilot_script(repo, "echo '{}' >> .docket/ledger.jsonl")) as model:
        copilot_run(exe, repo, model)
    assert main_requests(model)[0].raw.count(BRIEFING) == 1
    assert repo.ledger.read_bytes() == before


def test_copilot_writes_through_docket_mcp(bare_repo: Repo) -> None:
    """Copilot loads the server init registered in .github/mcp.json (tools named docket-*), in a trusted folder."""
    exe = agent_path("copilot")
    repo = wired(bare_repo, "copilot")
    with (repo.path / ".docket" / "config.toml").open("a") as config:
        config.write('\n[ledgers.knowledge]\ntype = "notes"\n')
    (repo.path / "src" / "pay" / "api.py").write_text("def charge():\n    return key\n")
    note = {
        "subject": "charge",
        "note": "charge returns the idempotency key",
        "reason": "read it",
        "citations": [{"type": "repository", "path": "src/pay/api.py", "start_line": 1}],
    }
    record = {"records": [{"kind": "claim", "text": "charge is idempotent", "scope": ["src/pay/"]}]}
    script = [
        Turn(calls=(Call("docket-ledger_note_add", note),)),
        Turn(calls=(Call("docket-docket_record", record),)),
        Turn(text="all done"),
    ]
    with FakeModel(script) as model:
        env = agent_env(
            repo,
            COPILOT_PROVIDER_BASE_URL=model.url,
            COPILOT_PROVIDER_TYPE="anthropic",
            COPILOT_PROVIDER_API_KEY="test",
            COPILOT_MODEL="claude-sonnet-4.5",
            COPILOT_OFFLINE="true",
            COPILOT_AUTO_UPDATE="false",
            # Prompt mode loads a repository's MCP servers only when asked to.
            GITHUB_COPILOT_PROMPT_MODE_WORKSPACE_MCP="true",
        )
        run_agent([exe, "--allow-all-tools", "--trust-folder", "-p", "Record what you learn."], repo, env)
    offered = {t["name"] for t in main_requests(model)[0].body["tools"]}
    assert {"docket-ledger_note_add", "docket-docket_record", "docket-docket_context"} <= offered
    seen = last_text(model)
    assert "record_id" in seen and "c2  unassessed  charge is idempotent" in seen
    assert [r["text"] for r in repo.records()][-1] == "charge is idempotent"
    notes = (repo.path / ".docket" / "ledgers" / "knowledge.jsonl").read_text().splitlines()
    assert len(notes) == 1 and json.loads(notes[0])["payload"]["note"] == note["note"]
