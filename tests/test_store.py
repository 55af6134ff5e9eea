"""The store and the index as its validated prefix: appends, re-validation, locking, concurrent appends."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from .conftest import DOCKET, Repo, rec


def index_files(repo: Repo) -> list[Path]:
    return sorted(Path(repo.env["XDG_CACHE_HOME"]).glob("docket-git/index/*.sqlite"))


def forge(repo: Repo, *statements: str) -> None:
    """Change the ledger's index behind docket's back (to prove a command trusts it rather than re-validating)."""
    (db,) = index_files(repo)
    conn = sqlite3.connect(db)
    with conn:
        for statement in statements:
            conn.execute(statement)
    conn.close()


def test_appends_validate_against_the_index_not_the_whole_file(repo: Repo) -> None:
    repo.ok("claim", "one")
    (db,) = index_files(repo)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT value FROM meta WHERE key = 'length'").fetchone()[0] == repo.ledger.stat().st_size
    conn.close()
    # The index proves the prefix: a relation forged into it shows an append consults it.
    forge(repo, "INSERT INTO relations VALUES ('c1', 'supersedes', 'c1', NULL)")
    result = repo.docket("claim", "two", "--supersedes", "c1")
    assert result.code == 1 and "c1' is already retired" in result.err


def test_cache_is_never_trusted_over_the_file(repo: Repo) -> None:
    repo.ok("claim", "one")
    repo.ok("claim", "two")
    text = repo.ledger.read_text()
    # Same length, different bytes: the prefix digest no longer matches, so everything is re-validated.
    repo.ledger.write_text(text.replace('"id":"c2"', '"id":"c1"'))
    result = repo.docket("list")
    assert result.code == 1
    assert "line 2: c1: duplicate ID" in result.err


def test_grown_file_validates_the_new_lines(repo: Repo) -> None:
    repo.ok("claim", "one")
    with repo.ledger.open("a") as handle:
        handle.write(json.dumps(rec("c2", supersedes=["q7"])) + "\n")
    result = repo.docket("list")
    assert result.code == 1
    assert result.err == "docket: line 2: c2: supersedes refers to unknown or later ID 'q7'\n"


def test_corrupt_index_is_ignored(repo: Repo) -> None:
    repo.ok("claim", "one")
    (db,) = index_files(repo)
    for garbage in (b"{garbage", b"SQLite format 3\x00" + b"\x00" * 200):
        db.write_bytes(garbage)
        assert repo.ok("list").out  # rebuilt as if there were no index
    assert repo.ok("claim", "two").out.startswith("c2 ")
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM records").fetchone()[0] == 2
    conn.close()


def test_concurrent_appends_get_unique_sequential_ids(repo: Repo) -> None:
    n = 16
    procs = [
        subprocess.Popen(
            [DOCKET, "claim", f"writer {i}", "--scope", "x"],
            cwd=repo.path,
            env=repo.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(n)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    ids = [r["id"] for r in repo.records()]
    assert sorted(ids, key=lambda x: int(x[1:])) == [f"c{i}" for i in range(1, n + 1)]
    assert ids == sorted(ids, key=lambda x: int(x[1:]))
    assert sorted(r["text"] for r in repo.records()) == sorted(f"writer {i}" for i in range(n))
    assert repo.docket("check").code == 0


def test_a_rewritten_tail_revalidates_from_the_last_matching_checkpoint(repo: Repo) -> None:
    """A branch switch keeps the ledger's start: the index's checkpoints spare re-validating it."""
    from docket_git.ledger import canonical

    records = [rec(f"c{i}", text=f"claim {i} " + "x" * 3000) for i in range(1, 65)]
    records[40] = rec("c41", supersedes=["c3"])
    main = b"".join(canonical.line(r) for r in records)
    repo.ledger.write_bytes(main)
    repo.ok("list")  # builds the index, with checkpoints
    (db,) = index_files(repo)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] >= 2
    conn.close()
    # The other branch shares the first 50 records, then differs.
    other = b"".join(canonical.line(r) for r in [*records[:50], rec("c70", text="other branch"), rec("c71")])
    repo.ledger.write_bytes(other)
    # Proof the shared checkpoint's records were not validated again: a retirement forged into the
    # index before it shows. (The forged row belongs to c2, inside the first block.)
    forge(repo, "INSERT INTO relations VALUES ('c2', 'supersedes', 'c5', NULL)")
    result = repo.docket("claim", "retire c5", "--supersedes", "c5")
    assert result.code == 1 and "c5' is already retired" in result.err
    assert repo.ledger.read_bytes() == other  # refused: and the index follows writes only
    repo.ok("list")  # a reader brings the index to the file from the same checkpoint
    conn = sqlite3.connect(db)
    kept = conn.execute("SELECT value FROM meta WHERE key = 'indexed_from'").fetchone()[0]
    conn.close()
    assert 0 < kept <= 50


def test_a_shorter_or_unrelated_ledger_reads_as_without_a_cache(repo: Repo) -> None:
    from docket_git.ledger import canonical

    records = [rec(f"c{i}") for i in range(1, 40)]
    repo.ledger.write_bytes(b"".join(canonical.line(r) for r in records))
    repo.ok("list")
    repo.ledger.write_bytes(b"".join(canonical.line(r) for r in records[:7]))  # an older state
    assert repo.ok("claim", "next").out.startswith("c8 ")
    repo.ledger.write_bytes(canonical.line(rec("c1", text="a different start")))
    assert repo.ok("claim", "fresh").out.startswith("c2 ")


def test_readers_and_writers_at_once_never_deadlock_and_agree(repo: Repo) -> None:
    """Appends hold the ledger's lock and then the index's; readers the same order: no cycle, one answer."""
    import sqlite3

    from docket_git.ledger import canonical, project

    repo.ok("claim", "seed", "--scope", "x")
    procs = []
    for i in range(8):
        for args in (["claim", f"writer {i}", "--scope", "x"], ["context", "--all"], ["list", "--json"]):
            procs.append(
                subprocess.Popen(
                    [DOCKET, *args], cwd=repo.path, env=repo.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
                )
            )
    for proc in procs:
        _, err = proc.communicate(timeout=120)  # a lock-order cycle would hang here
        assert proc.returncode == 0, err
    records = repo.records()
    assert len(records) == 9
    (db,) = index_files(repo)
    repo.ok("list")  # proves (or updates) the index once more
    conn = sqlite3.connect(db)
    indexed = conn.execute("SELECT id, state, line_digest FROM records ORDER BY seq").fetchall()
    conn.close()
    data = repo.ledger.read_bytes()
    lines = data.splitlines()
    assert [(r[0], r[1]) for r in indexed] == [(v["id"], v["state"]) for v in project.project(records)]
    assert [r[2] for r in indexed] == [canonical.sha256(line) for line in lines]


def test_a_long_lived_reader_extends_its_revision_hash_over_appends_and_rehashes_a_rewrite(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``index.revision`` in one process (as ``docket mcp`` runs): after another process appends, the revision is
    the SHA-256 through the last record's line whether this process extends its hash or starts again; a rewrite
    of the bytes it hashed last (their last 4 KB) makes it start again."""
    from docket_git.ledger import canonical, index
    from docket_git.ledger.index import lines

    monkeypatch.setenv("XDG_CACHE_HOME", repo.env["XDG_CACHE_HOME"])
    repo.ok("claim", "first", "--scope", "x")

    def revision() -> str:
        with index.opened(repo.ledger) as ix:
            return index.revision(ix)[0]

    assert revision() == canonical.sha256(repo.ledger.read_bytes())
    repo.ok("claim", "second")  # another process: the index follows, the filed revision goes
    assert revision() == canonical.sha256(repo.ledger.read_bytes())
    assert lines._hashed[repo.ledger][0] == repo.ledger.stat().st_size  # carried to the new end
    data = repo.ledger.read_bytes()
    repo.ledger.write_bytes(data.replace(b'"text":"first"', b'"text":"fIrst"'))  # same length, other bytes
    repo.ok("claim", "third")
    assert revision() == canonical.sha256(repo.ledger.read_bytes())
