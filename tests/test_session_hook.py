"""`docket hook session-start`: full briefings on startup/clear/compact, deltas on resume."""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

from docket_git.ledger import canonical

from .conftest import Repo, rec


def start(repo: Repo, source: str, session: str = "s-1", *extra: str) -> tuple[int, str, str]:
    payload = {"session_id": session, "cwd": str(repo.path), "source": source, "transcript_path": "/tmp/t.jsonl"}
    result = repo.docket("hook", "session-start", *extra, input=json.dumps(payload))
    return result.code, result.out, result.err


def context_of(out: str) -> str:
    data = json.loads(out)
    assert data["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    return data["hookSpecificOutput"]["additionalContext"]


def session_state(repo: Repo, session: str) -> dict:
    key = hashlib.sha256(session.encode()).hexdigest()[:32]
    return json.loads((Path(repo.env["XDG_STATE_HOME"]) / "docket-git" / "sessions" / f"{key}.json").read_text())


def seed(repo: Repo, n: int = 3) -> None:
    for i in range(1, n + 1):
        repo.ok("claim", f"Premise number {i} holds", "--scope", f"src/m{i}.py")


def test_startup_prints_the_briefing_and_remembers_the_baseline(repo: Repo) -> None:
    seed(repo)
    code, out, _ = start(repo, "startup")
    assert code == 0
    text = context_of(out)
    assert text.startswith("# docket: ")
    assert "### c1 " in text or "c1 claim" in text
    assert len(text) <= 10_000
    assert text == repo.ok("context", "--max-chars", "10000").out
    remembered = session_state(repo, "s-1")
    assert remembered["baseline"].startswith("c3@")
    latest = next(line for line in text.splitlines() if "| latest: " in line)
    assert remembered["baseline"] in latest


def test_resume_prints_only_what_changed(repo: Repo) -> None:
    repo.env["DOCKET_HOOK_REPEAT_SECONDS"] = "0"  # two resumes in a row here are not one event fired twice
    seed(repo)
    start(repo, "startup")
    repo.ok("claim", "A new premise appeared", "--scope", "src/new.py")
    repo.ok("question", "And a new question?")
    code, out, err = start(repo, "resume")
    assert code == 0, err
    text = context_of(out)
    assert "# changed: 2 added, 0 no longer available." in text
    assert "A new premise appeared" in text and "And a new question?" in text
    assert "Premise number 1 holds" not in text
    # the resume moved the baseline: nothing new now
    assert "# changed: 0 added, 0 no longer available." in context_of(start(repo, "resume")[1])


def test_unseen_session_resume_and_compact_get_the_full_briefing(repo: Repo) -> None:
    seed(repo)
    full = context_of(start(repo, "resume", "never-seen")[1])
    assert "# changed:" not in full and "Premise number 1 holds" in full
    start(repo, "startup", "s-2")
    repo.ok("claim", "Later premise")
    for source in ("compact", "clear"):
        text = context_of(start(repo, source, "s-2")[1])
        assert "# changed:" not in text
        assert "Premise number 1 holds" in text and "Later premise" in text


def test_envelopes_for_other_agents(repo: Repo) -> None:
    seed(repo)
    assert "additional_context" in json.loads(start(repo, "startup", "c", "--for", "cursor")[1])
    assert "additionalContext" in json.loads(start(repo, "startup", "p", "--for", "copilot")[1])
    gemini = json.loads(start(repo, "startup", "g", "--for", "gemini")[1])
    assert gemini["hookSpecificOutput"]["additionalContext"].startswith("# docket: ")


def test_empty_ledger_and_malformed_input_print_nothing(repo: Repo, bare_repo: Repo) -> None:
    assert start(repo, "startup") == (0, "", "")
    assert start(bare_repo, "startup") == (0, "", "")
    for junk in ("", "not json", "[]", '{"cwd": 5}'):
        result = repo.docket("hook", "session-start", input=junk)
        assert (result.code, result.out) == (0, ""), junk


def test_an_internal_error_never_fails_the_session(repo: Repo) -> None:
    seed(repo)
    repo.ledger.write_text(repo.ledger.read_text() + "{broken\n")
    code, out, err = start(repo, "startup")
    assert code == 0
    assert err.startswith("docket: ") and err.count("\n") == 1
    # Never silently unbriefed: nothing is committed, so the fault and its fix are the briefing (issue 28).
    told = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert told.startswith("# docket: .docket/ledger.jsonl cannot be read (line ") and "docket check" in told


def test_nothing_changed_short_path_matches_the_full_delta(repo: Repo) -> None:
    seed(repo, 5)
    baseline = (
        next(line for line in repo.ok("context").out.splitlines() if "| latest: " in line)
        .split("| latest: ")[1]
        .split(" ")[0]
    )
    cache = Path(repo.env["XDG_CACHE_HOME"])
    outputs = []
    for _ in range(2):
        shutil.rmtree(cache, ignore_errors=True)  # cold: no cached proof, the full delta path runs
        cold = repo.ok("context", "--since", baseline).out
        warm = repo.ok("context", "--since", baseline).out  # warm: the cache proves nothing changed
        outputs += [cold, warm]
    assert len(set(outputs)) == 1
    assert "# changed: 0 added, 0 no longer available." in outputs[0]
    repo.ok("claim", "One more")
    assert "# changed: 1 added" in repo.ok("context", "--since", baseline).out


def test_cursor_payload_names_its_session_and_workspace_differently(repo: Repo, tmp_path: Path) -> None:
    seed(repo)
    payload = {"conversation_id": "cur-1", "hook_event_name": "sessionStart", "workspace_roots": [str(repo.path)]}
    result = repo.docket("hook", "session-start", "--for", "cursor", input=json.dumps(payload), cwd=tmp_path)
    assert result.code == 0, result.err
    assert json.loads(result.out)["additional_context"].startswith("# docket: ")
    assert session_state(repo, "cur-1")["baseline"].startswith("c3@")  # remembered under the conversation ID


def test_copilot_camel_case_session_id_keys_the_resume(repo: Repo) -> None:
    seed(repo)

    def run(source: str) -> str:
        payload = {"sessionId": "cp-1", "cwd": str(repo.path), "source": source, "timestamp": 1}
        return json.loads(repo.ok("hook", "session-start", "--for", "copilot", input=json.dumps(payload)).out)[
            "additionalContext"
        ]

    assert run("new").startswith("# docket: ")
    repo.ok("claim", "Appended meanwhile", "--scope", "src/x.py")
    assert "# changed: 1 added" in run("resume")


def test_session_start_imports_neither_typer_nor_pygit2(repo: Repo) -> None:
    """Auto-scope and the driver notice ask the git CLI; pygit2 is left for history (a renumbered resume)."""
    import subprocess
    import sys

    seed(repo)
    (repo.path / "src").mkdir()
    (repo.path / "src" / "m1.py").write_text("x\n")  # work at hand: auto-scope must find it
    payload = json.dumps({"session_id": "imp", "cwd": str(repo.path), "source": "startup"})
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "docket_git", "hook", "session-start"],
        cwd=repo.path,
        env=repo.env,
        input=payload,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0
    files = next(line for line in context_of(proc.stdout).splitlines() if line.startswith("# files: "))
    assert "src/m1.py" in files.split(": ", 1)[1].split(", ")
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "import time:" in line}
    assert "docket_git.agents.hooks" in imported
    assert not {"typer", "pydantic", "rich", "pygit2"} & imported


