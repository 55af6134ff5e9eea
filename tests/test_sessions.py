"""`docket session ...` through the real console script in real git repositories."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import DOCKET, Repo

GOLDEN = Path(__file__).parent / "golden" / "sessions"
ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00")
NAME = re.compile(r"^\d{4}-\d{2}-\d{2}-\d{2}-\d{2}(\.\d{2}(\.\d{2})?)?-demo\.md$")
PREFLIGHT = (
    'docket: Pre-flight Context Map error: Step {n} references "Step {m} output" but Step {m} is not present in the '
    "ledger and not declared in the workflow. Likely typo in the Context Map definition.\n"
)


def init(repo: Repo, *extra: str, project: str = "demo") -> Path:
    """A new session file in the repository's context-ledger/."""
    out = repo.ok("session", "init", "--system", "sys", "--workflow", "wf", "--project", project, *extra).out
    path = Path(out.strip())
    assert path.is_file()
    return path


def write(repo: Repo, step: str, output: str, *extra: str, status: str = "completed", agent: str = "agent-a"):
    return repo.docket(
        "session", "write", "--step", step, "--agent", agent, "--status", status, "--input", f"in {step}",
        "--output", output, *extra,
    )  # fmt: skip


def normalized(path: Path) -> str:
    return ISO.sub("{ISO}", path.read_text())


@pytest.fixture
def session(repo: Repo) -> tuple[Repo, Path]:
    (repo.path / "context-ledger").mkdir()
    return repo, init(repo, "--steps", "0,1,2,3")


# -- init and write: the exact format ---------------------------------------------------


def test_init_writes_the_seed_frontmatter(repo: Repo):
    path = init(repo, "--ledger-dir", "context-ledger", "--create-dir", "--target-dir", "out/", "--mode", "architect")
    assert path.parent == repo.path / "context-ledger"
    assert NAME.match(path.name)
    assert normalized(path) == (GOLDEN / "init.md").read_text()
    created = re.search(r"^created: (.*)$", path.read_text(), re.M)[1]
    assert path.name.startswith(created[:16].replace("T", "-").replace(":", "-"))


def test_write_appends_the_seed_blocks_and_a_delta_reaudit(session):
    repo, path = session
    assert write(repo, "0", "plain text output", "--reasoning-trace", "<sys-eval>why</sys-eval>").code == 0
    first = write(repo, "1", '{"rules": 2, "warnings": ["missing field"]}', "--metrics", '{"tokens": 1200}')
    assert first.code == 0, first.err
    again = write(repo, "1", '{"rules": 4, "passed": true}', "--metrics", '{"tokens": 900}', agent="agent-b")
    assert again.code == 0, again.err
    assert again.out == f"{path}:65: Step 1 re-audit\n"
    assert write(repo, "S1", "done", "--total", "9", status="pending").code == 0
    assert normalized(path) == (GOLDEN / "write.md").read_text()
    stamps = ISO.findall(path.read_text())
    assert re.search(r"^last_updated: (.*)$", path.read_text(), re.M)[1] == max(stamps)
    assert repo.ok("check").out.endswith("docket: context-ledger/ reads cleanly, 1 session file\n")


def test_text_options_read_files_and_stdin(session):
    repo, path = session
    (repo.path / "out.json").write_text('{"answer": 42}\n')
    result = repo.docket(
        "session", "write", "--step", "1", "--agent", "a", "--status", "completed",
        "--input", "-", "--output", "@out.json", input="from stdin\n",
    )  # fmt: skip
    assert result.code == 0, result.err
    text = path.read_text()
    assert '### Input received\n\nfrom stdin\n\n### Generated output\n\n{"answer": 42}\n\n' in text
    bad = repo.docket("session", "write", "--step", "2", "--agent", "a", "--status", "completed",
                      "--input", "-", "--output", "-", input="x")  # fmt: skip
    assert bad.code == 2 and bad.err.startswith("docket: --output -: only one option can read stdin")
    assert path.read_text() == text


# -- errors: the seed's messages, exit codes, files untouched ---------------------------------


