"""The session file format: names, frontmatter, step blocks, delta re-audits and their replay (pure).

A session file is the context-ledger seed's markdown: a frontmatter, the
append-only comment, then blocks, each after the seed's separator. A full
block records a step; a re-audit block records only what changed since the
step's most recent block, and ``replay`` rebuilds the current state.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace

SCHEMA_VERSION = "1.1"
STATUSES = ("completed", "in_progress", "pending")
MODES = ("architect", "express")
APPEND_ONLY = "<!-- Context Ledger — append-only. Do not overwrite previous blocks. -->"
SEPARATOR = "---\n\n<!-- separator -->\n\n"
FRONTMATTER_KEYS = (
    "schema_version",
    "system",
    "workflow",
    "project_name",
    "target_dir",
    "mode",
    "steps",
    "created",
    "last_updated",
)
REQUIRED_KEYS = ("system", "workflow", "project_name", "created")
#: Lines a step's text may not contain: the parser splits blocks and sections on them.
RESERVED_LINES = (
    "### Input received",
    "### Reasoning Trace",
    "### Generated output",
    "### Metrics",
    "### Metadata",
    "### Changes",
    "<!-- separator -->",
)
LEGACY_NAME = "context-ledger.md"

STEP_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: ``YYYY-MM-DD-HH-MM``, then ``.SS`` and ``.SS.NN`` for a second and further session in one minute:
#: ``.`` sorts after ``-``, so within one project lexical order of names stays chronological order.
STAMP_RE = re.compile(r"^\d{4}-\d{2}-\d{2}-\d{2}-\d{2}(?:\.\d{2}(?:\.\d{2})?)?$")
NAME_RE = re.compile(r"^(\d{4}-\d{2}-\d{2}-\d{2}-\d{2}(?:\.\d{2}(?:\.\d{2})?)?)-(.+)\.md$")
HEADER_RE = re.compile(r"^## \[Step (?P<step>[^\]\s]+)\] — (?P<agent>.+) — (?P<status>\S+)$")
REAUDIT_RE = re.compile(r"^## \[Step (?P<step>[^\]\s]+) — re-audit\] \(delta vs\. previous audit\)$")
PREVIOUS_RE = re.compile(r"^- Previous audit: line (\d+) of this file$")
KEY_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


class FormatError(ValueError):
    """A session file or a step's text that does not follow the format; ``line`` is 1-based (0: unknown)."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


# -- names --------------------------------------------------------------------


def check_project(name: str) -> str | None:
    """Why name cannot be a project name (it becomes part of a file name), or None."""
    if not name or not name.strip():
        return "the project name is empty"
    if "/" in name or "\\" in name or "\x00" in name:
        return f"project name {name!r} contains a path separator; use a plain name like 'my-project'"
    if ".." in name:
        return f"project name {name!r} contains '..'; use a plain name like 'my-project'"
    if name.startswith((".", "-")) or any(ch in name for ch in "\n\r\t"):
        return f"project name {name!r} must not start with '.' or '-' or contain control characters"
    return None


def session_name(stamp: str, project: str) -> str:
    """The file name of a session started at stamp (``YYYY-MM-DD-HH-MM[.SS[.NN]]``)."""
    return f"{stamp}-{project}.md"


def stamp_of(filename: str, project: str) -> str | None:
    """The timestamp prefix of a session file of project, or None when the name is not one."""
    suffix = f"-{project}.md"
    if not filename.endswith(suffix):
        return None
    stamp = filename[: -len(suffix)]
    return stamp if STAMP_RE.match(stamp) else None


def is_session_name(filename: str) -> bool:
    """True when filename looks like a session file (timestamp prefix, ``.md``)."""
    return NAME_RE.match(filename) is not None


# -- frontmatter -------------------------------------------------------------


def render_frontmatter(meta: dict[str, str]) -> str:
    """The frontmatter lines in the seed's key order (unknown keys kept after them)."""
    keys = [k for k in FRONTMATTER_KEYS if k in meta] + [k for k in meta if k not in FRONTMATTER_KEYS]
    lines = ["---"]
    for key in keys:
        value = meta[key]
        lines.append(f"{key}: {value}" if value else f"{key}:")
    lines.append("---")
    return "\n".join(lines) + "\n"


def new_file(meta: dict[str, str]) -> str:
    """A new session file's text: frontmatter, blank line, the append-only comment."""
    return render_frontmatter(meta) + "\n" + APPEND_ONLY + "\n"


