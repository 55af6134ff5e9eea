"""Context maps: which earlier steps' outputs flow into a step, composed and checked before the run (pure).

A map is a list of rules ``{"from_step": N, "fields": [...], "mode": "complete|partial"}``
for one destination step; a whole workflow's maps are an object from
destination step to such a list, or the markdown table the skill's workflows
write (``| Destination Step | Consumes from | Fields / Sections | Mode |``, ``*``
for the whole output). A field is a name or a dotted path into nested JSON
(``process.name``) or nested markdown sections.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from docket_git.sessions import fmt

MODES = ("complete", "partial")
PREFLIGHT = (
    'Pre-flight Context Map error: Step {n} references "Step {m} output" but Step {m} is not present in the '
    "ledger and not declared in the workflow. Likely typo in the Context Map definition."
)


@dataclass(frozen=True)
class Rule:
    """One context map rule."""

    from_step: str
    mode: str
    fields: tuple[str, ...]


def _step(value: object, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f'{where}: from_step must be a step number or identifier like 2 or "S1"')
    text = str(value)
    if not fmt.STEP_RE.match(text):
        raise ValueError(f'{where}: from_step {text!r} is not a step number or identifier like 2 or "S1"')
    return text


def parse_rules(value: object, where: str = "context map") -> list[Rule]:
    """The rules of one destination's map; ValueError naming the rule and field at fault."""
    if not isinstance(value, list):
        raise ValueError(f'{where} must be a JSON array of rules like [{{"from_step": 1, "mode": "complete"}}]')
    rules = []
    for n, raw in enumerate(value, start=1):
        at = f"{where} rule {n}"
        if not isinstance(raw, dict):
            raise ValueError(f"{at} must be an object with from_step, mode and fields")
        unknown = sorted(set(raw) - {"from_step", "fields", "mode"})
        if unknown:
            raise ValueError(f"{at}: unknown key {unknown[0]!r}; a rule has from_step, fields and mode")
        if "from_step" not in raw:
            raise ValueError(f"{at} has no from_step")
        if "mode" not in raw and raw.get("fields"):
            raise ValueError(
                f'{at} has fields and no mode; add "mode": "partial" to take only those fields '
                '(or "complete" for the whole output)'
            )
        mode = raw.get("mode", "complete")
        if mode not in MODES:
            raise ValueError(f"{at}: mode must be complete or partial, not {mode!r}")
        fields = raw.get("fields", [])
        if not isinstance(fields, list) or not all(isinstance(f, str) and f.strip() for f in fields):
            raise ValueError(f"{at}: fields must be a list of field names")
        if mode == "partial" and not fields:
            raise ValueError(f"{at}: mode partial needs the fields to take")
        rules.append(Rule(_step(raw["from_step"], at), mode, tuple(fields)))
    return rules


#: The markdown table's columns, as the skill's workflow files head them (matched without case or spaces).
TABLE_COLUMNS = ("destinationstep", "consumesfrom", "fields/sections", "mode")


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") else inner
    return [c.strip() for c in inner.split("|")]


def _table_step(text: str, where: str) -> str:
    bare = re.sub(r"(?i)^step\s+", "", text.strip().strip("*`").strip())
    return _step(bare, where)


def parse_table(text: str) -> dict[str, list[Rule]] | None:
    """Maps from a markdown context-map table in text, or None when text holds no such table.

    One row per destination and source: ``| Step 3 | Step 1, Step 2 | process.name, goals | partial |``;
    fields ``*`` (or empty) take the whole output; a row with fields and no mode is refused.
    """
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not line.strip().startswith("|"):
            continue
        if [re.sub(r"\s+", "", c).lower() for c in _cells(line)] != list(TABLE_COLUMNS):
            continue
        maps: dict[str, list[Rule]] = {}
        for number in range(i + 2, len(lines)):  # the header, then the |---| row
            row = lines[number]
            if not row.strip().startswith("|"):
                break
            at = f"context map table line {number + 1}"
            cells = _cells(row)
            if len(cells) != 4:
                raise ValueError(
                    f"{at} has {len(cells)} cells; a row is | Destination Step | Consumes from | Fields / Sections | Mode |"
                )
            dest_cell, from_cell, fields_cell, mode_cell = cells
            destination = _table_step(dest_cell, at)
            fields = [f.strip().strip("`") for f in fields_cell.split(",") if f.strip().strip("`")]
            whole = fields in ([], ["*"])
            mode = mode_cell.strip().strip("*`").lower()
            if not mode:
                if not whole:
                    raise ValueError(
                        f"{at} has fields and no mode; write partial (or complete with * for the whole output)"
                    )
                mode = "complete"
            if mode not in MODES:
                raise ValueError(f"{at}: mode must be complete or partial, not {mode_cell.strip()!r}")
            if mode == "partial" and whole:
                raise ValueError(f"{at}: mode partial needs the fields to take, not {fields_cell.strip() or 'nothing'}")
            sources = [s for s in from_cell.split(",") if s.strip()]
            if not sources:
                raise ValueError(f"{at}: Consumes from names no step")
            for source in sources:
                rule = Rule(_table_step(source, at), mode, () if whole else tuple(fields))
                maps.setdefault(destination, []).append(rule)
        if not maps:
            raise ValueError(f"the context map table at line {i + 1} has no rows")
        return maps
    return None


