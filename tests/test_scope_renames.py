"""Scopes follow renames: a record scoped to a file that was `git mv`-ed still governs the file."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from docket_git.history.renames import chain

from .conftest import Repo


def _commit(repo: Repo, message: str) -> None:
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", message)


def _selection(briefing: str, rid: str) -> str:
    block = briefing.split(f"### {rid} |", 1)[1]
    return next(line for line in block.splitlines() if line.startswith("selection:"))


def test_a_record_scoped_to_a_moved_file_still_matches_it(repo: Repo) -> None:
    (repo.path / "src").mkdir()
    (repo.path / "src" / "store.py").write_text("x = 1\n")
    repo.ok("decision", "Appends fsync before returning", "--choice", "fsync", "--scope", "src/store.py")
    repo.ok("claim", "Unrelated premise", "--scope", "src/other.py")
    _commit(repo, "first")
    (repo.path / "src" / "ledger").mkdir()
    repo.git("mv", "src/store.py", "src/ledger/store.py")
    _commit(repo, "move store into ledger/")

    out = repo.ok("context", "--file", "src/ledger/store.py").out
    assert "### d1 |" in out
    assert _selection(out, "d1").startswith("selection: score ")
    assert "scope=1000 via rename" in _selection(out, "d1")
    # the record still says what was recorded: the old path
    assert '"src/store.py"' in out.split("### d1 |", 1)[1].split("###", 1)[0]


def test_without_the_rename_the_old_scope_matches_nothing(repo: Repo) -> None:
    """The same ledger in a tree where the file was deleted and another added: no rename, no match."""
    (repo.path / "src").mkdir()
    (repo.path / "src" / "store.py").write_text("".join(f"line {n}\n" for n in range(40)))
    repo.ok("decision", "Appends fsync before returning", "--choice", "fsync", "--scope", "src/store.py")
    _commit(repo, "first")
    (repo.path / "src" / "store.py").unlink()
    (repo.path / "src" / "ledger").mkdir()
    (repo.path / "src" / "ledger" / "store.py").write_text("completely different\n")
    _commit(repo, "delete and add")
    out = repo.ok("context", "--file", "src/ledger/store.py").out
    assert "via rename" not in out


def test_a_chain_of_renames_and_a_moved_directory(repo: Repo) -> None:
    (repo.path / "a").mkdir()
    (repo.path / "a" / "one.py").write_text("one = 1\n" * 5)
    (repo.path / "a" / "two.py").write_text("two = 2\n" * 5)
    repo.ok("claim", "Module a is pure", "--scope", "a/")
    repo.ok("claim", "one.py is small", "--scope", "a/one.py")
    _commit(repo, "first")
    repo.git("mv", "a", "b")
    _commit(repo, "a -> b")
    repo.git("mv", "b/one.py", "b/uno.py")
    _commit(repo, "one -> uno")

    out = repo.ok("context", "--file", "b/uno.py").out
    assert "scope=1000 via rename" in _selection(out, "c2")  # a/one.py -> b/one.py -> b/uno.py
    assert "via rename" in _selection(out, "c1")  # a/ -> b/


def test_renames_chain_in_order() -> None:
    assert chain([("a", "b"), ("b", "c"), ("x", "y")]) == {"a": "c", "b": "c", "x": "y"}
    assert chain([("a", "b"), ("b", "a")]) == {"b": "a"}  # moved back: a is itself again
    assert chain([]) == {}


def test_renames_are_looked_up_by_head_without_spawning_git(repo: Repo, tmp_path: Path) -> None:
    """A briefing reads HEAD from git's files; git is asked for renames once per HEAD, never for HEAD itself."""
    real = shutil.which("git", path=repo.env["PATH"])
    assert real is not None
    shim = tmp_path / "shim"
    shim.mkdir()
    log = tmp_path / "git.log"
    (shim / "git").write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n')
    (shim / "git").chmod(0o755)
    (repo.path / "src").mkdir()
    (repo.path / "src" / "store.py").write_text("x = 1\n")
    repo.ok("decision", "Appends fsync before returning", "--choice", "fsync", "--scope", "src/store.py")
    _commit(repo, "first")
    repo.git("mv", "src/store.py", "src/disk.py")
    _commit(repo, "store -> disk")
    traced = Repo(repo.path, {**repo.env, "PATH": f"{shim}{os.pathsep}{repo.env['PATH']}"})
    for _ in range(2):
        assert "scope=1000 via rename" in _selection(traced.ok("context", "--file", "src/disk.py").out, "d1")
    calls = log.read_text().splitlines()
    assert not [c for c in calls if "rev-parse" in c], calls
    assert len([c for c in calls if " log " in f" {c} "]) == 1, calls  # the second briefing used the cache
    repo.git("mv", "src/disk.py", "src/media.py")  # HEAD moves: the renames are asked for again
    _commit(repo, "disk -> media")
    assert "scope=1000 via rename" in _selection(traced.ok("context", "--file", "src/media.py").out, "d1")
    assert len([c for c in log.read_text().splitlines() if " log " in f" {c} "]) == 2
