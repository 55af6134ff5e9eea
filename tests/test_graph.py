"""``docket graph --json``: the seed's version-2 projection with the legacy renderer keys."""

from __future__ import annotations

import json
import re
from pathlib import Path

from docket_git.graph import projection

from .conftest import Repo
from .graph_fixture import fixture_records, seed_fixture

LEGACY = ("question", "answer", "cost", "sets", "supports")


def test_graph_json_has_the_seed_keys_for_every_record(repo: Repo) -> None:
    records = seed_fixture(repo)
    payload = repo.ok("graph", "--json").json()
    assert set(payload) == {"version", "entries"}
    assert payload["version"] == 2
    entries = payload["entries"]
    # Every record, retired ones included, in file order.
    assert [e["id"] for e in entries] == [r["id"] for r in records]
    for stored, node in zip(records, entries, strict=True):
        shown = repo.ok("show", stored["id"], "--json").json()
        for key in LEGACY:
            assert key in node, (stored["id"], key)
        # The projection's typed metadata and relation fields, exactly as show --json derives them.
        for key, value in shown.items():
            if key != "supports":
                assert node[key] == value, (stored["id"], key)
        assert node["sets"] == stored["supports"]
        union = list(dict.fromkeys(i for group in stored["supports"] for i in group))
        assert node["supports"] == union
        assert node["question"] == stored["text"]
        assert node["answer"] == (stored.get("choice") or stored["rationale"])
        assert node["cost"] == stored["cost_if_wrong"]
        assert set(node) == set(shown) | {"sets", "question", "answer", "cost"}


def test_graph_json_derived_state(repo: Repo) -> None:
    seed_fixture(repo)
    by_id = {e["id"]: e for e in repo.ok("graph", "--json").json()["entries"]}
    assert by_id["d5"]["supports"] == ["c1", "c2", "c4"]
    assert by_id["d5"]["sets"] == [["c1", "c2"], ["c4"]]
    assert (by_id["q3"]["state"], by_id["q3"]["recorded_state"], by_id["q3"]["resolved_by"]) == (
        "resolved",
        "open",
        ["d5"],
    )
    assert by_id["c4"]["retired_by"] == "c9"
    assert (by_id["d7"]["applicable"], by_id["d7"]["blocked_by"]) == (False, ["d6", "c4"])
    assert by_id["d5"]["answer"] == "Redis"
    assert by_id["c4"]["cost"] == "duplicate charges"


def test_graph_json_empty_and_no_ledger(repo: Repo, bare_repo: Repo) -> None:
    assert repo.ok("graph", "--json").json() == {"version": 2, "entries": []}
    assert bare_repo.ok("graph", "--json").json() == {"version": 2, "entries": []}


def test_graph_json_conflicts_with_out(repo: Repo) -> None:
    result = repo.docket("graph", "--json", "--out", "x.html")
    assert result.code == 2
    assert result.err.startswith("docket: graph --json prints to stdout")
    assert not (repo.path / "x.html").exists()


def test_graph_on_a_broken_ledger_names_the_line_and_changes_nothing(repo: Repo) -> None:
    before = repo.write_ledger([*fixture_records()[:2], "{not json"])
    out = repo.path / "page.html"
    for args in (["graph", "--json"], ["graph", "--out", str(out)], ["export", "--format", "dot"]):
        result = repo.docket(*args)
        assert result.code == 1, args
        assert result.err.startswith("docket: ") and "line 3" in result.err, result.err
        assert "Traceback" not in result.err
        assert repo.ledger.read_bytes() == before
    assert not out.exists()


def test_edges_follow_every_relation() -> None:
    entries = projection.graph(fixture_records())["entries"]
    found = {(e.source, e.relation, e.target, e.group) for e in projection.edges(entries)}
    assert ("d5", "supports", "c1", 1) in found and ("d5", "supports", "c2", 1) in found
    assert ("d5", "supports", "c4", 2) in found
    assert ("d5", "answers", "q3", 0) in found
    assert ("c9", "supersedes", "c4", 0) in found
    assert ("d7", "depends_on", "d6", 0) in found
    # One edge per declared reference, nothing invented.
    declared = sum(
        len([i for g in r["supports"] for i in g]) + len(r["depends_on"]) + len(r["answers"]) + len(r["supersedes"])
        for r in fixture_records()
    )
    assert len(found) == declared
    assert projection.blocked_edges(entries) == {("d7", "d6"), ("d6", "c4")}


def test_graph_json_is_deterministic(repo: Repo) -> None:
    seed_fixture(repo)
    first = repo.ok("graph", "--json").out
    assert first == repo.ok("graph", "--json").out
    json.loads(first)


def test_graph_page_default_location_and_unwritable_out(repo: Repo) -> None:
    seed_fixture(repo)
    before = repo.ledger.read_bytes()
    # By default the page goes to the user cache dir, never into the repository.
    path = repo.ok("graph").out.strip()
    assert path.startswith(repo.env["XDG_CACHE_HOME"]) and path.endswith(".html")
    text = Path(path).read_text(encoding="utf-8")
    assert "/*DOCKET_GRAPH_DATA*/" not in text and '"version":2' in text
    # Nothing in the page reaches for the network: no src/href to anything, a CSP forbidding it.
    assert "default-src 'none'" in text
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert (
        "<\\/script>" not in text and "</script>" not in text.split('id="docket-data">', 1)[1].split("</script>", 1)[0]
    )
    assert not list(repo.path.rglob("*.html"))
    bad = repo.docket("graph", "--out", "/dev/null/page.html")
    assert bad.code == 1 and bad.err.startswith("docket: cannot write /dev/null/page.html")
    assert "Traceback" not in bad.err
    assert repo.ledger.read_bytes() == before