def test_missing_ledger_dir_is_an_error_unless_create_dir(repo: Repo):
    result = repo.docket("session", "init", "--system", "s", "--workflow", "w", "--project", "demo")
    assert (result.code, result.out, result.err) == (
        1, "", "docket: Directory context-ledger/ not found (pass --create-dir to create it)\n",
    )  # fmt: skip
    result = repo.docket("session", "init", "--system", "s", "--workflow", "w", "--project", "p", "--ledger-dir", "x")
    assert result.err.startswith("docket: Directory x not found")
    assert not (repo.path / "context-ledger").exists() and not (repo.path / "x").exists()
    assert init(repo, "--create-dir").parent.is_dir()


@pytest.mark.parametrize("project", ["a/b", "..", "x..y", "a\\b", ".hidden", ""])
def test_bad_project_names_are_refused(repo: Repo, project: str):
    (repo.path / "context-ledger").mkdir()
    result = repo.docket("session", "init", "--system", "s", "--workflow", "w", "--project", project)
    assert result.code == 2 and result.err.startswith("docket: --project: "), result.err
    assert list((repo.path / "context-ledger").iterdir()) == []


def test_write_and_read_without_init_say_run_init_first(repo: Repo):
    result = write(repo, "1", "out")
    assert (result.code, result.err) == (1, "docket: No active ledger file — run init first\n")
    result = repo.docket("session", "read", "--step-destination", "2", "--context-map", '[{"from_step": 1}]')
    assert (result.code, result.err) == (1, "docket: No active ledger file — run init first\n")
    missing = write(repo, "1", "out", "--file", "nowhere.md")
    assert missing.code == 1 and "nowhere.md not found; run 'docket session init' first" in missing.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--status", "done"), "docket: --status must be one of completed, in_progress, pending, not 'done'"),
        (("--step", "../2"), "docket: --step '../2' must be a step number or identifier like 2 or S1"),
        (("--output", "ok\n### Metadata\n"), "docket: --output line 2 is '### Metadata', which the session file"),
        (("--metrics", "[1]"), 'docket: --metrics must be a JSON object like {"tokens": 1200}'),
        (("--metrics", "{bad"), "docket: --metrics is not valid JSON"),
        (("--output", "  "), "docket: --output is empty; give the text, @FILE or - for stdin"),
    ],
)
def test_bad_write_input_leaves_the_file_byte_identical(session, args, message):
    repo, path = session
    write(repo, "1", "first")
    before = path.read_bytes()
    base = {"--step": "2", "--agent": "a", "--status": "completed", "--input": "i", "--output": "o"}
    base.update(dict(zip(args[::2], args[1::2], strict=True)))
    result = repo.docket("session", "write", *[x for pair in base.items() for x in pair])
    assert result.code == 2 and result.err.startswith(message), result.err
    assert path.read_bytes() == before


def test_a_corrupt_session_file_names_the_line_and_suggests_init(session):
    repo, path = session
    write(repo, "1", "first")
    path.write_text(path.read_text().replace("## [Step 1] — agent-a — completed", "## [Step 1] — agent-a — finished"))
    before = path.read_bytes()
    result = write(repo, "2", "second")
    assert result.code == 1
    assert "line 19: status 'finished' is not one of completed, in_progress, pending" in result.err
    assert "start a new session with 'docket session init'" in result.err
    assert path.read_bytes() == before
    check = repo.docket("check")
    assert check.code == 1 and "line 19: status 'finished'" in check.out


# -- delta re-audits and their replay --------------------------------------------------------


def test_show_replays_the_chain_of_deltas(session):
    repo, path = session
    outputs = [
        '{"criteria": 2, "warnings": ["missing process_name"], "regenerated": false}',
        '{"criteria": 4, "warnings": [], "regenerated": false}',
        '{"criteria": 4, "regenerated": true, "notes": {"by": "rul-X"}}',
    ]
    statuses = ["in_progress", "in_progress", "completed"]
    for n, (output, status) in enumerate(zip(outputs, statuses, strict=True)):
        extra = ("--reasoning-trace", f"trace {n}") if n != 1 else ()
        assert write(repo, "2", output, *extra, status=status, agent=f"auditor-{n}").code == 0
    text = path.read_text()
    assert text.count("## [Step 2 — re-audit] (delta vs. previous audit)") == 2
    assert '- +output.notes: {"by": "rul-X"}' in text and "- -output.warnings (was: [])" in text
    lines = text.split("\n")
    pointers = [int(m) for m in re.findall(r"- Previous audit: line (\d+) of this file", text)]
    assert [lines[n - 1][:12] for n in pointers] == ["## [Step 2] ", "## [Step 2 —"]
    shown = repo.ok("session", "show", str(path), "--step", "2").out
    assert shown.startswith("## [Step 2] — auditor-2 — completed\n\n### Input received\n\nin 2\n\n")
    assert "### Reasoning Trace\n\ntrace 2\n\n" in shown
    body = shown.split("### Generated output\n\n", 1)[1].split("\n\n### Metadata", 1)[0]
    assert json.loads(body) == json.loads(outputs[-1])
    latest = [n for n, line in enumerate(lines, start=1) if line.startswith("## [Step 2 — re-audit]")][-1]
    assert shown.endswith(f"- Step: 2 of 4\n- Re-audits: 2 (latest at line {latest})\n")


