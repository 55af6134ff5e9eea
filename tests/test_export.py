"""``docket export``: every format parsed back (csv module, ``dot -Tjson``, Mermaid's basic grammar)."""

from __future__ import annotations

import csv
import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from docket_git.graph import projection

from .conftest import Repo, rec
from .graph_fixture import fixture_records, seed_fixture


def _current_ids(records: list[dict]) -> list[str]:
    retired = {t for r in records for t in r["supersedes"]}
    return [r["id"] for r in records if r["id"] not in retired]


def _edges(records: list[dict], ids: list[str]) -> set[tuple[str, str, str]]:
    entries = projection.graph(records)["entries"]
    return {(e.source, e.relation, e.target) for e in projection.edges(entries) if e.source in ids}


def test_json_and_jsonl(repo: Repo) -> None:
    records = seed_fixture(repo)
    payload = repo.ok("export", "--format", "json").json()
    assert payload["version"] == 2
    assert [e["id"] for e in payload["entries"]] == _current_ids(records)
    graph = {e["id"]: e for e in repo.ok("graph", "--json").json()["entries"]}
    assert all(e == graph[e["id"]] for e in payload["entries"])
    everything = repo.ok("export", "--format", "json", "--superseded").json()["entries"]
    assert [e["id"] for e in everything] == [r["id"] for r in records]
    lines = repo.ok("export", "-f", "jsonl", "--superseded").out.splitlines()
    assert [json.loads(line) for line in lines] == everything