def split_frontmatter(text: str) -> tuple[dict[str, str], int, str]:
    """(frontmatter as a dict, number of frontmatter lines, the text after it); FormatError if absent."""
    lines = text.split("\n")
    if not lines or lines[0] != "---":
        raise FormatError("no frontmatter: the file must start with a '---' line", 1)
    meta: dict[str, str] = {}
    for number, line in enumerate(lines[1:], start=2):
        if line == "---":
            return meta, number, "\n".join(lines[number:])
        key, colon, value = line.partition(":")
        if not colon or not KEY_RE.match(key):
            raise FormatError(f"frontmatter line {line!r} is not 'key: value'", number)
        if key in meta:
            raise FormatError(f"frontmatter key {key!r} appears twice", number)
        meta[key] = value.strip()
    raise FormatError("the frontmatter is not closed by a '---' line", len(lines))


def set_frontmatter(text: str, updates: dict[str, str]) -> str:
    """text with frontmatter keys set (a v1.0 file gains ``schema_version`` first); the body untouched."""
    meta, _count, body = split_frontmatter(text)
    if "schema_version" not in meta:
        meta = {"schema_version": SCHEMA_VERSION, **meta}
    meta.update(updates)
    return render_frontmatter(meta) + body


# -- steps ----------------------------------------------------------------------


@dataclass
class Step:
    """One step's state: what a full block records."""

    step: str
    agent: str
    status: str
    input: str
    output: str
    trace: str = ""
    metrics: str = ""
    timestamp: str = ""
    total: str = ""


@dataclass
class Block:
    """A parsed block: a full step block or a re-audit, with its header's line number."""

    line: int
    step: str
    reaudit: bool
    sections: dict[str, str] = field(default_factory=dict)
    agent: str = ""
    status: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    previous: int = 0

    def state(self) -> Step:
        """The step state a full block records."""
        return Step(
            step=self.step,
            agent=self.agent,
            status=self.status,
            input=self.sections.get("Input received", ""),
            output=self.sections.get("Generated output", ""),
            trace=self.sections.get("Reasoning Trace", ""),
            metrics=self.sections.get("Metrics", ""),
            timestamp=self.metadata.get("Timestamp", ""),
        )


def check_text(option: str, text: str) -> None:
    """Refuse a step text holding a line the parser reserves (a section heading or the separator)."""
    for number, line in enumerate(text.split("\n"), start=1):
        if line.rstrip() in RESERVED_LINES or line.startswith("## [Step "):
            raise FormatError(
                f"{option} line {number} is {line.rstrip()!r}, which the session file reserves for its own "
                "structure; rename that heading or indent the line"
            )


def render_metrics(metrics: dict) -> str:
    """``- key: value`` lines for a metrics object (strings as they are, other values as JSON)."""
    lines = []
    for key, value in metrics.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        lines.append(f"- {key}: {shown}")
    return "\n".join(lines)


def _section(title: str, body: str) -> str:
    return f"### {title}\n\n{body}\n\n"


def render_block(state: Step) -> str:
    """The seed's full step block, separator first, ending in a newline."""
    out = SEPARATOR + f"## [Step {state.step}] — {state.agent} — {state.status}\n\n"
    out += _section("Input received", state.input)
    if state.trace:
        out += _section("Reasoning Trace", state.trace)
    out += _section("Generated output", state.output)
    if state.metrics:
        out += _section("Metrics", state.metrics)
    of = f" of {state.total}" if state.total else ""
    out += f"### Metadata\n\n- Timestamp: {state.timestamp}\n- Step: {state.step}{of}\n"
    return out


def render_state(state: Step, *, reaudits: int = 0, last_line: int = 0) -> str:
    """A step's current state as ``docket session show`` prints it: a full block without the separator."""
    text = render_block(state)[len(SEPARATOR) :]
    if reaudits:
        text += f"- Re-audits: {reaudits} (latest at line {last_line})\n"
    return text


# -- parsing -------------------------------------------------------------------


def parse_blocks(text: str) -> list[Block]:
    """Every block of a session file, in file order; FormatError (with its line) for a malformed one."""
    _, fm_lines, body = split_frontmatter(text)
    base = fm_lines  # body line 1 is file line fm_lines + 1
    marker = "<!-- separator -->"
    body_lines = body.split("\n")
    starts = [i for i, line in enumerate(body_lines) if line == marker]
    blocks: list[Block] = []
    for n, start in enumerate(starts):
        if start < 2 or body_lines[start - 2] != "---" or body_lines[start - 1] != "":
            raise FormatError("a '<!-- separator -->' must follow a '---' line and a blank line", base + start + 1)
        end = starts[n + 1] - 2 if n + 1 < len(starts) else len(body_lines)
        blocks.append(_parse_block(body_lines[start + 1 : end], base + start + 2))
    head = body_lines[: starts[0] - 2] if starts else body_lines
    # The append-only comment (or a v1.0 file's own wording of it): HTML comments only.
    stray = [i for i, line in enumerate(head) if line.strip() and not re.match(r"^<!--.*-->$", line.strip())]
    if stray:
        raise FormatError("text between the frontmatter and the first block", base + stray[0] + 1)
    return blocks


