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