def test_cp1252_stdout_gets_ascii_json_never_a_traceback(repo: Repo) -> None:
    repo.ok("claim", "Kana カナ and arrows → survive", "--scope", "src/x.py")
    repo.ok("decision", "Naïve → rule", "--choice", "x", "--scope", "src/x.py")
    repo.env["PYTHONIOENCODING"] = "cp1252"
    for agent in ("claude", "copilot", "cursor"):
        code, out, err = start(repo, "startup", f"enc-{agent}", "--for", agent)
        assert code == 0 and err == "", err
        assert out.isascii() and "\\u30ab" in out
        assert "Kana カナ and arrows → survive" in json.dumps(json.loads(out), ensure_ascii=False)
    payload = {"session_id": "enc", "tool_name": "Edit", "tool_input": {"file_path": "src/x.py"}, "cwd": str(repo.path)}
    result = repo.docket("hook", "pre-tool-use", input=json.dumps(payload))
    assert result.code == 0 and result.out.isascii() and "Na\\u00efve" in result.out
    # Text commands degrade too: what cp1252 cannot show comes out escaped, never as a traceback.
    recorded = repo.docket("claim", "Another → arrow", "--scope", "src/y.py")
    assert recorded.code == 0 and "Another \\u2192 arrow" in recorded.out


def test_unparseable_huge_and_deep_payloads_exit_zero_quietly(repo: Repo) -> None:
    deep = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
    for hook in ("session-start", "pre-tool-use"):
        for junk in (b"\xff\xfe not utf-8", deep.encode(), b'{"tool_name": "Bash", "tool_input": {"command": "\xff"}}'):
            result = repo.docket("hook", hook, input=junk)
            assert (result.code, result.out) == (0, ""), (hook, junk[:20])
            assert "Traceback" not in result.err
    huge = json.dumps({"tool_name": "Bash", "tool_input": {"command": "x" * (17 * 1024 * 1024)}})
    result = repo.docket("hook", "pre-tool-use", input=huge)
    assert (result.code, result.out) == (0, "")
    assert result.err.startswith("docket: hook payload over") and result.err.count("\n") == 1


def test_a_repeat_within_seconds_is_a_no_op(repo: Repo) -> None:
    """Copilot CLI and Cursor also run .claude/settings.json: one session start fires both wirings."""
    seed(repo)
    first = start(repo, "startup", "dup")
    assert context_of(first[1])
    assert start(repo, "startup", "dup", "--for", "copilot") == (0, "", "")  # the second wiring: silent
    assert start(repo, "resume", "dup")[1]  # another event is news
    assert start(repo, "resume", "dup") == (0, "", "")  # fired twice
    assert start(repo, "startup", "dup") == (0, "", "")  # Claude's extra startup beside a resume
    assert context_of(start(repo, "startup", "other-session")[1])  # another session is not a repeat