def parse_block(block: str, line: int) -> Block:
    """One rendered block (separator first) whose header is at file line ``line``."""
    if not block.startswith(SEPARATOR):
        raise FormatError("a block must start with the separator", line)
    return _parse_block(block[len(SEPARATOR) :].rstrip("\n").split("\n"), line)


def _parse_block(lines: list[str], first: int) -> Block:
    """A block from its lines (after the separator comment); first is the file line of lines[0]."""
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i == len(lines):
        raise FormatError("an empty block after a separator", first)
    header = lines[i]
    where = first + i
    full = HEADER_RE.match(header)
    delta = REAUDIT_RE.match(header)
    if full:
        block = Block(where, full["step"], False, agent=full["agent"], status=full["status"])
        if block.status not in STATUSES:
            raise FormatError(f"status {block.status!r} is not one of {', '.join(STATUSES)}", where)
    elif delta:
        block = Block(where, delta["step"], True)
    else:
        raise FormatError(
            f"block header {header!r} is neither '## [Step N] — agent — status' nor a re-audit header", where
        )
    titles: list[tuple[str, int]] = []
    for j in range(i + 1, len(lines)):
        if lines[j].startswith("### ") and lines[j] in RESERVED_LINES:
            titles.append((lines[j][4:], j))
        elif lines[j].startswith("## [Step "):
            raise FormatError("a second block header without a separator before it", first + j)
    if titles and any(line.strip() for line in lines[i + 1 : titles[0][1]]):
        raise FormatError("text between the block header and its first section", first + i + 1)
    for n, (title, j) in enumerate(titles):
        end = titles[n + 1][1] if n + 1 < len(titles) else len(lines)
        if title in block.sections:
            raise FormatError(f"section '### {title}' appears twice in one block", first + j)
        block.sections[title] = "\n".join(lines[j + 1 : end]).strip("\n")
    order = [t for t, _ in titles]
    if block.reaudit:
        expected = ["Changes", "Input received", "Reasoning Trace", "Generated output", "Metrics", "Metadata"]
        required = ("Changes", "Metadata")
    else:
        expected = ["Input received", "Reasoning Trace", "Generated output", "Metrics", "Metadata"]
        required = ("Input received", "Generated output", "Metadata")
    for title in required:
        if title not in block.sections:
            raise FormatError(f"block for Step {block.step} has no '### {title}' section", where)
    if order != [t for t in expected if t in order]:
        raise FormatError(f"sections of Step {block.step} are out of order: {', '.join(order)}", where)
    for raw in block.sections["Metadata"].split("\n"):
        key, colon, value = raw.removeprefix("- ").partition(": ")
        if raw.startswith("- ") and colon:
            block.metadata[key] = value
    if "Timestamp" not in block.metadata:
        raise FormatError(f"Metadata of Step {block.step} has no '- Timestamp:' line", where)
    stated = block.metadata.get("Step", "").split(" of ")[0]
    if stated != block.step:
        raise FormatError(f"Metadata says '- Step: {stated}' in a block for Step {block.step}", where)
    if block.reaudit:
        found = [PREVIOUS_RE.match(raw) for raw in block.sections["Metadata"].split("\n")]
        numbers = [int(m[1]) for m in found if m]
        if not numbers:
            raise FormatError(f"re-audit of Step {block.step} has no '- Previous audit: line N of this file'", where)
        block.previous = numbers[0]
    return block


def check_chain(blocks: list[Block]) -> None:
    """Every re-audit follows a block of its step and points at that step's latest block."""
    latest: dict[str, int] = {}
    for block in blocks:
        if block.reaudit:
            if block.step not in latest:
                raise FormatError(f"re-audit of Step {block.step} before any block for that step", block.line)
            if block.previous != latest[block.step]:
                raise FormatError(
                    f"re-audit of Step {block.step} points at line {block.previous}; "
                    f"the step's previous block is at line {latest[block.step]}",
                    block.line,
                )
        latest[block.step] = block.line


# -- delta re-audits -------------------------------------------------------------