def parse_maps(text: str, destination: str | None) -> dict[str, list[Rule]]:
    """Maps by destination step from JSON text (an array needs destination, an object names its own)
    or from a markdown context-map table."""
    if not text.lstrip().startswith(("[", "{")):
        table = parse_table(text)
        if table is not None:
            return table
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"context map is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if isinstance(value, dict):
        maps = {}
        for key, rules in value.items():
            maps[_step(key, f"context map key {key!r}")] = parse_rules(rules, f"context map for Step {key}")
        return maps
    if destination is None:
        raise ValueError("a context map array is for one step; give --step-destination N, or an object by step")
    return {destination: parse_rules(value)}


def preflight(maps: dict[str, list[Rule]], present: list[str], declared: list[str]) -> list[str]:
    """The seed's pre-flight error for every rule naming a step neither present, current nor declared."""
    errors = []
    known = set(present) | set(declared)
    for destination, rules in maps.items():
        for rule in rules:
            if rule.from_step != destination and rule.from_step not in known:
                errors.append(PREFLIGHT.format(n=destination, m=rule.from_step))
    return errors


# -- taking fields from an output ------------------------------------------------------


def _key_line(key: str) -> re.Pattern[str]:
    """``key: value``, ``- key: value`` or ``* **key**: value`` at any indent; the key matched case-insensitively."""
    return re.compile(rf"^(\s*)(?:[-*+]\s+)?(?:\*\*|__)?{re.escape(key)}(?:\*\*|__)?\s*:(?:\s|$)", re.I)


def _heading(key: str) -> re.Pattern[str]:
    return re.compile(rf"^(#{{1,6}})\s+{re.escape(key)}\s*#*\s*$", re.I)


def markdown_field(output: str, key: str) -> str | None:
    """key's part of a markdown output: a ``key: value`` line with its deeper-indented lines, or a
    ``#..# key`` heading with its section up to the next heading of the same or a higher level."""
    lines = output.split("\n")
    heading = _heading(key)
    item = _key_line(key)
    for i, line in enumerate(lines):
        m = heading.match(line)
        if m:
            level = len(m[1])
            end = i + 1
            while end < len(lines):
                h = re.match(r"^(#{1,6})\s", lines[end])
                if h and len(h[1]) <= level:
                    break
                end += 1
            return "\n".join(lines[i:end]).rstrip()
        m = item.match(line)
        if m:
            indent = len(m[1].expandtabs())
            end = i + 1
            while end < len(lines):
                nxt = lines[end]
                if nxt.strip() and len(nxt.expandtabs()) - len(nxt.expandtabs().lstrip()) <= indent:
                    break
                end += 1
            return "\n".join(lines[i:end]).rstrip()
    return None


def _json_path(obj: dict, name: str) -> tuple[bool, object]:
    """(found, value) of a field: the key itself, else a dotted path through nested objects."""
    if name in obj:
        return True, obj[name]
    value: object = obj
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return False, None
        value = value[part]
    return True, value


def _put_path(picked: dict, name: str, value: object, literal: bool) -> None:
    """Store value under name, as nested objects along a dotted path (``process.name``)."""
    if literal or "." not in name:
        picked[name] = value
        return
    *parents, last = name.split(".")
    here = picked
    for part in parents:
        nxt = here.get(part)
        if not isinstance(nxt, dict):
            nxt = here[part] = {}
        here = nxt
    here[last] = value


def markdown_path(output: str, name: str) -> str | None:
    """A field of a markdown output: the name itself, else a dotted path, each part looked up in
    the body (below its heading or key line) of the section the previous part found."""
    found = markdown_field(output, name)
    if found is not None or "." not in name:
        return found
    section: str | None = None
    body = output
    for part in name.split("."):
        section = markdown_field(body, part)
        if section is None:
            return None
        body = section.partition("\n")[2]
    return section


def take(state: fmt.Step, rule: Rule) -> tuple[str, list[str]]:
    """(the text a rule takes from a step's state, warnings for fields it lacks)."""
    if rule.mode == "complete":
        parts = []
        if state.trace:
            parts.append(f"#### Reasoning Trace\n\n{state.trace}")
        parts.append(f"#### Generated output\n\n{state.output}")
        return "\n\n".join(parts), []
    warnings = []
    obj = fmt.as_object(state.output)
    if obj is not None:
        picked: dict = {}
        for name in rule.fields:
            found, value = _json_path(obj, name)
            if found:
                _put_path(picked, name, value, literal=name in obj)
            else:
                warnings.append(f"Field '{name}' not found in Step {state.step} output")
        return json.dumps(picked, indent=2, ensure_ascii=False), warnings
    parts = []
    for name in rule.fields:
        found = markdown_path(state.output, name)
        if found is None:
            warnings.append(f"Field '{name}' not found in Step {state.step} output")
        else:
            parts.append(found)
    return "\n\n".join(parts), warnings


def compose(blocks: list[fmt.Block], destination: str, rules: list[Rule]) -> tuple[str, list[str]]:
    """(the filtered context block for destination, warnings); a missing step gives no text and a warning."""
    sections = []
    warnings = []
    for rule in rules:
        found = fmt.replay(blocks, rule.from_step)
        if found is None:
            warnings.append(f"Step {rule.from_step} not found in ledger")
            continue
        state = found[0]
        text, missing = take(state, rule)
        warnings.extend(missing)
        label = "complete" if rule.mode == "complete" else f"partial: {', '.join(rule.fields)}"
        sections.append(f"### From Step {rule.from_step} ({label}) — {state.agent} — {state.status}\n\n{text}\n")
    if not sections:
        return "", warnings
    return f"## Context for Step {destination}\n\n" + "\n".join(sections), warnings
