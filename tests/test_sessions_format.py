"""The session file format as pure functions: blocks, delta re-audits and replay, context maps, append-only."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docket_git.sessions import check, contextmap, fmt
from tests.hypothesis_helpers import profile

HEAD = fmt.new_file({"schema_version": "1.1", "system": "s", "workflow": "w", "project_name": "p", "created": "t"})


def state(step: str = "1", output: str = "out", **kw) -> fmt.Step:
    base = {"agent": "a", "status": "completed", "input": "in", "timestamp": "t0"}
    base.update(kw)
    return fmt.Step(step=step, output=output, **base)


def chain(*states: fmt.Step) -> str:
    """A file with the first state as a full block and the others as re-audits, as write builds it."""
    text = HEAD + "\n" + fmt.render_block(states[0])
    for new in states[1:]:
        blocks = fmt.parse_blocks(text)
        old, _, line = fmt.replay(blocks, new.step)
        changes, sections = fmt.delta(old, new)
        text += "\n" + fmt.render_reaudit(new.step, changes, sections, new.timestamp, line)
    return text


KEYS = st.sampled_from(["a", "b", "score", "rul-X.c1", "x_y"])
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
OBJECTS = st.dictionaries(KEYS, VALUES, max_size=5)


@profile(30, 300, checks=())
@given(st.lists(OBJECTS, min_size=1, max_size=5), st.lists(st.sampled_from(fmt.STATUSES), min_size=5, max_size=5))
def test_replaying_deltas_rebuilds_every_json_state(outputs, statuses):
    states = [
        state(output=json.dumps(obj), status=statuses[n], timestamp=f"t{n}", trace="r" * (n % 2))
        for n, obj in enumerate(outputs)
    ]
    text = chain(*states)
    blocks = fmt.parse_blocks(text)
    fmt.check_chain(blocks)
    current, count, _ = fmt.replay(blocks, "1")
    assert count == len(states) - 1
    assert json.loads(current.output) == outputs[-1]
    assert (current.status, current.trace, current.timestamp) == (
        statuses[len(outputs) - 1],
        states[-1].trace,
        states[-1].timestamp,
    )


@profile(20, 160, checks=())
@given(
    st.lists(st.text(alphabet="ab #-:\n", min_size=1, max_size=30).map(str.strip).filter(bool), min_size=1, max_size=4)
)
def test_replaying_deltas_rebuilds_text_states(outputs):
    states = [state(output=out, input=f"in {n % 2}") for n, out in enumerate(outputs)]
    current, _, _ = fmt.replay(fmt.parse_blocks(chain(*states)), "1")
    assert (current.output, current.input) == (outputs[-1], states[-1].input)


def test_a_reaudit_points_at_the_latest_block_of_its_step():
    text = chain(state(output="{}"), state(output='{"a": 1}'), state(output='{"a": 2}'))
    blocks = fmt.parse_blocks(text)
    assert [b.previous for b in blocks] == [0, blocks[0].line, blocks[1].line]
    broken = text.replace(f"line {blocks[1].line} of this file", f"line {blocks[0].line} of this file")
    with pytest.raises(fmt.FormatError, match="the step's previous block is at line"):
        fmt.check_chain(fmt.parse_blocks(broken))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("---\n", "", 1), "no frontmatter"),
        (lambda t: t.replace("### Metadata", "### Meta"), "has no '### Metadata' section"),
        (lambda t: t.replace("- Step: 1", "- Step: 2"), "Metadata says '- Step: 2' in a block for Step 1"),
        (lambda t: t.replace("- Timestamp: t0\n", ""), "has no '- Timestamp:' line"),
        (lambda t: t.replace("\n---\n\n<!-- separator", "\n<!-- separator"), "must follow a '---' line"),
        (lambda t: t.replace("-->\n", "-->\nstray\n", 1), "text between the frontmatter and the first block"),
    ],
)
def test_structure_faults_name_their_problem(edit, message):
    text = chain(state())
    assert check.structure_fault(text) is None
    fault = check.structure_fault(edit(text))
    assert fault is not None and message in fault[1]


def test_reserved_lines_are_refused_in_step_text():
    with pytest.raises(fmt.FormatError, match="--output line 3 is '### Generated output'"):
        fmt.check_text("--output", "a\n\n### Generated output\n")
    fmt.check_text("--output", "### Summary\n#### Metadata\n")  # other headings are the writer's


def test_grows_from_allows_appends_and_moving_last_updated_only():
    old = chain(state())
    longer = fmt.set_frontmatter(old, {"last_updated": "later"}) + "\n" + fmt.render_block(state("2"))
    assert check.grows_from(old, longer)
    assert not check.grows_from(old, old.replace("in\n", "edited\n"))
    assert not check.grows_from(old, old.replace("system: s", "system: other"))
    assert not check.grows_from(old, fmt.set_frontmatter(old, {"mode": "express"}))
    v10 = old.replace("schema_version: 1.1\n", "")
    assert check.grows_from(v10, fmt.set_frontmatter(v10, {"last_updated": "x"}))


def test_markdown_fields():
    text = "Intro\nowner: ana\n* **Risk**: high\n- list:\n  - a\n\n  - b\nnext: 1\n## Scope\nin\n### Sub\nx\n## Next\n"
    assert contextmap.markdown_field(text, "owner") == "owner: ana"
    assert contextmap.markdown_field(text, "risk") == "* **Risk**: high"
    assert contextmap.markdown_field(text, "list") == "- list:\n  - a\n\n  - b"
    assert contextmap.markdown_field(text, "scope") == "## Scope\nin\n### Sub\nx"
    assert contextmap.markdown_field(text, "own") is None
    assert contextmap.markdown_field(text, "Intro") is None


def test_json_output_in_a_fence_is_json():
    assert fmt.as_object('```json\n{"a": 1}\n```') == {"a": 1}
    assert fmt.as_object("[1]") is None and fmt.as_object("{not json") is None


def test_preflight_accepts_past_current_and_declared():
    maps = contextmap.parse_maps('{"2": [{"from_step": 1}, {"from_step": 2}], "3": [{"from_step": "S9"}]}', None)
    assert contextmap.preflight(maps, present=["1"], declared=[]) == [contextmap.PREFLIGHT.format(n="3", m="S9")]
    assert contextmap.preflight(maps, present=["1"], declared=["S9"]) == []


@pytest.mark.parametrize(
    ("name", "stamp"),
    [
        ("2026-01-01-10-00-p.md", "2026-01-01-10-00"),
        ("2026-01-01-10-00.07-p.md", "2026-01-01-10-00.07"),
        ("2026-01-01-10-00.07.02-p.md", "2026-01-01-10-00.07.02"),
        ("2026-01-01-10-00-x-p.md", None),
        ("2026-01-01-10-p.md", None),
        ("2026-01-01-10-00-p.md.bak", None),
    ],
)
def test_stamp_of(name, stamp):
    assert fmt.stamp_of(name, "p") == stamp


def test_suffixed_names_sort_after_the_plain_name_of_their_minute():
    names = ["2026-01-01-10-00-p.md", "2026-01-01-10-00.07-p.md", "2026-01-01-10-00.07.02-p.md",
             "2026-01-01-10-00.07.10-p.md", "2026-01-01-10-00.59-p.md", "2026-01-01-10-01-p.md"]  # fmt: skip
    assert sorted(names) == names