def test_rewriting_identical_state_records_no_changes_and_text_outputs_are_replaced(session):
    repo, path = session
    write(repo, "1", "# Plan\n\n- goal: ship")
    write(repo, "1", "# Plan\n\n- goal: ship")
    write(repo, "1", "# Plan v2\n\n- goal: ship it")
    text = path.read_text()
    assert "### Changes\n\n- no changes\n" in text
    assert "- output: replaced (see Generated output)" in text
    shown = repo.ok("session", "show", str(path), "--step", "1").out
    assert "### Generated output\n\n# Plan v2\n\n- goal: ship it\n\n" in shown
    missing = repo.docket("session", "show", str(path), "--step", "7")
    assert missing.code == 1 and missing.err.startswith("docket: Step 7 not found in ledger")


# -- read: context maps -------------------------------------------------------------------------


MARKDOWN = """# Audit

- process_name: Billing
- owners:
  - ana
  - bo
risk: high

### Summary

Two gaps.

#### Detail

Nested stays.

## Appendix

Not in Summary."""


def test_read_complete_and_partial_from_json_and_markdown(session):
    repo, _path = session
    write(repo, "1", '{"process_name": "Billing", "score": 7, "gaps": ["a", "b"]}', "--reasoning-trace", "t1")
    write(repo, "2", MARKDOWN)
    rules = [
        {"from_step": 1, "mode": "partial", "fields": ["gaps", "process_name", "absent"]},
        {"from_step": 2, "mode": "partial", "fields": ["owners", "RISK", "Summary"]},
        {"from_step": 1, "mode": "complete"},
        {"from_step": 9, "mode": "complete"},
    ]
    result = repo.docket("session", "read", "--step-destination", "3", "--context-map", json.dumps(rules))
    assert result.code == 0
    assert result.err == ("docket: Field 'absent' not found in Step 1 output\ndocket: Step 9 not found in ledger\n")
    parts = result.out.split("### From Step ")
    assert parts[0] == "## Context for Step 3\n\n"
    assert json.loads(parts[1].split("\n\n", 1)[1]) == {"gaps": ["a", "b"], "process_name": "Billing"}
    assert parts[2] == (
        "2 (partial: owners, RISK, Summary) — agent-a — completed\n\n"
        "- owners:\n  - ana\n  - bo\n\nrisk: high\n\n### Summary\n\nTwo gaps.\n\n#### Detail\n\nNested stays.\n\n"
    )
    assert parts[3] == (
        "1 (complete) — agent-a — completed\n\n#### Reasoning Trace\n\nt1\n\n#### Generated output\n\n"
        '{"process_name": "Billing", "score": 7, "gaps": ["a", "b"]}\n'
    )
    (repo.path / "map.json").write_text(json.dumps([{"from_step": 5, "mode": "complete"}]))
    empty = repo.docket("session", "read", "--step-destination", "3", "--context-map", "@map.json")
    assert (empty.code, empty.out, empty.err) == (0, "", "docket: Step 5 not found in ledger\n")


TABLE_HEAD = "| Destination Step | Consumes from | Fields / Sections | Mode |\n|---|---|---|---|\n"

#: A step output shaped as the skill author's workflows write them: nested JSON under ``process``.
NESTED = {
    "process": {"name": "Billing", "constraints": ["EU only", "no PII"], "owner": {"team": "pay"}},
    "score": 7,
}

#: The same in markdown: sections and key lines nested under a heading.
NESTED_MD = """## Process

- name: Billing
- constraints:
  - EU only
  - no PII

## Risks

- name: fraud
"""


