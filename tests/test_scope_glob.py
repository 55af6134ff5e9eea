"""Star-only scope globs are matched without fnmatch's regex, with fnmatch's answers.

A session hook used to compile one regex per distinct glob scope whose
literal prefix a task file shares (about 0.1 ms each); ``scope.star_match``
answers for globs whose only glob character is ``*``.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from hypothesis import given
from hypothesis import strategies as st

from docket_git.context import scope
from tests.hypothesis_helpers import profile

ALPHABET = "ab/.*"
WEIGHTS = {"scope_exact": 5, "scope_prefix": 3, "scope_glob": 2}


@profile(600, 6000, checks=())
@given(st.text(ALPHABET.replace("*", ""), max_size=12), st.text(ALPHABET, max_size=10))
def test_star_match_is_fnmatchcase(path: str, pattern: str) -> None:
    if "*" not in pattern:
        pattern += "*"
    assert scope.star_match(path, pattern.split("*")) == fnmatchcase(path, pattern)


@profile(300, 3000, checks=())
@given(
    st.lists(st.text("ab/.?[]!", max_size=10), min_size=1, max_size=4),
    st.text("ab/.*?[]!", min_size=1, max_size=10),
)
def test_strength_is_what_fnmatch_says(files: list[str], scope_text: str) -> None:
    """strength() equals its definition over fnmatch, whatever glob characters the scope holds."""
    expected = 0
    if not scope.is_component(scope_text):
        prefix = scope_text.rstrip("/") + "/" if "/" in scope_text else None
        glob = bool(scope.GLOB_CHARS & set(scope_text))
        for path in files:
            if path == scope_text:
                expected = WEIGHTS["scope_exact"]
                break
            if glob and fnmatchcase(path, scope_text):
                expected = max(expected, WEIGHTS["scope_glob"])
            elif prefix is not None and path.startswith(prefix):
                expected = max(expected, WEIGHTS["scope_prefix"])
    assert scope.strength(files, scope_text, WEIGHTS) == expected


def test_examples() -> None:
    cases = [
        ("src/a/core.py", "src/*/core.py", True),
        ("src/a/b/core.py", "src/*/core.py", True),  # * crosses /, as in fnmatch
        ("src/core.py", "src/*/core.py", False),
        ("src/api/x.py", "src/api/*.py", True),
        ("src/api/x.pyc", "src/api/*.py", False),
        ("aXbXb", "a*b*b", True),
        ("ab", "a*b*b", False),
        ("abab", "*ab*ab*", True),
        ("", "*", True),
    ]
    for path, pattern, want in cases:
        assert fnmatchcase(path, pattern) is want
        assert scope.star_match(path, pattern.split("*")) is want
