"""Session state expiry: entries untouched for 30 days go, and the directory is scanned at most once an hour.

A session start saves state two or three times; each save used to stat every
file in the state directory (thousands after a month of sessions, and the
repeat markers were never removed at all).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from tests.conftest import Repo

DAY = 24 * 3600


def state_dir(repo: Repo) -> Path:
    return Path(repo.env["XDG_STATE_HOME"]) / "docket-git" / "sessions"


def aged(path: Path, days: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_text("{}")
    stamp = time.time() - days * DAY
    os.utime(path, (stamp, stamp))
    return path


def start(repo: Repo, session: str) -> None:
    payload = {"session_id": session, "source": "startup", "cwd": str(repo.path)}
    result = repo.ok("hook", "session-start", input=json.dumps(payload))
    assert "additionalContext" in result.out
    assert result.err == ""


def test_old_entries_are_removed_and_scans_are_throttled(repo: Repo) -> None:
    repo.ok("claim", "Something worth a briefing")
    sessions = state_dir(repo)
    old_json = aged(sessions / ("a" * 32 + ".json"), 40)
    old_claim = aged(sessions / ("b" * 32 + ".claim"), 40)
    old_tmp = aged(sessions / ("c" * 32 + ".json.123.tmp"), 40)
    young = aged(sessions / ("d" * 32 + ".json"), 29)
    foreign = aged(sessions / "notes.txt", 40)  # not ours: never removed
    start(repo, "s1")
    assert not old_json.exists() and not old_claim.exists() and not old_tmp.exists()
    assert young.exists() and foreign.exists()
    stamp = sessions / "expired.stamp"
    assert stamp.exists()
    saved = [p for p in sessions.iterdir() if p.suffix == ".json"]
    assert len(saved) >= 2  # the session's and the worktree's state, plus the young entry

    # Within the hour a save does not scan again: a newly aged entry survives the next start.
    later = aged(sessions / ("e" * 32 + ".json"), 40)
    start(repo, "s2")
    assert later.exists()

    # An hour after the last scan the next save scans again.
    aged(stamp, 3700 / DAY)
    start(repo, "s3")
    assert not later.exists()
    assert young.exists()
    assert time.time() - stamp.stat().st_mtime < 600


def test_a_repeat_marker_still_suppresses_a_repeat(repo: Repo) -> None:
    """Expiring markers never touches a live one: a second start within the window prints nothing."""
    repo.ok("claim", "Something worth a briefing")
    payload = json.dumps({"session_id": "same", "source": "startup", "cwd": str(repo.path)})
    first = repo.ok("hook", "session-start", input=payload)
    assert "additionalContext" in first.out
    aged(state_dir(repo) / "expired.stamp", 1)  # force a scan on the next save
    second = repo.ok("hook", "session-start", input=payload)
    assert second.out == ""