def test_read_takes_dotted_paths_into_nested_json_and_markdown(session):
    repo, _ = session
    write(repo, "1", json.dumps(NESTED))
    write(repo, "2", NESTED_MD)
    rules = [
        {"from_step": 1, "mode": "partial", "fields": ["process.name", "process.constraints", "process.owner.team"]},
        {"from_step": 1, "mode": "partial", "fields": ["process.missing", "score.x"]},
        {"from_step": 2, "mode": "partial", "fields": ["Process.constraints", "Risks.name"]},
    ]
    result = repo.docket("session", "read", "--step-destination", "3", "--context-map", json.dumps(rules))
    assert result.code == 0, result.err
    parts = result.out.split("### From Step ")
    assert json.loads(parts[1].split("\n\n", 1)[1]) == {
        "process": {"name": "Billing", "constraints": ["EU only", "no PII"], "owner": {"team": "pay"}}
    }
    assert result.err == (
        "docket: Field 'process.missing' not found in Step 1 output\n"
        "docket: Field 'score.x' not found in Step 1 output\n"
    )
    assert parts[3].split("\n\n", 1)[1] == "- constraints:\n  - EU only\n  - no PII\n\n- name: fraud\n"


def test_read_takes_the_workflow_s_markdown_context_map_table(session):
    repo, _ = session
    write(repo, "1", json.dumps(NESTED), "--reasoning-trace", "t1")
    write(repo, "2", NESTED_MD)
    workflow = (
        "# Workflow\n\nSome prose.\n\n## Context Map\n\n"
        "| Destination Step | Consumes from | Fields / Sections | Mode |\n"
        "|------------------|---------------|-------------------|------|\n"
        "| Step 3 | Step 1 | process.name, process.constraints | partial |\n"
        "| Step 3 | Step 2 | * | complete |\n"
        "| Step 4 | Step 1, Step 3 | `score` | partial |\n"
        "\nMore prose.\n"
    )
    (repo.path / "workflow.md").write_text(workflow)
    from_table = repo.docket("session", "read", "--step-destination", "3", "--context-map", "@workflow.md")
    rules = [
        {"from_step": 1, "mode": "partial", "fields": ["process.name", "process.constraints"]},
        {"from_step": 2, "mode": "complete"},
    ]
    from_json = repo.docket("session", "read", "--step-destination", "3", "--context-map", json.dumps(rules))
    assert from_table.code == 0, from_table.err
    assert (from_table.out, from_table.err) == (from_json.out, from_json.err)
    assert "### From Step 2 (complete)" in from_table.out
    check = repo.docket("session", "check-map", "--context-map", "@workflow.md")
    assert (check.code, check.out) == (0, "docket: context map OK: 4 rule(s) for 2 step(s)\n"), check.err


def test_read_uses_the_replayed_state(session):
    repo, _ = session
    write(repo, "1", '{"score": 7}')
    write(repo, "1", '{"score": 9}')
    rule = json.dumps([{"from_step": 1, "mode": "partial", "fields": ["score"]}])
    out = repo.ok("session", "read", "--step-destination", "2", "--context-map", rule).out
    assert json.loads(out.split("\n\n", 2)[2]) == {"score": 9}


@pytest.mark.parametrize(
    ("map_text", "message"),
    [
        ("[{", "docket: --context-map: context map is not valid JSON"),
        ('[{"from_step": 1, "mode": "some"}]', "docket: --context-map: context map rule 1: mode must be complete"),
        ('[{"from_step": 1, "mode": "partial"}]', "docket: --context-map: context map rule 1: mode partial needs"),
        ('[{"mode": "complete"}]', "docket: --context-map: context map rule 1 has no from_step"),
        ('[{"from_step": 1, "feilds": []}]', "docket: --context-map: context map rule 1: unknown key 'feilds'"),
        ('[{"from_step": 1, "fields": ["a"]}]', "docket: --context-map: context map rule 1 has fields and no mode"),
        (
            TABLE_HEAD + "| Step 2 | Step 1 | a, b | |\n",
            "docket: --context-map: context map table line 3 has fields and no mode",
        ),
        (
            TABLE_HEAD + "| Step 2 | Step 1 | * | partial |\n",
            "docket: --context-map: context map table line 3: mode partial needs",
        ),
        (
            TABLE_HEAD + "| Step 2 | Step 1 | a | some |\n",
            "docket: --context-map: context map table line 3: mode must be complete",
        ),
        (TABLE_HEAD + "| Step 2 | Step 1 | a |\n", "docket: --context-map: context map table line 3 has 3 cells"),
        (
            TABLE_HEAD + "| Step 2 | Step 1? | a | partial |\n",
            "docket: --context-map: context map table line 3: from_step '1?'",
        ),
    ],
)
def test_bad_context_maps_are_usage_errors(session, map_text, message):
    repo, _ = session
    result = repo.docket("session", "read", "--step-destination", "2", "--context-map", map_text)
    assert result.code == 2 and result.err.startswith(message), result.err


