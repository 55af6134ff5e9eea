"""`--since` through git history: baselines from other branches, renumbered by merges, and commit-ish baselines."""

from __future__ import annotations

import json
import re

from .conftest import Repo


def commit(repo: Repo, message: str) -> None:
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", message)


def latest(text: str) -> str:
    found = re.search(r"\| latest: (\S+@[0-9a-f]{12})", text)
    assert found, text[:300]
    return found.group(1)


def forked(repo: Repo) -> str:
    """main: c1; topic records one claim; main records two; topic merged into main. Returns topic's baseline."""
    repo.ok("claim", "Shared premise", "--scope", "src/shared.py")
    commit(repo, "shared")
    repo.git("checkout", "-q", "-b", "topic")
    repo.ok("claim", "Topic premise", "--scope", "src/topic.py")
    commit(repo, "topic")
    baseline = latest(repo.ok("context", "--all").out)
    assert baseline.startswith("c2@")
    repo.git("checkout", "-q", "main")
    repo.ok("claim", "Main premise one", "--scope", "src/one.py")
    repo.ok("question", "Main question two", "--scope", "src/two.py")
    commit(repo, "main")
    repo.git("merge", "-q", "--no-edit", "topic")
    assert [r["text"] for r in repo.records()][-1] == "Topic premise"  # renumbered to c4
    return baseline


def block_ids(text: str) -> list[str]:
    return re.findall(r"^### (\w+) \|", text, flags=re.M)


def test_a_renumbered_baseline_gives_the_delta_in_current_ids(repo: Repo) -> None:
    baseline = forked(repo)
    result = repo.ok("context", "--since", baseline)
    assert "unknown or stale" not in result.err
    assert "# changed: 2 added, 0 no longer available." in result.out
    assert block_ids(result.out) == ["c2", "q3"]
    assert "Topic premise" not in result.out


def test_since_a_commit(repo: Repo) -> None:
    forked(repo)
    result = repo.ok("context", "--since", "HEAD~1")  # first parent: main before the merge
    head1 = repo.git("rev-parse", "HEAD~1").strip()
    assert f"since: HEAD~1 ({head1[:12]})" in result.out
    assert "# changed: 1 added, 0 no longer available." in result.out
    assert block_ids(result.out) == ["c4"]
    assert repo.ok("context", "--since", "topic").out.count("### ") == 2


def test_unknown_baseline_still_falls_back(repo: Repo) -> None:
    forked(repo)
    result = repo.ok("context", "--since", "c2@000000000000")
    assert "baseline c2@000000000000 is unknown or stale; printing a full briefing" in result.err
    assert "# changed:" not in result.out
    # A name that is neither a record nor a commit is a usage error (issue 31), not a silent full briefing.
    refused = repo.docket("context", "--since", "no-such-branch")
    assert refused.code == 2 and refused.out == ""
    assert refused.err.startswith("docket: --since 'no-such-branch' names no record and no commit here")


def test_resume_after_a_renumbering_merge_shows_only_the_new_records(repo: Repo) -> None:
    repo.ok("claim", "Shared premise", "--scope", "src/shared.py")
    commit(repo, "shared")
    repo.git("checkout", "-q", "-b", "topic")
    repo.ok("claim", "Topic premise", "--scope", "src/topic.py")
    commit(repo, "topic")
    payload = {"session_id": "agent-1", "cwd": str(repo.path), "source": "startup"}
    assert repo.ok("hook", "session-start", input=json.dumps(payload)).out
    repo.git("checkout", "-q", "main")
    repo.ok("claim", "Main premise one", "--scope", "src/one.py")
    commit(repo, "main")
    repo.git("merge", "-q", "--no-edit", "topic")
    resumed = repo.ok("hook", "session-start", input=json.dumps({**payload, "source": "resume"}))
    text = json.loads(resumed.out)["hookSpecificOutput"]["additionalContext"]
    assert "# changed: 1 added, 0 no longer available." in text
    assert block_ids(text) == ["c2"]
    assert "Main premise one" in text and "Topic premise" not in text


def test_a_renumbered_baseline_says_what_moved_before_the_records(repo: Repo) -> None:
    baseline = forked(repo)
    result = repo.ok("context", "--since", baseline)
    lines = result.out.splitlines()
    moved = f"# renumbered since {baseline}: c2 -> c4"
    assert moved in lines, result.out[:400]
    assert lines.index(moved) < min(i for i, line in enumerate(lines) if line.startswith("### "))
    # a baseline of this ledger's own prefix moved nothing: no such line
    assert "# renumbered" not in repo.ok("context", "--since", latest(repo.ok("context", "--all").out)).out


def test_the_resume_hook_says_what_moved(repo: Repo) -> None:
    repo.ok("claim", "Shared premise", "--scope", "src/shared.py")
    commit(repo, "shared")
    repo.git("checkout", "-q", "-b", "topic")
    repo.ok("claim", "Topic premise", "--scope", "src/topic.py")
    commit(repo, "topic")
    payload = {"session_id": "agent-1", "cwd": str(repo.path), "source": "startup"}
    assert repo.ok("hook", "session-start", input=json.dumps(payload)).out
    repo.git("checkout", "-q", "main")
    repo.ok("claim", "Main premise one", "--scope", "src/one.py")
    commit(repo, "main")
    repo.git("merge", "-q", "--no-edit", "topic")
    resumed = repo.ok("hook", "session-start", input=json.dumps({**payload, "source": "resume"}))
    text = json.loads(resumed.out)["hookSpecificOutput"]["additionalContext"]
    assert re.search(r"^# renumbered since c2@[0-9a-f]{12}: c2 -> c3$", text, flags=re.M), text[:400]
