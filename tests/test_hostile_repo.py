"""A cloned repository is untrusted: committed links and special files never make docket write or read outside it.

Each case commits a crafted repository, clones it (as a user would), runs the
commands every clone is told to run, and checks that nothing outside the
clone changed and every refusal is a ``docket: ...`` line naming the path.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from .conftest import DOCKET

COMMANDS = (["init"], ["claim", "from the clone"], ["list"], ["context"], ["check"])


def _snapshot(directory: Path) -> dict[str, str]:
    out = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[str(path.relative_to(directory))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _crafted(tmp_path: Path, env: dict[str, str], links: dict[str, str], files: dict[str, bytes]) -> Path:
    """A repository committing the given links (path -> target) and files, cloned; the clone's path."""
    origin = tmp_path / "origin"
    origin.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(origin)], check=True, env=env)
    for rel, data in files.items():
        (origin / rel).parent.mkdir(parents=True, exist_ok=True)
        (origin / rel).write_bytes(data)
    for rel, target in links.items():
        (origin / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, origin / rel)
    subprocess.run(["git", "add", "-A"], cwd=origin, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", "crafted"], cwd=origin, check=True, env=env)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True, env=env)
    return clone


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory outside the clone that links point into: it must stay byte-identical."""
    target = tmp_path / "outside"
    target.mkdir()
    (target / "bashrc").write_text("echo hello\n")
    (target / "notes.txt").write_text("one line, no newline")
    return target


CASES = {
    "ledger links to an outside file": ({".docket/ledger.jsonl": "{out}/notes.txt"}, {}),
    "ledger is a dangling link": ({".docket/ledger.jsonl": "{out}/created-by-docket"}, {}),
    "lock file links outside": ({".docket/ledger.jsonl.lock": "{out}/lock"}, {".docket/ledger.jsonl": b""}),
    "the .docket directory links outside": ({".docket": "{out}"}, {}),
    "config links to /dev/zero": ({".docket/config.toml": "/dev/zero"}, {".docket/ledger.jsonl": b""}),
    "ignore file links outside": ({".docket/.gitignore": "{out}/bashrc"}, {".docket/ledger.jsonl": b""}),
    "ledger is a directory": ({}, {".docket/ledger.jsonl/keep": b""}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_crafted_clone_changes_nothing_outside_it(tmp_path: Path, env: dict[str, str], outside: Path, case: str):
    links, files = CASES[case]
    clone = _crafted(tmp_path, env, {k: v.format(out=outside) for k, v in links.items()}, files)
    before = _snapshot(outside)
    names_before = sorted(p.name for p in outside.iterdir())
    refused = 0
    for args in COMMANDS:
        proc = subprocess.run([DOCKET, *args], cwd=clone, env=env, capture_output=True, text=True, timeout=60)
        assert "Traceback" not in proc.stderr, proc.stderr
        if proc.returncode != 0:
            refused += 1
            assert proc.stderr.startswith("docket: "), proc.stderr
    assert _snapshot(outside) == before
    assert sorted(p.name for p in outside.iterdir()) == names_before  # nothing created there either
    assert refused, "at least one command must refuse the crafted file"


def test_a_large_config_is_refused_not_read(repo) -> None:
    (repo.path / ".docket" / "config.toml").write_bytes(b"# " + b"x" * (2 << 20) + b"\n")
    result = repo.docket("context")
    assert result.code == 1 and "more than docket reads" in result.err


# -- init's writes, agent settings, typed ledgers, session logs, migrate ------------------------

AGENTS = "claude,codex,copilot,gemini,cursor"
AGENT_DIR = Path(__file__).parent / "agents"
TYPED = b'[ledgers.events]\ntype = "log"\n'


def _payload(agent: str, name: str, clone: Path) -> bytes:
    """A documented hook payload for agent (tests/agents/), pointed at the clone."""
    text = (AGENT_DIR / agent / name).read_text()
    body = "\n".join(line for line in text.splitlines() if not line.startswith("//"))
    return body.replace("$CWD", str(clone)).encode()


def _commands(clone: Path) -> list[tuple[list[str], bytes | None]]:
    ops = b"".join(b'{"operation": "append", "value": "event %d"}\n' % i for i in range(40))
    session = ["--system", "s", "--workflow", "w", "--project", "p", "--create-dir"]
    step = ["--step", "1", "--agent", "a", "--status", "completed", "--input", "in", "--output", "out"]
    out: list[tuple[list[str], bytes | None]] = [
        (["init"], None),
        (["init", "--agents", AGENTS], None),
        (["install-hooks", "--agents", AGENTS], None),
        (["doctor"], None),
        (["session", "init", *session], None),
        (["session", "write", *step], None),
        (["session", "show"], None),
        (["ledger", "append", "events", "-"], ops),
        (["ledger", "check", "events"], None),
        (["ledger", "query", "events", "SELECT count(*) FROM records"], None),
        (["migrate"], None),
        (["check"], None),
    ]
    for agent in AGENTS.split(","):
        out.append((["hook", "session-start", "--for", agent], _payload(agent, "session-start--startup.json", clone)))
        guard = sorted(p.name for p in (AGENT_DIR / agent).glob("pre-tool-use--*.json"))[0]
        out.append((["hook", "pre-tool-use", "--for", agent], _payload(agent, guard, clone)))
    return out


def _tree(directory: Path) -> dict[str, str]:
    """Every path under directory (links and directories too) with its content's digest or its kind."""
    out = {}
    for path in sorted(directory.rglob("*")):
        rel = str(path.relative_to(directory))
        if path.is_symlink():
            out[rel] = "link -> " + os.readlink(path)
        elif path.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


# name: (links, files, the path a refusal must name)
WRITERS = {
    ".gitattributes links to a shell rc": ({".gitattributes": "{out}/bashrc"}, {}, ".gitattributes"),
    ".gitattributes links to /dev/zero": ({".gitattributes": "/dev/zero"}, {}, ".gitattributes"),
    "claude settings link outside": ({".claude/settings.json": "{out}/settings.json"}, {}, ".claude/settings.json"),
    "the .claude directory links outside": ({".claude": "{out}"}, {}, ".claude"),
    "codex hooks link outside": ({".codex/hooks.json": "{out}/settings.json"}, {}, ".codex/hooks.json"),
    "the .github directory links outside": ({".github": "{out}"}, {}, ".github"),
    "gemini settings link to /dev/zero": ({".gemini/settings.json": "/dev/zero"}, {}, ".gemini/settings.json"),
    "cursor hooks link outside": ({".cursor/hooks.json": "{out}/bashrc"}, {}, ".cursor/hooks.json"),
    "typed ledger directory links outside": (
        {".docket/ledgers": "{out}"},
        {".docket/config.toml": TYPED},
        ".docket/ledgers",
    ),
    "typed ledger file links outside": (
        {".docket/ledgers/events.jsonl": "{out}/notes.txt"},
        {".docket/config.toml": TYPED},
        ".docket/ledgers/events.jsonl",
    ),
    "schema file links to /dev/zero": (
        {"schema.json": "/dev/zero"},
        {".docket/config.toml": TYPED + b'schema_file = "schema.json"\n'},
        "schema.json",
    ),
    "session directory links outside": ({"context-ledger": "{out}"}, {}, "context-ledger"),
    "migrate's scratch file links outside": (
        {".docket/ledger.jsonl.migrating": "{out}/bashrc"},
        {".docket/ledger.jsonl": b'{"id": "d1", "ts": "2025-03-01T10:00:00Z", "state": "open", "question": "q"}\n'},
        None,  # a scratch file: removed and written afresh, never followed
    ),
    "pre-commit config links to /dev/zero": ({".pre-commit-config.yaml": "/dev/zero"}, {}, None),
}


@pytest.mark.parametrize("case", sorted(WRITERS))
def test_a_crafted_clone_gets_no_write_outside_it(tmp_path: Path, env: dict[str, str], outside: Path, case: str):
    links, files, named = WRITERS[case]
    (outside / "settings.json").write_text('{"hooks": {}}\n')
    clone = _crafted(tmp_path, env, {k: v.format(out=outside) for k, v in links.items()}, files)
    before = _tree(outside)
    said = []
    for args, stdin in _commands(clone):
        proc = subprocess.run([DOCKET, *args], cwd=clone, env=env, input=stdin, capture_output=True, timeout=60)
        err = proc.stderr.decode(errors="replace")
        assert "Traceback" not in err and "internal error" not in err, (args, err)
        if args[0] == "hook":
            assert proc.returncode == 0, (args, err)  # a hook never fails the session
        elif proc.returncode != 0 and args in (["doctor"], ["check"]):  # reports on stdout, exit 1
            assert proc.stdout.startswith(b"docket: "), (args, proc.stdout)
        elif proc.returncode != 0:
            assert err.startswith("docket: "), (args, err)
        said.append(err + proc.stdout.decode(errors="replace"))
        assert _tree(outside) == before, f"{args} changed {outside}"
    if named is not None:
        refusals = [s for s in said if any(w in s for w in ("symbolic link", "is a symlink", "not a regular file"))]
        assert any(named in s for s in refusals), f"no refusal named {named}:\n" + "\n".join(said)
