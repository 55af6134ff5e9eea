"""Context maps: which earlier steps' outputs flow into a step, composed and checked before the run (pure).

A map is a list of rules ``{"from_step": N, "fields": [...], "mode": "complete|partial"}``
for one destination step; a whole workflow's maps are an object from
destination step to such a list.
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


def parse_maps(text: str, destination: str | None) -> dict[str, list[Rule]]:
    """Maps by destination step from JSON text: an array needs destination, an object names its own."""
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
        picked = {}
        for name in rule.fields:
            if name in obj:
                picked[name] = obj[name]
            else:
                warnings.append(f"Field '{name}' not found in Step {state.step} output")
        return json.dumps(picked, indent=2, ensure_ascii=False), warnings
    parts = []
    for name in rule.fields:
        found = markdown_field(state.output, name)
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
