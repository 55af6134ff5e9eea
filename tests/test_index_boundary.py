"""The ledger index's boundary: no SQL outside ``docket_git/ledger/index/`` names one of its tables.

Code elsewhere asks the package's API (``ledger.index``) for what it needs;
the SQL that knows the tables' shape lives in the package alone. Read from
the source files, as tests/test_layout.py reads imports.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import docket_git
from docket_git.ledger import index

PACKAGE = Path(docket_git.__file__).parent
INSIDE = PACKAGE / "ledger" / "index"

#: Files whose SQL names a table of the same name that is not the index's, or SQL a user types.
ELSEWHERE = {
    "typed/api.py": "a typed ledger's own projection database has a records table",
    "typed/strict.py": "a typed ledger's own projection database has a records table",
    "typed/replay.py": "a typed ledger's own projection database has a records table",
    "cli/sql.py": "help text: the SQL a user gives docket sql",
    "cli/examples.py": "help text: the SQL a user gives docket sql",
}

#: SQL naming a table: after FROM, JOIN, INTO, UPDATE or TABLE (the project writes SQL keywords in capitals).
NAMES_TABLE = re.compile(
    r"\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+(?:main\.)?(" + "|".join(index.TABLE_NAMES) + r")\b(?![\w.])"
)


def faults_in(source: str, label: str) -> list[str]:
    """Each string constant of a module's source (f-string parts too) that names an index table in SQL."""
    found = []
    for node in ast.walk(ast.parse(source, label)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            for match in NAMES_TABLE.finditer(node.value):
                found.append(f"{label}:{node.lineno}: names the index's {match.group(1)} table")
    return found


def test_no_sql_outside_the_index_package_names_its_tables() -> None:
    faults = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if INSIDE in path.parents:
            continue
        label = path.relative_to(PACKAGE).as_posix()
        if label in ELSEWHERE:
            continue
        faults.extend(faults_in(path.read_text(), label))
    assert not faults, "ask docket_git.ledger.index for it instead:\n" + "\n".join(faults)


def test_the_exceptions_still_exist() -> None:
    for label in ELSEWHERE:
        assert (PACKAGE / label).exists(), f"{label} is gone: drop it from ELSEWHERE"


def test_the_checker_sees_sql_that_names_an_index_table() -> None:
    bad = (
        'rows = conn.execute("SELECT id FROM records WHERE seq = ?", (n,))\n'
        'extra = f"SELECT p.target FROM temp.{t} h CROSS JOIN prerequisites p ON p.source = h.seq"\n'
        'ok = "the records from the index"\n'
        'own = "SELECT seq FROM temp.hits"\n'
    )
    assert faults_in(bad, "bad.py") == [
        "bad.py:1: names the index's records table",
        "bad.py:2: names the index's prerequisites table",
    ]
    assert set(index.TABLE_NAMES) >= {"records", "relations", "scopes", "blocked_by", "resolved_by", "haystacks"}