# -- pre-flight --------------------------------------------------------------------------------


def test_check_map_accepts_past_current_and_declared_steps(session):
    repo, _ = session
    write(repo, "1", "x")
    maps = {"2": [{"from_step": 1}, {"from_step": 2}], "3": [{"from_step": "3"}, {"from_step": 0}]}
    result = repo.docket("session", "check-map", "--context-map", json.dumps(maps))
    assert result.code == 0, result.err
    assert result.out == "docket: context map OK: 4 rule(s) for 2 step(s)\n"


def test_check_map_names_the_typo(session):
    repo, _ = session
    write(repo, "1", "x")
    maps = {"2": [{"from_step": 1}], "3": [{"from_step": 21}, {"from_step": 2}]}
    result = repo.docket("session", "check-map", "--context-map", json.dumps(maps))
    assert (result.code, result.out, result.err) == (1, "", PREFLIGHT.format(n=3, m=21))
    declared = repo.docket("session", "check-map", "--context-map", json.dumps(maps), "--steps", "1,2,3,21")
    assert declared.code == 0, declared.err
    array = repo.docket("session", "check-map", "--context-map", '[{"from_step": "S4"}]', "--step-destination", "2")
    assert (array.code, array.err) == (1, PREFLIGHT.format(n=2, m="S4"))


# -- load-last and list --------------------------------------------------------------------------


def _header(project: str) -> str:
    return f"---\nsystem: s\nworkflow: w\nproject_name: {project}\ncreated: x\n---\n"


def test_load_last_orders_by_timestamp_across_days(repo: Repo):
    directory = repo.path / "context-ledger"
    directory.mkdir()
    names = {
        "2026-01-09-23-59-demo.md": "old",
        "2026-01-10-00-01-demo.md": "newest day",
        "2026-01-10-00-00-demo.md": "earlier minute",
        "2026-01-10-00-00.30-demo.md": "same minute, later",
        "2026-02-01-00-00-other-demo.md": "another project",
        "2026-03-01-00-00-demo.md.bak": "not a session",
        "notes-demo.md": "not a session",
    }
    for name, marker in names.items():
        (directory / name).write_text(_header("demo") + f"\n<!-- {marker} -->\n")
    out = repo.ok("session", "load-last", "--project", "demo").out
    assert out == (directory / "2026-01-10-00-01-demo.md").read_text()
    (directory / "2026-01-10-00-01.05-demo.md").write_text(_header("demo"))
    assert repo.ok("session", "load-last", "--project", "demo", "--path").out.strip().endswith("00-01.05-demo.md")
    listed = repo.ok("session", "list", "--project", "demo").out.splitlines()
    assert [line.split()[0] for line in listed] == [
        "2026-01-09-23-59-demo.md",
        "2026-01-10-00-00-demo.md",
        "2026-01-10-00-00.30-demo.md",
        "2026-01-10-00-01-demo.md",
        "2026-01-10-00-01.05-demo.md",
    ]


def test_inits_in_one_minute_get_distinct_names_in_creation_order(repo: Repo):
    (repo.path / "context-ledger").mkdir()
    paths = [init(repo) for _ in range(4)]
    assert len(set(paths)) == 4
    assert all(NAME.match(p.name) for p in paths)
    by_project = sorted(paths, key=lambda p: p.name)
    created = [re.search(r"^created: (.*)$", p.read_text(), re.M)[1] for p in paths]
    assert created == sorted(created)
    # Within one minute the suffix keeps lexical order equal to creation order.
    minutes = {p.name[:16] for p in paths}
    if len(minutes) == 1:
        assert by_project == paths
    last = repo.ok("session", "load-last", "--project", "demo", "--path").out.strip()
    assert last == str(paths[-1])


