"""``docket show ID`` reads one line of the ledger, checked against the index, and the long way when it differs."""

from __future__ import annotations

import json

import pytest

from docket_git.ledger import index

from .conftest import Repo, rec


def test_a_line_moved_after_the_proof_is_read_the_long_way(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    repo.write_ledger([rec("c1", "first"), rec("c2", "second")])
    monkeypatch.chdir(repo.path)
    index.open_index(repo.ledger).close()  # built; the next open proves it by stat and reads no bytes
    with index.opened(repo.ledger) as ix:
        assert ix.data is None
        assert index.records_of(ix, ["c2"])[0]["text"] == "second"
        # Another process rewrites the ledger after the index was proven: c2's bytes are elsewhere now.
        repo.write_ledger([rec("c1", "a much longer first record"), rec("c2", "second, rewritten")])
        assert index.records_of(ix, ["c2"])[0]["text"] == "second, rewritten"
        assert ix.conn.execute("SELECT text FROM records WHERE id = 'c2'").fetchone()[0] == "second, rewritten"


def test_show_equals_the_full_projection_for_every_shape(repo: Repo) -> None:
    """Blocked and applicable decisions, resolved and open questions, retired records: fast path == --at path."""
    repo.write_ledger(
        [
            rec("c1", "Premise", state="accepted"),
            rec("q2", "Open question"),
            rec("d3", "Depends on c1", depends_on=["c1"], supports=[["c1"], ["c1"]], answers=["q2"]),
            rec("c4", "Retires c1", state="accepted", supersedes=["c1"]),
            rec("q5", "Answered", scope=["src/"]),
            rec("c6", "Answer\nover two lines ünï", state="accepted", answers=["q5"], pinned=True),
            rec("d7", "Applicable", evidence=[{"ref": "https://x/1", "commit": "abc"}], alternatives=["y"]),
        ]
    )
    views: dict[str, dict] = {}
    for rid in ("c1", "q2", "d3", "c4", "q5", "c6", "d7"):
        for extra in ([], ["--json"]):
            fast = repo.ok("show", rid, *extra).out
            assert fast == repo.ok("show", rid, "--at", "d7", *extra).out, (rid, extra)
        views[rid] = json.loads(repo.ok("show", rid, "--json").out)
    assert (views["d3"]["applicable"], views["d3"]["blocked_by"]) == (False, ["c1"])
    assert (views["q5"]["state"], views["q5"]["resolved_by"]) == ("resolved", ["c6"])
    assert (views["q2"]["state"], views["c1"]["retired_by"]) == ("open", "c4")
