"""An agent is always briefed (issue 28, item 11): a bad ledger line never leaves it with nothing.

The session-start hook of every agent, run through the real console script: with
a line the readers refuse, the briefing comes from HEAD's ledger and its first
line says what is wrong, at which line, and the command that fixes it.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from docket_git.context.envelope import HARNESSES
from tests.conftest import DOCKET, Repo

BAD = '{"schema": 2, "kind": "cl\n'  # a truncated record, newline and all: not a torn tail readers skip


def start(repo: Repo, agent: str, session: str) -> tuple[int, str, str]:
    payload = json.dumps({"session_id": session, "cwd": str(repo.path), "source": "startup"})
    proc = subprocess.run(
        [DOCKET, "hook", "session-start", "--for", agent],
        input=payload.encode(),
        cwd=repo.path,
        env={**repo.env, "DOCKET_HOOK_REPEAT_SECONDS": "0"},
        capture_output=True,
        timeout=60,
    )
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def context(out: str) -> str:
    data = json.loads(out)
    specific = data.get("hookSpecificOutput", {})
    return specific.get("additionalContext") or data.get("additionalContext") or data["additional_context"]


@pytest.mark.parametrize("agent", HARNESSES)
def test_a_bad_line_briefs_from_head_with_the_fault_and_the_fix_first(repo: Repo, agent: str) -> None:
    repo.ok("decision", "Payments retry with idempotency keys", "--choice", "keys")
    repo.ok("claim", "The store is thread-safe")
    repo.git("add", "-A")
    repo.git("commit", "-qm", "ledger")
    repo.ok("claim", "An uncommitted premise")
    with repo.ledger.open("a") as handle:
        handle.write(BAD)
    before = repo.ledger.read_bytes()

    code, out, err = start(repo, agent, f"s-{agent}")
    assert code == 0
    text = context(out)
    first, _, rest = text.partition("\n")
    assert first.startswith("# docket: .docket/ledger.jsonl cannot be read (line 4: invalid JSON"), first
    assert "this briefing is from HEAD's ledger" in first
    assert "repair or delete line 4 of .docket/ledger.jsonl" in first
    assert "git checkout HEAD -- .docket/ledger.jsonl" in first
    assert "Payments retry with idempotency keys" in rest and "The store is thread-safe" in rest
    assert "An uncommitted premise" not in rest
    assert rest.startswith(f"# docket: {repo.path.name} | ")  # the project's name, not a temp directory's
    assert "line 4" in err and "failed" not in err
    assert repo.ledger.read_bytes() == before  # the hook never repairs by itself


def test_without_a_committed_ledger_the_fault_alone_is_the_briefing(repo: Repo) -> None:
    repo.ok("claim", "An uncommitted premise")
    with repo.ledger.open("a") as handle:
        handle.write(BAD)
    code, out, _ = start(repo, "claude", "s-none")
    assert code == 0
    text = context(out)
    assert text.startswith("# docket: .docket/ledger.jsonl cannot be read (line 2: invalid JSON")
    assert "no committed ledger can; no briefing" in text and "delete line 2 of .docket/ledger.jsonl" in text


def test_a_bad_config_briefs_with_the_default_settings_and_says_so(repo: Repo) -> None:
    repo.ok("claim", "The store is thread-safe")
    (repo.path / ".docket" / "config.toml").write_text('max_chars = "x"\n')
    code, out, err = start(repo, "gemini", "s-config")
    assert code == 0
    first, _, rest = context(out).partition("\n")
    assert first.startswith("# docket: .docket/config.toml cannot be read (") and "default settings" in first
    assert "git checkout HEAD -- .docket/config.toml" in first
    assert "The store is thread-safe" in rest and ".docket/config.toml" in err