def test_concurrent_duplicates_brief_exactly_once(repo: Repo) -> None:
    import subprocess

    from .conftest import DOCKET

    seed(repo)
    payload = json.dumps({"session_id": "race", "cwd": str(repo.path), "source": "startup"}).encode()
    procs = [
        subprocess.Popen(
            [DOCKET, "hook", "session-start", *extra],
            cwd=repo.path,
            env=repo.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for extra in ([], ["--for", "copilot"], ["--for", "cursor"])
    ]
    outs = [p.communicate(payload)[0] for p in procs]
    assert sum(bool(o) for o in outs) == 1


def test_resume_under_a_new_session_id_is_still_a_delta(repo: Repo) -> None:
    """Some Claude versions resume with a new session_id: the transcript path, else the worktree, keeps it a delta."""
    seed(repo)
    payload = {"session_id": "old-id", "cwd": str(repo.path), "source": "startup", "transcript_path": "/t/a.jsonl"}
    repo.ok("hook", "session-start", input=json.dumps(payload))
    repo.ok("claim", "Appended while away")
    resumed = {**payload, "session_id": "new-id", "source": "resume"}
    text = context_of(repo.ok("hook", "session-start", input=json.dumps(resumed)).out)
    assert "# changed: 1 added" in text and "Premise number 1 holds" not in text
    repo.ok("claim", "Appended again")
    no_transcript = {"session_id": "third-id", "cwd": str(repo.path), "source": "resume"}
    text = context_of(repo.ok("hook", "session-start", input=json.dumps(no_transcript)).out)
    assert "# changed: 1 added" in text and "Appended again" in text  # the worktree's last briefing


def _fresh_clone(repo: Repo, n: int) -> Path:
    """A ledger of n records written straight to the file, and no index anywhere: a fresh clone's state."""
    records = [
        rec(f"c{i}", f"Premise number {i} holds " + "x" * 400, state="accepted", scope=[f"src/m{i % 7}.py"])
        for i in range(1, n + 1)
    ]
    repo.ledger.write_bytes(b"".join(canonical.line(r) for r in records))
    cache = Path(repo.env["XDG_CACHE_HOME"])
    shutil.rmtree(cache, ignore_errors=True)
    return cache / "docket-git" / "index"


def _wait_for_builds(folder: Path) -> None:
    for lock in folder.glob("*.lock"):
        with open(lock, "rb") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)  # a deferred build holds it until its index is in place


def _building(folder: Path) -> bool:
    """True when some index build holds its lock, or no index has been renamed into place yet."""
    for lock in folder.glob("*.lock"):
        with open(lock, "rb") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
    return not list(folder.glob("*.sqlite"))


def test_a_fresh_clone_is_briefed_from_memory_and_indexed_after_the_answer(repo: Repo) -> None:
    """The first session start reads the ledger in memory and answers; a child it forks builds the index."""
    folder = _fresh_clone(repo, 4000)  # ~2 MB: its build takes far longer than the hook takes to exit
    code, out, err = start(repo, "startup")
    assert code == 0, err
    assert _building(folder)  # the hook answered while its child was still at work
    _wait_for_builds(folder)
    (db,) = folder.glob("*.sqlite")
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM records").fetchone()[0] == 4000
    again = start(repo, "startup", "s-2")  # from the index now: the same briefing
    assert again[0] == 0 and context_of(again[1]) == context_of(out)
    assert context_of(out) == repo.ok("context", "--max-chars", "10000").out


def test_a_fresh_clones_guard_reads_from_memory_too(repo: Repo) -> None:
    repo.ok("decision", "Cache keys are hashed", "--choice", "sha256", "--scope", "src/m3.py")
    records = repo.records()
    payload = {"session_id": "g", "cwd": str(repo.path), "tool_name": "Edit", "tool_input": {"file_path": "src/m3.py"}}
    shutil.rmtree(repo.env["XDG_CACHE_HOME"])
    first = repo.docket("hook", "pre-tool-use", input=json.dumps(payload))
    folder = Path(repo.env["XDG_CACHE_HOME"]) / "docket-git" / "index"
    _wait_for_builds(folder)
    assert len(list(folder.glob("*.sqlite"))) == 1
    payload["session_id"] = "g2"  # a session that has not been told yet
    second = repo.docket("hook", "pre-tool-use", input=json.dumps(payload))
    assert first.code == second.code == 0
    assert first.out == second.out and "d1 decision adopted: Cache keys are hashed" in first.out
    assert repo.records() == records


def test_a_fresh_clone_with_an_unwritable_cache_still_gets_its_briefing(repo: Repo) -> None:
    _fresh_clone(repo, 20)
    blocker = Path(repo.env["XDG_CACHE_HOME"])
    blocker.write_text("a file where the cache directory would go\n")
    code, out, err = start(repo, "startup")
    assert code == 0, err
    assert "Premise number 20 holds" in context_of(out)
    assert blocker.read_text() == "a file where the cache directory would go\n"
