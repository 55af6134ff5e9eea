"""The store: validated-prefix cache, locking, concurrent appends."""

from __future__ import annotations

import json
import marshal
import subprocess
from pathlib import Path

from .conftest import DOCKET, Repo, rec


def cache_files(repo: Repo) -> list[Path]:
    return sorted(Path(repo.env["XDG_CACHE_HOME"]).glob("docket-git/prefix/*.marshal"))


def test_cache_is_written_and_used_for_appends(repo: Repo) -> None:
    repo.ok("claim", "one")
    (cache,) = cache_files(repo)
    data = marshal.loads(cache.read_bytes())
    assert data["length"] == repo.ledger.stat().st_size
    assert data["max_seq"] == 1
    # A cache whose digest matches is trusted for the prefix: a forged maximum shows it is used.
    data["max_seq"] = 50
    cache.write_bytes(marshal.dumps(data))
    assert repo.ok("claim", "two").out.startswith("c51 ")


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


def test_corrupt_cache_is_ignored(repo: Repo) -> None:
    repo.ok("claim", "one")
    (cache,) = cache_files(repo)
    for garbage in (b"{garbage", marshal.dumps([1, 2]), marshal.dumps({"version": "2/py0.0"})):
        cache.write_bytes(garbage)
        assert repo.ok("list").out  # read as if there were no cache
    assert repo.ok("claim", "two").out.startswith("c2 ")
    assert marshal.loads(cache.read_bytes())["max_seq"] == 2


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


def _index_facts(snap) -> tuple:
    i = snap.index
    return (dict(i.lines), i.retired, i.retired_at, i.max_seq, i.count, snap.records, snap.valid_length)


def test_a_rewritten_tail_revalidates_from_the_last_matching_checkpoint(repo: Repo, monkeypatch) -> None:
    """A branch switch keeps the ledger's start: the cache's checkpoints spare re-validating it."""
    from docket_git.ledger import canonical, store

    records = [rec(f"c{i}") for i in range(1, 65)]
    records[40] = rec("c41", supersedes=["c3"])
    main = b"".join(canonical.line(r) for r in records)
    repo.ledger.write_bytes(main)
    repo.ok("list")  # fills the cache, with checkpoints
    (cache,) = cache_files(repo)
    payload = marshal.loads(cache.read_bytes())
    assert len(payload["checkpoints"]) >= 4
    # The other branch shares the first 50 records, then differs.
    other = b"".join(canonical.line(r) for r in [*records[:50], rec("c70", text="other branch"), rec("c71")])
    repo.ledger.write_bytes(other)
    monkeypatch.setenv("XDG_CACHE_HOME", repo.env["XDG_CACHE_HOME"])
    cached = store.parse(repo.ledger, other)
    fresh = store.parse(repo.ledger, other, use_cache=False)
    assert _index_facts(cached) == _index_facts(fresh)
    assert 0 < cached.hashed[0] < len(other)  # resumed at a checkpoint inside the shared part
    # Proof the checkpoint's index was used: a retirement forged into the cache before it shows.
    repo.ledger.write_bytes(main)
    repo.ok("list")
    payload = marshal.loads(cache.read_bytes())
    payload["retired"]["c5"] = 2
    cache.write_bytes(marshal.dumps(payload))
    repo.ledger.write_bytes(other)
    result = repo.docket("claim", "retire c5", "--supersedes", "c5")
    assert result.code == 1 and "c5' is already retired" in result.err


def test_a_shorter_or_unrelated_ledger_reads_as_without_a_cache(repo: Repo) -> None:
    from docket_git.ledger import canonical

    records = [rec(f"c{i}") for i in range(1, 40)]
    repo.ledger.write_bytes(b"".join(canonical.line(r) for r in records))
    repo.ok("list")
    repo.ledger.write_bytes(b"".join(canonical.line(r) for r in records[:7]))  # an older state
    assert repo.ok("claim", "next").out.startswith("c8 ")
    repo.ledger.write_bytes(canonical.line(rec("c1", text="a different start")))
    assert repo.ok("claim", "fresh").out.startswith("c2 ")