def test_load_last_with_no_history_is_not_an_error(repo: Repo):
    (repo.path / "context-ledger").mkdir()
    result = repo.docket("session", "load-last", "--project", "fresh")
    assert (result.code, result.out, result.err) == (
        0,
        "",
        "docket: No previous context ledger found for project 'fresh'\n",
    )


def test_list_shows_step_counts_and_status(session):
    repo, path = session
    write(repo, "1", "a")
    write(repo, "2", "b", status="in_progress")
    other = init(repo, project="other")
    assert repo.ok("session", "list").out == (
        f"{path.name}  demo  2 steps  in_progress (Step 2)\n{other.name}  other  0 steps  empty\n"
    )
    write(repo, "2", "b", "--file", str(path))  # init made "other" the active session
    # Every step written is completed, but the session declared 0,1,2,3: steps 0 and 3 never came.
    assert repo.ok("session", "list").out.splitlines()[0] == (
        f"{path.name}  demo  2 steps  incomplete (never written: Step 0, Step 3)"
    )
    rows = [json.loads(line) for line in repo.ok("session", "list", "--json").out.splitlines()]
    assert [(r["project"], r["steps"], r["status"]) for r in rows] == [("demo", 2, "incomplete"), ("other", 0, "empty")]
    assert rows[0]["never_written"] == ["0", "3"] and "never_written" not in rows[1]
    write(repo, "0", "z", "--file", str(path))
    write(repo, "3", "c", "--file", str(path))
    assert repo.ok("session", "list").out.splitlines()[0] == f"{path.name}  demo  4 steps  completed"


# -- legacy single-file mode ----------------------------------------------------------------------


def test_legacy_mode_uses_one_file_in_the_target_dir(repo: Repo):
    (repo.path / "out").mkdir()
    first = repo.ok("session", "init", "--system", "s", "--workflow", "w", "--project", "p", "--target-dir", "out")
    assert first.out.strip() == str(repo.path / "out" / "context-ledger.md")
    assert "target_dir: out\n" in (repo.path / "out" / "context-ledger.md").read_text()
    assert write(repo, "1", "x").code == 0
    before = (repo.path / "out" / "context-ledger.md").read_bytes()
    again = repo.ok("session", "init", "--system", "s", "--workflow", "w", "--project", "p", "--target-dir", "out")
    assert again.out == first.out and "legacy single-file mode" in again.err
    assert (repo.path / "out" / "context-ledger.md").read_bytes() == before
    result = repo.docket("session", "load-last", "--project", "p", "--target-dir", "out")
    assert result.code == 2
    assert result.err.startswith("docket: load-last is not available in legacy single-file mode")
    missing = repo.docket("session", "init", "--system", "s", "--workflow", "w", "--project", "p", "--target-dir", "no")
    assert (missing.code, missing.err) == (1, "docket: Directory no not found (pass --create-dir to create it)\n")


def test_a_v1_file_gets_its_frontmatter_migrated_on_first_write(repo: Repo):
    directory = repo.path / "context-ledger"
    directory.mkdir()
    path = directory / "2026-01-01-10-00-demo.md"
    path.write_text(
        "---\nsystem: s\nworkflow: w\nproject_name: demo\ncreated: 2026-01-01T10:00:00Z\n"
        "last_updated: 2026-01-01T10:00:00Z\n---\n\n<!-- Context Ledger — append-only. -->\n"
    )
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "v1.0 session")
    assert write(repo, "1", "x", "--file", str(path)).code == 0
    text = path.read_text()
    assert text.startswith("---\nschema_version: 1.1\nsystem: s\n")
    assert "\n## [Step 1] — agent-a — completed\n" in text
    assert ISO.search(text.split("last_updated: ")[1].split("\n")[0])
    repo.git("add", "-A")
    commit = subprocess.run(["git", "commit", "-q", "-m", "step"], cwd=repo.path, env=repo.env, capture_output=True)
    assert commit.returncode == 0, commit.stderr


# -- git: structure and append-only in the pre-commit check -------------------------------------


def _commit(repo: Repo) -> subprocess.CompletedProcess:
    repo.git("add", "-A")
    proc = subprocess.run(
        ["git", "commit", "-q", "-m", "c"], cwd=repo.path, env=repo.env, capture_output=True, text=True
    )
    proc.stdout += proc.stderr  # the hook's report may go to either
    return proc


