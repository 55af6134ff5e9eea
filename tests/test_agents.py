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
    assert data["hooks"]["SessionStart"][0]["hooks"][0]["command"] == "docket hook session-start"


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
    assert f"docket: ok: codex runs docket's hooks ({repo.path / '.codex/hooks.json'})" in out
    assert "docket: note: claude is not wired; to brief it each session: docket init --agents claude" in out
