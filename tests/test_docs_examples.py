"""Docs that cannot rot: every ``console`` example on a page marked ``<!-- examples: run -->`` runs here.

A page's examples run in order in one fresh temporary directory (so ``cd``
and earlier records carry over), as ``bash -c`` with docket on PATH and an
isolated git and docket environment. Each ``$ command`` line's shown output
(stdout and stderr, as a terminal shows them) must match what it prints:
``...`` inside a line stands for any text, a line of just ``...`` for any
number of lines. A command must exit 0 unless its output ends with
``[exit N]``.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MARK = "<!-- examples: run -->"
EXIT_RE = re.compile(r"^\[exit (\d+)\]$")


@dataclass
class Example:
    """One ``$ command`` and the output shown under it."""

    page: str
    line: int
    command: str
    expected: list[str]


def marked_pages() -> list[Path]:
    """README.md and docs/*.md pages that opted in with the marker."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [p for p in pages if MARK in p.read_text(encoding="utf-8")]


def examples(text: str, page: str = "") -> list[Example]:
    """The console examples of a Markdown text, in order."""
    out: list[Example] = []
    inside = False
    current: Example | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not inside:
            inside = line.strip() == "```console"
            continue
        if line.strip() == "```":
            inside = False
            current = None
            continue
        if current is not None and current.command.endswith("\\") and not current.expected:
            current.command = current.command[:-1] + " " + line.strip()
        elif line.startswith("$ "):
            current = Example(page, number, line[2:], [])
            out.append(current)
        elif current is not None:
            current.expected.append(line)
        else:
            raise AssertionError(f"{page}:{number}: console block text before any '$ ' command: {line!r}")
    return out


def _line_matches(pattern: str, line: str) -> bool:
    parts = [re.escape(p) for p in pattern.rstrip().split("...")]
    return re.fullmatch(".*".join(parts), line.rstrip()) is not None


def matches(expected: list[str], actual: list[str]) -> bool:
    """True when actual output lines fit the shown lines (with ``...`` wildcards)."""
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head.strip() == "...":
        return any(matches(rest, actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and _line_matches(head, actual[0]) and matches(rest, actual[1:])


def run_page(page: Path, workdir: Path, env: dict[str, str]) -> list[str]:
    """Run a page's examples; the mismatches, each with the page line and both outputs."""
    failures: list[str] = []
    cwd = workdir
    where = workdir / ".cwd"
    for ex in examples(page.read_text(encoding="utf-8"), page.name):
        expected = list(ex.expected)
        while expected and not expected[-1].strip():
            expected.pop()
        code = 0
        if expected and (m := EXIT_RE.match(expected[-1].strip())):
            code = int(m.group(1))
            expected.pop()
        script = f"cd {str(cwd)!r} || exit 99\n{ex.command}\n__rc=$?\npwd > {str(where)!r}\nexit $__rc\n"
        proc = subprocess.run(
            ["bash", "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120
        )
        actual = proc.stdout.decode().splitlines()
        if where.exists():
            cwd = Path(where.read_text().strip())
        if proc.returncode != code or not matches(expected, actual):
            failures.append(
                f"{page.name}:{ex.line}: $ {ex.command}\n  exit {proc.returncode} (want {code})\n"
                "  shown:\n"
                + "".join(f"    {x}\n" for x in expected)
                + "  printed:\n"
                + "".join(f"    {x}\n" for x in actual)
            )
    return failures


@pytest.mark.parametrize("page", marked_pages(), ids=lambda p: p.name)
def test_page_examples_print_what_the_page_shows(page: Path, tmp_path: Path, env: dict[str, str]) -> None:
    work = tmp_path / "work"
    work.mkdir()
    env = {**env, "DOCKET_AUTHOR": "alice", "COLUMNS": "100", "NO_COLOR": "1"}
    assert examples(page.read_text(encoding="utf-8")), f"{page.name} is marked but has no console example"
    failures = run_page(page, work, env)
    assert not failures, "\n".join(failures)


def test_the_readme_quickstart_graph_sessions_and_docket_pages_are_checked() -> None:
    names = {p.name for p in marked_pages()}
    assert {"README.md", "quickstart.md", "coming-from-docket.md", "graph.md", "sessions.md"} <= names


def test_the_matcher_can_fail() -> None:
    assert matches(["a ... c", "...", "z"], ["a b c", "x", "y", "z"])
    assert matches(["..."], [])
    assert not matches(["a"], ["b"])
    assert not matches(["a"], ["a", "extra"])
    assert not matches(["a ... c"], ["a b d"])
    parsed = examples("```console\n$ echo one \\\n  two\none two\n$ true\n```\n```sh\n$ not run\n```\n")
    assert [(e.command, e.expected) for e in parsed] == [("echo one  two", ["one two"]), ("true", [])]
