"""The graph as files: JSON, JSONL, CSV (nodes and edges), Mermaid and Graphviz DOT.

Mermaid and DOT draw what the HTML page draws: kinds by shape, states by
colour, retired records dashed, blocked prerequisite chains in red, and
supports sets labelled so AND (one set) and OR (several sets) read apart.
A drawing of a subset (``--since``) adds the records it cites as grey
context nodes, so every edge has both ends.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from docket_git.graph.projection import Edge, blocked_edges, edges
from docket_git.ledger import pretty

FORMATS = ("json", "jsonl", "csv", "mermaid", "dot")

#: CSV columns, in order. List fields are joined with ";" (sets: "c1&c2;c3").
NODE_COLUMNS = (
    "id",
    "kind",
    "state",
    "recorded_state",
    "current",
    "applicable",
    "text",
    "choice",
    "rationale",
    "scope",
    "sets",
    "depends_on",
    "answers",
    "supersedes",
    "retired_by",
    "resolved_by",
    "blocked_by",
    "cost_if_wrong",
    "author",
    "ts",
)
EDGE_COLUMNS = ("source", "relation", "target", "set")

#: Fill colours by effective state, shared with the page (page.html keeps the same table, and
#: tests/test_browser.py checks both against WCAG contrast).
STATE_COLOURS = {
    "unassessed": "#f3f4f6",
    "accepted": "#bbf7d0",
    "disputed": "#fde68a",
    "rejected": "#fecaca",
    "adopted": "#bfdbfe",
    "revoked": "#6b7280",
    "open": "#fef08a",
    "resolved": "#99f6e4",
}
#: Text on a fill, where it is not the default dark ink.
STATE_INK = {"revoked": "#ffffff"}
BLOCKED = "#dc2626"


def clip(text: str, width: int) -> str:
    """text on one line, cut to width characters with an ellipsis (width 0: empty)."""
    flat = " ".join(text.split())
    if width <= 0:
        return ""
    return flat if len(flat) <= width else flat[: max(width - 1, 1)].rstrip() + "…"


def _is_blocked(node: dict) -> bool:
    return (
        node["kind"] == "decision"
        and not node["retired_by"]
        and node["recorded_state"] == "adopted"
        and not node.get("applicable", True)
    )


def _context(entries: Sequence[dict], all_entries: Sequence[dict] | None) -> list[dict]:
    """Records the entries cite that are not among them: drawn as context so no edge dangles."""
    if all_entries is None:
        return []
    shown = {n["id"] for n in entries}
    cited = {e.target for e in edges(entries)} - shown
    return [n for n in all_entries if n["id"] in cited]


def to_json(entries: Sequence[dict]) -> str:
    """The version-2 payload of the entries, indented."""
    return pretty.encode({"version": 2, "entries": list(entries)}) + "\n"  # json.dumps' indent-2 text, faster


def to_jsonl(entries: Sequence[dict]) -> str:
    """One graph entry per line, in file order."""
    return "".join(json.dumps(n, ensure_ascii=False, separators=(",", ":")) + "\n" for n in entries)


#: What a spreadsheet reads as the start of a formula (OWASP's CSV injection list).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        text = ";".join("&".join(v) if isinstance(v, list) else str(v) for v in value)
    else:
        text = "" if value is None else str(value)
    # A leading ' makes a spreadsheet show the text, not run it (``=cmd|' /C calc'!A0``), as OWASP recommends.
    return "'" + text if text.startswith(FORMULA_STARTS) else text


_QUOTE = re.compile('[,"\r\n]')


def _csv_cell(text: str) -> str:
    return '"' + text.replace('"', '""') + '"' if _QUOTE.search(text) else text


def _csv_row(cells: Sequence[str]) -> str:
    """One RFC 4180 line: a cell holding a comma, a quote, CR or LF is quoted (the csv module leaves a lone CR
    bare when the line ends in LF, and a reader then splits the row there)."""
    return ",".join(map(_csv_cell, cells)) + "\n"


def to_csv(entries: Sequence[dict]) -> tuple[str, str]:
    """(nodes.csv, edges.csv) text: one row per record, one row per relation."""
    nodes = [_csv_row(NODE_COLUMNS)]
    for n in entries:
        row = dict(n, current=not n["retired_by"], applicable=n.get("applicable", ""))
        nodes.append(_csv_row([_cell(row.get(col, "")) for col in NODE_COLUMNS]))
    links = [_csv_row(EDGE_COLUMNS)]
    for e in edges(entries):
        links.append(_csv_row([_cell(e.source), _cell(e.relation), _cell(e.target), _cell(e.group or "")]))
    return "".join(nodes), "".join(links)


# -- Mermaid -----------------------------------------------------------------------------------


def _mermaid_text(text: str) -> str:
    """Label text safe inside a quoted Mermaid label.

    HTML named entities, because Mermaid renders labels as HTML; its own
    ``#code;`` entity syntax is avoided (and ``#`` itself escaped as ``&num;``):
    Mermaid 11 leaves those codes undecoded in rendered labels.
    """
    return "".join(_MERMAID_ENTITIES.get(ch, ch) for ch in text)


_MERMAID_ENTITIES = {"&": "&amp;", '"': "&quot;", "<": "&lt;", ">": "&gt;", "#": "&num;"}
_MERMAID_SHAPES = {"claim": ('(["', '"])'), "decision": ('["', '"]'), "question": ('{{"', '"}}')}
_MERMAID_ARROWS = {"supports": "-->", "depends_on": "-.->", "answers": "-->", "supersedes": "==>"}


def to_mermaid(
    entries: Sequence[dict], *, all_entries: Sequence[dict] | None = None, detail: int = 40, direction: str = "LR"
) -> str:
    """A Mermaid flowchart of the entries (and cited context); pastes into a GitHub comment in a mermaid block."""
    lines = [f"flowchart {direction}"]
    context = _context(entries, all_entries)
    for n in [*entries, *context]:
        start, end = _MERMAID_SHAPES[n["kind"]]
        head = f"{n['id']} · {n['state']}" + (" · retired" if n["retired_by"] else "")
        text = clip(n["text"], detail)
        label = _mermaid_text(head) + (f"<br/>{_mermaid_text(text)}" if text else "")
        lines.append(f"    {n['id']}{start}{label}{end}")
    drawn = edges([*entries])
    blocked = blocked_edges([*entries, *context])
    red: list[int] = []
    for i, e in enumerate(drawn):
        lines.append(f"    {e.source} {_MERMAID_ARROWS[e.relation]}|{_mermaid_text(e.label)}| {e.target}")
        if e.relation == "depends_on" and (e.source, e.target) in blocked:
            red.append(i)
    groups: dict[str, list[str]] = {}
    for n in entries:
        groups.setdefault("retired" if n["retired_by"] else n["state"], []).append(n["id"])
    for n in context:
        groups.setdefault("context", []).append(n["id"])
    for n in entries:
        if _is_blocked(n):
            groups.setdefault("blocked", []).append(n["id"])
    styles = {
        state: f"fill:{colour},stroke:#374151,color:{STATE_INK.get(state, '#111')}"
        for state, colour in STATE_COLOURS.items()
    }
    styles["retired"] = "fill:#f9fafb,stroke:#9ca3af,stroke-dasharray:5 5,color:#6b7280"
    styles["blocked"] = f"stroke:{BLOCKED},stroke-width:3px"
    styles["context"] = "fill:#ffffff,stroke:#9ca3af,color:#6b7280"
    for name in groups:  # only the classes in use: a pasted block stays short
        lines.append(f"    classDef {name} {styles[name]}")
    for name, ids in groups.items():
        lines.append(f"    class {','.join(ids)} {name}")
    if red:
        lines.append(f"    linkStyle {','.join(map(str, red))} stroke:{BLOCKED},stroke-width:3px")
    return "\n".join(lines) + "\n"


# -- Graphviz DOT ------------------------------------------------------------------------------


def _dot_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


_DOT_SHAPES = {"claim": "ellipse", "decision": "box", "question": "hexagon"}
_DOT_STYLES = {"supports": "solid", "depends_on": "dashed", "answers": "solid", "supersedes": "bold"}


def to_dot(
    entries: Sequence[dict], *, all_entries: Sequence[dict] | None = None, detail: int = 40, direction: str = "LR"
) -> str:
    """A Graphviz digraph of the entries (and cited context): ``dot -Tsvg`` draws it."""
    lines = [
        "digraph docket {",
        f"  rankdir={direction};",
        '  node [fontname="Helvetica", fontsize=10, style="filled"];',
        '  edge [fontname="Helvetica", fontsize=9];',
    ]
    context = _context(entries, all_entries)
    for n in entries:
        text = clip(n["text"], detail)
        label = f"{n['id']} · {n['state']}" + (" · retired" if n["retired_by"] else "") + (f"\n{text}" if text else "")
        attrs = [
            f"label={_dot_string(label)}",
            f"shape={_DOT_SHAPES[n['kind']]}",
            f'fillcolor="{STATE_COLOURS.get(n["state"], "#ffffff")}"',
        ]
        if n["retired_by"]:
            attrs += ['style="filled,dashed"', 'fontcolor="#6b7280"']
        elif n["state"] in STATE_INK:
            attrs.append(f'fontcolor="{STATE_INK[n["state"]]}"')
        if _is_blocked(n):
            attrs += [f'color="{BLOCKED}"', "penwidth=3"]
        lines.append(f"  {n['id']} [{', '.join(attrs)}];")
    for n in context:
        label = f"{n['id']} · {n['state']}\n{clip(n['text'], detail)}"
        lines.append(
            f"  {n['id']} [label={_dot_string(label)}, shape={_DOT_SHAPES[n['kind']]}, "
            'fillcolor="#ffffff", color="#9ca3af", fontcolor="#6b7280"];'
        )
    blocked = blocked_edges([*entries, *context])
    for e in edges(entries):
        attrs = [f"label={_dot_string(e.label)}", f"style={_DOT_STYLES[e.relation]}"]
        if e.relation == "depends_on" and (e.source, e.target) in blocked:
            attrs += [f'color="{BLOCKED}"', "penwidth=2"]
        lines.append(f"  {e.source} -> {e.target} [{', '.join(attrs)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(fmt: str, entries: Sequence[dict], *, all_entries: Sequence[dict] | None = None) -> str:
    """The entries in one of the single-file formats (json, jsonl, mermaid, dot)."""
    if fmt == "json":
        return to_json(entries)
    if fmt == "jsonl":
        return to_jsonl(entries)
    if fmt == "mermaid":
        return to_mermaid(entries, all_entries=all_entries)
    if fmt == "dot":
        return to_dot(entries, all_entries=all_entries)
    raise ValueError(f"not a single-file format: {fmt}")


__all__ = ["FORMATS", "Edge", "render", "to_csv", "to_dot", "to_json", "to_jsonl", "to_mermaid"]
