"""``docket doctor`` runs each registered agent hook the way the agent would (issue 28, item 12).

docket installed in a virtualenv that is not on PATH: the project's settings
look docket up on PATH, so the hook prints nothing, and doctor must say so
rather than "ok" because a settings file mentions docket.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.conftest import DOCKET, Repo

BARE_PATH = "/usr/bin:/bin"


def doctor(repo: Repo, path: str) -> tuple[int, str]:
    proc = subprocess.run(
        [DOCKET, "doctor"], cwd=repo.path, env={**repo.env, "PATH": path}, capture_output=True, text=True, timeout=120
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout


def test_a_hook_that_cannot_find_docket_is_a_problem(repo: Repo) -> None:
    repo.ok("claim", "The store is thread-safe")
    repo.ok("install-hooks", "--agents", "claude")
    code, out = doctor(repo, BARE_PATH)
    assert code == 1, out
    assert "ok: claude runs docket's hooks" not in out
    assert "problem: claude's pre-tool-use hook in " in out and "(sh -c, PATH=/usr/bin:/bin)" in out
    assert "did not stop a write to the ledger: docket is not on that PATH" in out
    assert "docket init --agents claude --user" in out  # the fix names the command
    assert "1 agent hook problem(s)" in out

    # The same settings with docket on PATH: both hooks answer, and the briefing is real.
    code, out = doctor(repo, f"{Path(DOCKET).parent}{os.pathsep}{BARE_PATH}")
    assert code == 0, out
    assert "ok: claude's pre-tool-use hook answers" in out
    assert "ok: claude's session-start hook briefs (" in out


def test_user_settings_name_docket_by_path_and_need_no_path(repo: Repo) -> None:
    repo.ok("claim", "The store is thread-safe")
    repo.ok("install-hooks", "--agents", "codex", "--user")
    code, out = doctor(repo, BARE_PATH)
    assert code == 0, out
    assert "ok: codex's pre-tool-use hook answers" in out and "ok: codex's session-start hook briefs" in out


def test_doctor_never_runs_a_command_a_clone_committed(repo: Repo, tmp_path: Path) -> None:
    proof = tmp_path / "ran"
    settings = repo.path / ".claude" / "settings.json"
    settings.parent.mkdir()
    command = f"touch {proof}; docket hook session-start"
    settings.write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": command}]}]}}))
    doctor(repo, f"{Path(DOCKET).parent}{os.pathsep}{BARE_PATH}")
    assert not proof.exists()