def test_csv_nodes_and_edges(repo: Repo, tmp_path: Path) -> None:
    records = seed_fixture(repo)
    out = tmp_path / "csv"
    result = repo.ok("export", "--format", "csv", "--out", str(out))
    assert result.out.splitlines() == [str(out / "nodes.csv"), str(out / "edges.csv")]
    with (out / "nodes.csv").open(newline="") as f:
        nodes = list(csv.DictReader(f))
    ids = _current_ids(records)
    assert [n["id"] for n in nodes] == ids
    by_id = {n["id"]: n for n in nodes}
    stored = {r["id"]: r for r in records}
    for rid in ids:
        assert by_id[rid]["text"] == stored[rid]["text"]  # quotes, <, & survive the round trip
        sets = [g.split("&") for g in by_id[rid]["sets"].split(";")] if by_id[rid]["sets"] else []
        assert sets == stored[rid]["supports"]
    assert (by_id["d7"]["applicable"], by_id["d7"]["blocked_by"]) == ("false", "d6;c4")
    assert (by_id["q3"]["state"], by_id["q3"]["recorded_state"]) == ("resolved", "open")
    with (out / "edges.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert {(r["source"], r["relation"], r["target"]) for r in rows} == _edges(records, ids)
    assert {r["set"] for r in rows if r["source"] == "d5" and r["relation"] == "supports"} == {"1", "2"}


def test_csv_needs_a_directory(repo: Repo, tmp_path: Path) -> None:
    seed_fixture(repo)
    result = repo.docket("export", "--format", "csv")
    assert result.code == 2 and result.err.startswith("docket: --format csv writes nodes.csv and edges.csv")
    afile = tmp_path / "afile"
    afile.write_text("keep")
    result = repo.docket("export", "--format", "csv", "--out", str(afile))
    assert result.code == 2 and "is a file" in result.err
    assert afile.read_text() == "keep"


def test_bad_format_is_a_usage_error(repo: Repo) -> None:
    result = repo.docket("export", "--format", "svg")
    assert result.code == 2
    assert result.err == "docket: --format must be one of json, jsonl, csv, mermaid, dot; got 'svg'\n"


NODE_RE = re.compile(r'^    ([cdq]\d+)(\(\["|\["|\{\{")(.*)("\]\)|"\]|"\}\})$')
EDGE_RE = re.compile(r"^    ([cdq]\d+) (-->|-\.->|==>)\|([^|\"]+)\| ([cdq]\d+)$")
CLASSDEF_RE = re.compile(r"^    classDef [a-z]+ [a-z-]+:[^;]+$")
CLASS_RE = re.compile(r"^    class ([cdq]\d+(?:,[cdq]\d+)*) ([a-z]+)$")
LINKSTYLE_RE = re.compile(r"^    linkStyle (\d+(?:,\d+)*) .+$")


def _unmermaid(text: str) -> str:
    assert not re.search(r"#\w+;", text), "Mermaid would take this for one of its entity codes"
    return html.unescape(text)


def parse_mermaid(text: str) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    """Nodes (ID -> label) and edges of a flowchart, refusing any line outside the basic grammar."""
    lines = text.splitlines()
    assert lines[0] == "flowchart LR"
    nodes: dict[str, str] = {}
    edges: list[tuple[str, str, str]] = []
    links = 0
    for line in lines[1:]:
        if m := NODE_RE.match(line):
            shape = {'(["': "claim", '["': "decision", '{{"': "question"}[m.group(2)]
            assert shape == {"c": "claim", "d": "decision", "q": "question"}[m.group(1)[0]]
            assert '"' not in m.group(3)
            nodes[m.group(1)] = _unmermaid(m.group(3))
        elif m := EDGE_RE.match(line):
            assert m.group(1) in nodes and m.group(4) in nodes, line
            edges.append((m.group(1), m.group(3), m.group(4)))
            links += 1
        elif m := CLASS_RE.match(line):
            assert set(m.group(1).split(",")) <= set(nodes), line
        elif m := LINKSTYLE_RE.match(line):
            assert all(int(i) < links for i in m.group(1).split(","))
        else:
            assert CLASSDEF_RE.match(line), f"not basic flowchart grammar: {line!r}"
    return nodes, edges


def test_mermaid_parses_and_draws_every_current_record(repo: Repo) -> None:
    records = seed_fixture(repo)
    nodes, edges = parse_mermaid(repo.ok("export", "--format", "mermaid").out)
    ids = _current_ids(records)
    stored = {r["id"]: r for r in records}
    # Every current record; c4 (retired) appears only as context because d5 and d6 cite it.
    assert set(nodes) == {*ids, "c4"}
    for rid in ids:
        assert nodes[rid].endswith(stored[rid]["text"][:39].rstrip()) or stored[rid]["text"][:30] in nodes[rid]
    assert 'Postgres "is" faster <b>' in nodes["c8"]
    labels = {"supports": "because", "depends_on": "depends on", "answers": "answers", "supersedes": "supersedes"}
    want = {(s, labels[r], t) for s, r, t in _edges(records, ids) if not (s == "d5" and r == "supports")}
    want |= {("d5", "because, set 1", "c1"), ("d5", "because, set 1", "c2"), ("d5", "because, set 2", "c4")}
    assert set(edges) == want


def _need(tool: str) -> str:
    found = shutil.which(tool)
    if found is None:
        if os.environ.get("REQUIRE_TEST_TOOLS"):
            pytest.fail(f"{tool} is missing; .ci/run installs it (apt-get install graphviz chromium)")
        pytest.skip(f"{tool} is not installed")
    return found


def test_dot_renders_with_graphviz(repo: Repo, tmp_path: Path) -> None:
    dot = _need("dot")
    records = seed_fixture(repo)
    out = tmp_path / "ledger.dot"
    assert repo.ok("export", "--format", "dot", "--out", str(out)).out == f"{out}\n"
    drawn = subprocess.run([dot, "-Tjson", str(out)], capture_output=True, text=True, check=True)
    assert drawn.stderr == ""
    parsed = json.loads(drawn.stdout)
    names = [o["name"] for o in parsed["objects"]]
    ids = _current_ids(records)
    assert set(names) == {*ids, "c4"}
    labels = {o["name"]: o["label"] for o in parsed["objects"]}
    assert 'Postgres "is" faster <b>' in labels["c8"]
    edges = {(names[e["tail"]], e["label"], names[e["head"]]) for e in parsed["edges"]}
    assert {(s, t) for s, _, t in edges} == {(s, t) for s, _, t in _edges(records, ids)}
    red = {(names[e["tail"]], names[e["head"]]) for e in parsed["edges"] if e.get("color") == "#dc2626"}
    assert red == {("d7", "d6"), ("d6", "c4")}
    svg = subprocess.run([dot, "-Tsvg", str(out)], capture_output=True, text=True, check=True).stdout
    assert svg.count('class="node"') == len(names)


def test_since_a_commit_exports_only_the_new_records(repo: Repo) -> None:
    records = fixture_records()
    repo.write_ledger(records[:5])
    repo.git("add", "-A")
    repo.git("commit", "-qm", "first records")
    repo.git("checkout", "-qb", "topic")
    repo.write_ledger(records)
    repo.git("commit", "-qam", "more")
    payload = repo.ok("export", "--format", "json", "--since", "main").json()
    assert [e["id"] for e in payload["entries"]] == [r["id"] for r in records[5:]]
    nodes, edges = parse_mermaid(repo.ok("export", "--format", "mermaid", "--since", "main").out)
    # New records, plus the older ones they cite (d6 cites d5 and c4) as context.
    assert set(nodes) == {"d6", "d7", "c8", "c9", "q10", "d5", "c4"}
    assert {s for s, _, _ in edges} <= {"d6", "d7", "c9"}
    assert repo.ok("export", "--format", "json", "--since", "topic").json()["entries"] == []
    bad = repo.docket("export", "--since", "no-such-branch")
    assert bad.code == 1
    assert bad.err == (
        "docket: --since no-such-branch names no commit here; give a commit-ish (origin/main, HEAD~3, a tag)\n"
    )


def test_since_needs_a_repository(tmp_path: Path, env: dict[str, str]) -> None:
    from .conftest import DOCKET

    (tmp_path / "plain" / ".docket").mkdir(parents=True)
    (tmp_path / "plain" / ".docket" / "ledger.jsonl").write_text("")
    proc = subprocess.run(
        [DOCKET, "export", "--since", "HEAD"], cwd=tmp_path / "plain", env=env, capture_output=True, text=True
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("docket: --since HEAD: not in a git repository")


FORMULAS = ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1)", "\tTAB first", "\rCR first"]


def test_csv_cells_that_a_spreadsheet_would_run_get_a_leading_quote_and_json_keeps_the_text(
    repo: Repo, tmp_path: Path
) -> None:
    repo.write_ledger([rec(f"c{i}", text) for i, text in enumerate(FORMULAS, start=1)] + [rec("c7", "plain = text")])
    out = tmp_path / "csv"
    repo.ok("export", "--format", "csv", "--out", str(out))
    with (out / "nodes.csv").open(newline="") as f:
        texts = {row["id"]: row["text"] for row in csv.DictReader(f)}
    assert texts == {**{f"c{i}": "'" + t for i, t in enumerate(FORMULAS, start=1)}, "c7": "plain = text"}
    entries = repo.ok("export", "--format", "json").json()["entries"]
    assert [e["text"] for e in entries] == [*FORMULAS, "plain = text"]
    lines = repo.ok("export", "-f", "jsonl").out.splitlines()
    assert [json.loads(line)["text"] for line in lines] == [*FORMULAS, "plain = text"]
    for fmt in ("json", "jsonl"):  # the text as recorded, byte for byte: nothing prefixed
        raw = repo.ok("export", "-f", fmt).out
        assert all(json.dumps(t, ensure_ascii=False)[1:-1] in raw for t in FORMULAS)
        assert "\"'" not in raw
