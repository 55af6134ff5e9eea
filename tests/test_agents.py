"""Installing agent hooks: merged, idempotent, never clobbering; hooks/ files stay in sync."""

from __future__ import annotations

import json
from pathlib import Path

from docket_git.agents.table import AGENTS

from .conftest import Repo

HOOKS_DIR = Path(__file__).resolve().parent.parent / "hooks"


def test_hook_files_match_the_installer() -> None:
    for name, agent in AGENTS.items():
        assert json.loads((HOOKS_DIR / f"{name}.json").read_text()) == agent.settings, name


def test_install_twice_keeps_one_entry_and_user_hooks(repo: Repo) -> None:
    settings = repo.path / ".claude" / "settings.json"
    settings.parent.mkdir()
    mine = {"matcher": "Bash", "hooks": [{"type": "command", "command": "./my-linter"}]}
    settings.write_text(json.dumps({"model": "opus", "hooks": {"PreToolUse": [mine]}}))
    first = repo.ok("install-hooks", "--agents", "claude")
    assert "added SessionStart, PreToolUse hooks" in first.out
    second = repo.ok("install-hooks", "--agents", "claude")
    assert "already runs docket's hooks" in second.out
    data = json.loads(settings.read_text())
    assert data["model"] == "opus"
    assert data["hooks"]["PreToolUse"][0] == mine
    assert len(data["hooks"]["PreToolUse"]) == 2
    assert len(data["hooks"]["SessionStart"]) == 1
    command = data["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert command == "command -v docket >/dev/null 2>&1 && docket hook session-start || true"
    assert data["hooks"]["PreToolUse"][1]["matcher"] == "Edit|Write|MultiEdit|NotebookEdit|Bash"


def test_an_older_entry_is_upgraded_in_place_and_a_mixed_one_left_alone(repo: Repo) -> None:
    settings = repo.path / ".claude" / "settings.json"
    settings.parent.mkdir()
    old = {
        "matcher": "Edit|Write|MultiEdit|Bash",
        "hooks": [{"type": "command", "command": "docket hook pre-tool-use"}],
    }
    mixed = {
        "hooks": [{"type": "command", "command": "docket hook session-start"}, {"type": "command", "command": "x"}]
    }
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [old], "SessionStart": [mixed]}}))
    out = repo.ok("install-hooks", "--agents", "claude").out
    assert "PreToolUse (updated)" in out
    data = json.loads(settings.read_text())
    assert data["hooks"]["PreToolUse"] == AGENTS["claude"].settings["hooks"]["PreToolUse"]
    assert data["hooks"]["SessionStart"] == [mixed]


def test_user_level_files_name_docket_by_absolute_path(repo: Repo) -> None:
    repo.ok("install-hooks", "--agents", "copilot,codex", "--user")
    home = Path(repo.env["HOME"])
    command = json.loads((home / ".copilot/hooks/docket.json").read_text())["hooks"]["preToolUse"][0]["bash"]
    exe = command.split()[2]
    assert Path(exe).is_absolute() and Path(exe).name == "docket"
    assert command == f"[ -x {exe} ] && {exe} hook pre-tool-use --for copilot || true"
    project = json.loads(json.dumps(AGENTS["codex"].settings))
    assert "command -v docket" in project["hooks"]["PreToolUse"][0]["hooks"][0]["command"]


def test_install_several_agents_and_user_level(repo: Repo) -> None:
    repo.ok("install-hooks", "--agents", "codex,cursor,gemini,copilot")
    assert json.loads((repo.path / ".codex/hooks.json").read_text()) == AGENTS["codex"].settings
    assert json.loads((repo.path / ".cursor/hooks.json").read_text()) == AGENTS["cursor"].settings
    assert (repo.path / ".gemini/settings.json").exists()
    assert (repo.path / ".github/hooks/docket.json").exists()
    repo.ok("install-hooks", "--agents", "claude", "--user")
    assert (Path(repo.env["HOME"]) / ".claude/settings.json").exists()
    assert not (repo.path / ".claude").exists()


def test_bad_settings_are_refused_untouched(repo: Repo) -> None:
    settings = repo.path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{not json")
    result = repo.docket("install-hooks", "--agents", "claude")
    assert result.code == 1
    assert "is not valid JSON" in result.err
    assert settings.read_text() == "{not json"
    assert repo.docket("install-hooks", "--agents", "claude,vim").code == 2


def test_init_says_what_codex_gemini_and_copilot_need(repo: Repo) -> None:
    out = repo.ok("init", "--agents", "codex,gemini,copilot").out
    assert "docket: note: codex runs project hooks only in a trusted project" in out
    assert "/hooks view" in out and "`codex exec` skips unreviewed hooks" in out
    assert "tools.enableHooks" in out and "no SessionStart after compressing" in out
    # Found in the real agents (tests/test_real_agents.py): both skip a project's hooks in an untrusted folder.
    assert "gemini reads a project's hooks only in a trusted folder" in out and "GEMINI_CLI_TRUST_WORKSPACE" in out
    assert "copilot runs a repository's hooks only in a trusted folder" in out and "--trust-folder" in out
    assert "copilot-setup-steps.yml" in out


def test_doctor_flags_hooks_written_by_an_older_docket(repo: Repo) -> None:
    settings = repo.path / ".claude" / "settings.json"
    settings.parent.mkdir()
    old = {"hooks": [{"type": "command", "command": "docket hook session-start"}]}
    settings.write_text(json.dumps({"hooks": {"SessionStart": [old]}}))
    out = repo.docket("doctor").out
    assert "claude's hooks in" in out and "docket install-hooks --agents claude" in out


def test_init_agents_wires_hooks_idempotently(repo: Repo) -> None:
    repo.ok("init", "--agents", "claude")
    repo.ok("init", "--agents", "claude")
    data = json.loads((repo.path / ".claude/settings.json").read_text())
    assert len(data["hooks"]["SessionStart"]) == 1
    bad = repo.docket("init", "--agents", "emacs")
    assert bad.code == 2


def test_doctor_reports_wired_agents(repo: Repo) -> None:
    repo.ok("install-hooks", "--agents", "codex")
    out = repo.docket("doctor").out
    assert f"docket: ok: codex's pre-tool-use hook answers ({repo.path / '.codex/hooks.json'})" in out
    assert "approve " + str(repo.path / ".codex/hooks.json") in out  # Codex's trust review
    assert "older docket" not in out
    assert "claude" not in out  # only wired agents are listed
    bare = repo.path.parent / "bare"
    bare.mkdir()
    repo.git("init", "-q", str(bare))
    alone = repo.docket("doctor", cwd=bare).out
    assert "docket: note: no coding agent is wired; to brief one each session: docket init --agents claude," in alone