def test_precommit_lets_sessions_grow_and_blocks_edits_and_deletion(session):
    repo, path = session
    write(repo, "1", "first")
    assert _commit(repo).returncode == 0
    write(repo, "1", "second")  # a re-audit: appended, and last_updated moved
    assert _commit(repo).returncode == 0
    rel = f"context-ledger/{path.name}"
    path.write_text(path.read_text().replace("in 1\n", "in one\n"))
    blocked = _commit(repo)
    assert blocked.returncode != 0
    assert f"{rel} (staged) line 23: a committed line was changed or deleted" in blocked.stdout
    repo.git("checkout", "HEAD", "--", rel)
    path.unlink()
    blocked = _commit(repo)
    assert blocked.returncode != 0 and f"{rel} is staged for deletion" in blocked.stdout
    repo.git("checkout", "HEAD", "--", rel)
    broken = path.read_text() + "\n---\n\n<!-- separator -->\n\n## Step 2 by hand\n"
    path.write_text(broken)
    blocked = _commit(repo)
    assert blocked.returncode != 0 and "block header '## Step 2 by hand' is neither" in blocked.stdout


def test_sessions_on_two_branches_merge_as_two_files(session):
    repo, first = session
    write(repo, "1", "main's step")
    assert _commit(repo).returncode == 0
    repo.git("checkout", "-q", "-b", "topic")
    second = init(repo, project="topic-work")
    write(repo, "1", "topic's step", "--file", str(second))
    assert _commit(repo).returncode == 0
    repo.git("checkout", "-q", "main")
    write(repo, "2", "more on main", "--file", str(first))
    assert _commit(repo).returncode == 0
    repo.git("merge", "-q", "--no-edit", "topic")
    assert second.is_file() and "more on main" in first.read_text()
    assert repo.ok("check").out.endswith("reads cleanly, 2 session files\n")


# -- safety: symlinks, concurrent writers ------------------------------------------------------------


def test_symlinked_session_dir_and_file_are_refused(repo: Repo, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo.path / "context-ledger").symlink_to(outside)
    result = repo.docket("session", "init", "--system", "s", "--workflow", "w", "--project", "demo")
    assert result.code == 1 and "is a symlink; docket does not follow symlinks" in result.err
    assert list(outside.iterdir()) == []
    (repo.path / "context-ledger").unlink()
    (repo.path / "context-ledger").mkdir()
    real = init(repo)
    target = outside / "target.md"
    target.write_bytes(real.read_bytes())
    link = repo.path / "context-ledger" / "2026-01-01-00-00-demo.md"
    link.symlink_to(target)
    result = write(repo, "1", "x", "--file", str(link))
    assert result.code == 1 and "session file" in result.err and "symlink" in result.err
    assert target.read_bytes() == real.read_bytes()


def test_two_processes_writing_at_once_lose_and_tear_nothing(session):
    repo, path = session
    script = (
        'for i in 1 2 3 4 5 6 7 8; do "$0" session write --step "$1$i" --agent "$1" --status completed '
        '--input "from $1" --output "$(printf "line %s\\n" $(seq 1 40))" || exit 1; done'
    )
    env = dict(repo.env, DOCKET_SESSION_FILE=str(path))
    procs = [
        subprocess.Popen(["sh", "-c", script, DOCKET, who], cwd=repo.path, env=env, stdout=subprocess.DEVNULL)
        for who in ("A", "B")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    text = path.read_text()
    for who in ("A", "B"):
        for i in range(1, 9):
            assert text.count(f"## [Step {who}{i}] — {who} — completed\n") == 1
    assert text.count("line 40\n") == 16
    assert repo.ok("check").code == 0
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    assert os.listdir(path.parent) == [path.name]


# -- the bridge to the ledger -------------------------------------------------------------------------


def test_record_adds_a_claim_scoped_to_the_session_file(session):
    repo, path = session
    assert write(repo, "1", "x").code == 0
    assert repo.records() == []
    result = write(repo, "1", "y", "--record", agent="reviewer")
    assert result.code == 0, result.err
    (record,) = repo.records()
    rel = f"context-ledger/{path.name}"
    assert record["kind"] == "claim"
    assert record["text"] == "Step 1 by reviewer: completed (re-audit)"
    assert record["scope"] == [rel]
    line = result.out.splitlines()[0].split(":")[1]
    assert record["evidence"] == [{"ref": f"{rel}:{line}"}]
    assert result.out.splitlines()[1] == "c1  unassessed  Step 1 by reviewer: completed (re-audit)"
