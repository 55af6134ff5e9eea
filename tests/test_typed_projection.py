"""The typed projection cannot be tampered with silently (issue 30 item 4).

The projection is a SQLite file in the user cache that anyone can open with
``sqlite3``. Each test edits it as a user would (chmod it writable, change a
row with the stdlib module) and then runs ``docket ledger query`` / ``check``
as real processes: they must serve the rows the ledger file replays to, with
a one-line ``docket: ...`` notice that the projection was rebuilt.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from .conftest import Repo
from .typed_helpers import declare, ok_op

NOTICE = "was changed outside docket; rebuilt it from .docket/ledgers/findings.jsonl"


@pytest.fixture
def findings(repo: Repo) -> Repo:
    declare(repo)
    ok_op(repo, "findings", {"operation": "insert", "value": {"id": "f1", "severity": "low"}})
    ok_op(repo, "findings", {"operation": "insert", "value": {"id": "f2", "severity": "high"}})
    return repo


def projection(repo: Repo) -> Path:
    return Path(repo.ok("ledger", "path", "findings").out.strip())


def tamper(path: Path, *statements: str) -> None:
    os.chmod(path, 0o644)
    conn = sqlite3.connect(path)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


QUERY = "SELECT key, json_extract(value, '$.severity') FROM state ORDER BY key"
TRUE_ROWS = "key\tjson_extract(value, '$.severity')\nf1\tlow\nf2\thigh\n"


def test_the_projection_and_its_seal_are_read_only(findings: Repo) -> None:
    path = projection(findings)
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    assert stat.S_IMODE(path.with_name(path.name + ".seal").stat().st_mode) == 0o444
    ok_op(findings, "findings", {"operation": "update", "key": "f1", "patch": {"severity": "mid"}})
    assert stat.S_IMODE(path.stat().st_mode) == 0o444  # an append writes it and leaves it read-only
    result = findings.ok("ledger", "query", "findings", QUERY)
    assert "f1\tmid" in result.out and result.err == ""  # docket's own writes are no tampering


def test_an_edited_state_row_is_rebuilt_and_the_true_rows_served(findings: Repo) -> None:
    path = projection(findings)
    tamper(path, 'UPDATE state SET value = \'{"id":"f1","severity":"forged"}\' WHERE key = \'f1\'')
    result = findings.ok("ledger", "query", "findings", QUERY)
    assert result.out == TRUE_ROWS
    notices = [line for line in result.err.splitlines() if NOTICE in line]
    assert len(notices) == 1 and notices[0].startswith("docket: the projection of ledger 'findings'")
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    again = findings.ok("ledger", "query", "findings", QUERY)
    assert again.out == TRUE_ROWS and again.err == ""  # rebuilt once, trusted after


def test_check_does_not_report_clean_from_an_edited_projection(findings: Repo) -> None:
    # Rows deleted, then a diagnostic forged: each read replays the file again and says what it holds.
    ok_op(findings, "findings", {"operation": "upsert", "value": {"id": "f3", "severity": "low"}})
    path = projection(findings)
    ledger = findings.path / ".docket" / "ledgers" / "findings.jsonl"
    before = ledger.read_bytes()
    tamper(path, "DELETE FROM state WHERE key = 'f3'", "DELETE FROM records WHERE ordinal = 2")
    result = findings.ok("ledger", "query", "findings", "SELECT count(*) FROM records")
    assert result.out.splitlines()[1] == "3" and NOTICE in result.err
    tamper(path, "INSERT INTO diagnostics (code, line, id, detail) VALUES ('forged', 1, NULL, 'x')")
    check = findings.docket("ledger", "check", "findings")
    assert check.code == 0 and "replays cleanly" in check.out and NOTICE in check.err
    assert ledger.read_bytes() == before  # only the projection is rebuilt


def test_a_removed_seal_or_a_swapped_projection_is_rebuilt(findings: Repo) -> None:
    path = projection(findings)
    seal = path.with_name(path.name + ".seal")
    seal.unlink()
    result = findings.ok("ledger", "query", "findings", QUERY)
    assert result.out == TRUE_ROWS and NOTICE in result.err
    # A copy of the projection as it was at an older state, put back in place (its stat is new).
    old = path.read_bytes()
    ok_op(findings, "findings", {"operation": "delete", "key": "f2"})
    os.chmod(path, 0o644)
    path.write_bytes(old)
    result = findings.ok("ledger", "query", "findings", QUERY)
    assert result.out == "key\tjson_extract(value, '$.severity')\nf1\tlow\n" and NOTICE in result.err


def test_a_touched_ledger_is_proved_current_by_content_without_a_replay(findings: Repo) -> None:
    path = projection(findings)
    ledger = findings.path / ".docket" / "ledgers" / "findings.jsonl"
    inode = path.stat().st_ino
    ledger.write_bytes(ledger.read_bytes())  # same bytes, new mtime and ctime (as a checkout would)
    result = findings.ok("ledger", "query", "findings", QUERY)
    assert result.out == TRUE_ROWS and result.err == ""
    assert path.stat().st_ino == inode  # restamped in place: a rebuild swaps in a new file
    with ledger.open("ab") as handle:  # grown past the old bytes by a record that follows the head
        handle.write(b"not a record\n")
    result = findings.docket("ledger", "check", "findings")
    assert result.code == 1 and "line 3" in result.out and NOTICE not in result.err
