"""Issue 31 item 5: ``--scope`` is read from the current directory, as git reads a pathspec.

The stored scope is root-relative; a component name stays possible (no
slash, no glob character); a scope that names no tracked path and no
component another record uses gets a one-line hint.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Repo


@pytest.fixture
def tree(repo: Repo) -> Repo:
    """src/pay/api.py and src/pay/retry/r.py committed."""
    (repo.path / "src/pay/retry").mkdir(parents=True)
    (repo.path / "src/pay/api.py").write_text("x\n")
    (repo.path / "src/pay/retry/r.py").write_text("y\n")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "tree")
    return repo


def _scope(repo: Repo, rid: str) -> list[str]:
    return next(r for r in repo.records() if r["id"] == rid).get("scope", [])


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("./api.py", "src/pay/api.py"),
        ("retry/", "src/pay/retry/"),
        ("retry/r.py", "src/pay/retry/r.py"),
        ("../pay/api.py", "src/pay/api.py"),
        ("*.py", "src/pay/*.py"),
        ("billing", "billing"),  # a component name, explicitly: no slash, no glob
    ],
)
def test_a_scope_given_in_a_subdirectory_is_read_from_there_and_stored_root_relative(
    tree: Repo, given: str, stored: str
) -> None:
    tree.ok("claim", "x", "--scope", given, cwd=tree.path / "src/pay")
    assert _scope(tree, "c1") == [stored]


def test_at_the_root_scopes_are_stored_as_before(tree: Repo) -> None:
    tree.ok("claim", "x", "--scope", "src/pay/api.py", "--scope", "src/pay/retry/")
    assert _scope(tree, "c1") == ["src/pay/api.py", "src/pay/retry/"]


def test_an_absolute_scope_is_unchanged_by_the_current_directory(tree: Repo) -> None:
    tree.ok("claim", "x", "--scope", str(tree.path / "src/pay/api.py"), cwd=tree.path / "src/pay/retry")
    assert _scope(tree, "c1") == ["src/pay/api.py"]


def test_a_scope_leaving_the_repository_from_below_names_what_was_typed(tree: Repo) -> None:
    before = tree.ledger.read_bytes()
    result = tree.docket("claim", "x", "--scope", "../../../x", cwd=tree.path / "src/pay")
    assert result.code != 0
    assert result.err.startswith("docket: --scope ../../../x points outside the repository (read from src/pay/")
    assert tree.ledger.read_bytes() == before


def test_a_component_named_like_a_file_here_shows_the_path_spelling_from_here(tree: Repo) -> None:
    result = tree.ok("claim", "x", "--scope", "api.py", cwd=tree.path / "src/pay")
    assert _scope(tree, "c1") == ["api.py"]
    assert "exists in src/pay/; to scope the path, write './api.py'" in result.err


def test_a_path_that_matches_no_tracked_path_gets_one_hint(tree: Repo) -> None:
    result = tree.ok("claim", "x", "--scope", "nothere.py", "--scope", "./gone.py", cwd=tree.path / "src/pay")
    lines = [line for line in result.err.splitlines() if "matches no tracked path" in line]
    assert lines == [
        "docket: --scope 'src/pay/gone.py' matches no tracked path (paths are read from the current directory)"
    ]
    glob = tree.ok("claim", "y", "--scope", "*.rs", cwd=tree.path / "src")
    assert "--scope 'src/*.rs' matches no tracked path" in glob.err
    good = tree.ok("claim", "z", "--scope", "*.py", "--scope", "pay/", cwd=tree.path / "src")
    assert "matches no tracked path" not in good.err


def test_a_new_component_gets_a_hint_and_a_known_one_does_not(tree: Repo) -> None:
    first = tree.ok("claim", "x", "--scope", "billing")
    assert "--scope 'billing' is a component name no record uses yet" in first.err
    again = tree.ok("claim", "y", "--scope", "Billing")
    assert "component name no record uses yet" not in again.err


def test_the_docs_say_scopes_are_read_from_the_current_directory() -> None:
    text = (Path(__file__).resolve().parent.parent / "docs" / "commands.md").read_text(encoding="utf-8")
    assert "read from the current directory" in text