def as_object(output: str) -> dict | None:
    """output as a JSON object (a bare object or one in a ```json fence), else None."""
    text = output.strip()
    fence = re.match(r"^```(?:json)?\n(.*)\n```$", text, re.S)
    if fence:
        text = fence[1]
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def delta(old: Step, new: Step) -> tuple[list[str], dict[str, str]]:
    """(change lines, replaced sections) that turn old into new."""
    changes: list[str] = []
    sections: dict[str, str] = {}
    if new.status != old.status:
        changes.append(f"- status: {new.status} (was: {old.status})")
    if new.agent != old.agent:
        changes.append(f"- agent: {new.agent} (was: {old.agent})")
    if new.input != old.input:
        changes.append("- input: replaced (see Input received)")
        sections["Input received"] = new.input
    if new.trace != old.trace:
        if new.trace:
            changes.append("- reasoning_trace: replaced (see Reasoning Trace)")
            sections["Reasoning Trace"] = new.trace
        else:
            changes.append("- reasoning_trace: removed")
    before, after = as_object(old.output), as_object(new.output)
    if before is not None and after is not None:
        if before != after:
            keys = [*before, *(k for k in after if k not in before)]
            if all(KEY_RE.match(k) for k in keys):
                for key in keys:
                    if key not in after:
                        changes.append(f"- -output.{key} (was: {_dump(before[key])})")
                    elif key not in before:
                        changes.append(f"- +output.{key}: {_dump(after[key])}")
                    elif before[key] != after[key]:
                        changes.append(f"- ~output.{key}: {_dump(after[key])} (was: {_dump(before[key])})")
            else:
                changes.append("- output: replaced (see Generated output)")
                sections["Generated output"] = new.output
    elif new.output != old.output:
        changes.append("- output: replaced (see Generated output)")
        sections["Generated output"] = new.output
    if new.metrics != old.metrics:
        if new.metrics:
            changes.append("- metrics: replaced (see Metrics)")
            sections["Metrics"] = new.metrics
        else:
            changes.append("- metrics: removed")
    return changes or ["- no changes"], sections


def render_reaudit(step: str, changes: list[str], sections: dict[str, str], timestamp: str, previous: int) -> str:
    """The seed's delta re-audit block, separator first."""
    out = SEPARATOR + f"## [Step {step} — re-audit] (delta vs. previous audit)\n\n"
    out += _section("Changes", "\n".join(changes))
    for title in ("Input received", "Reasoning Trace", "Generated output", "Metrics"):
        if title in sections:
            out += _section(title, sections[title])
    out += f"### Metadata\n\n- Timestamp: {timestamp}\n- Step: {step}\n- Previous audit: line {previous} of this file\n"
    return out


def _json_at(text: str, start: int) -> tuple[object, int]:
    try:
        return json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError:
        raise FormatError(f"change line {text!r} holds no JSON value at column {start + 1}") from None


def apply(state: Step, block: Block) -> Step:
    """state after the re-audit block: every change line and replaced section applied."""
    new = replace(state, timestamp=block.metadata.get("Timestamp", state.timestamp))
    obj = as_object(state.output)
    touched = False
    for line in block.sections["Changes"].split("\n"):
        if not line.strip() or line == "- no changes":
            continue
        m = re.match(r"^- (status|agent): (.*) \(was: .*\)$", line)
        if m:
            setattr(new, m[1], m[2])
            continue
        if line == "- reasoning_trace: removed":
            new.trace = ""
            continue
        if line == "- metrics: removed":
            new.metrics = ""
            continue
        if re.match(r"^- (input|output|reasoning_trace|metrics): replaced", line):
            continue
        m = re.match(r"^- ([+~-])output\.([A-Za-z0-9_.-]+)(: | )", line)
        if not m or obj is None:
            raise FormatError(f"re-audit of Step {block.step}: cannot replay change {line!r}", block.line)
        touched = True
        if m[1] == "-":
            obj.pop(m[2], None)
        else:
            value, _ = _json_at(line, m.end())
            obj[m[2]] = value
    new.input = block.sections.get("Input received", new.input)
    new.trace = block.sections.get("Reasoning Trace", new.trace)
    new.metrics = block.sections.get("Metrics", new.metrics)
    if "Generated output" in block.sections:
        new.output = block.sections["Generated output"]
    elif touched and obj is not None:
        new.output = json.dumps(obj, indent=2, ensure_ascii=False)
    return new


def replay(blocks: list[Block], step: str) -> tuple[Step, int, int] | None:
    """(current state, number of re-audits applied, line of the latest block) of step, or None if absent."""
    state: Step | None = None
    count = 0
    line = 0
    for block in blocks:
        if block.step != step:
            continue
        if not block.reaudit:
            state, count = block.state(), 0
        elif state is not None:
            state = apply(state, block)
            count += 1
        line = block.line
    return (state, count, line) if state is not None else None


def step_ids(blocks: list[Block]) -> list[str]:
    """The steps with a block, in order of first appearance."""
    return list(dict.fromkeys(b.step for b in blocks))
