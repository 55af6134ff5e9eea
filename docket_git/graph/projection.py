"""The version-2 graph projection: projected records plus the legacy renderer keys, and their edges."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from docket_git.ledger import model, project

VERSION = 2

#: How each relation reads when drawn from the record that declares it to the record it names.
RELATION_LABELS = {
    "supports": "because",
    "depends_on": "depends on",
    "answers": "answers",
    "supersedes": "supersedes",
}


@dataclass(frozen=True)
class Edge:
    """One declared relation: ``source`` names ``target`` in its ``relation`` field.

    ``group`` is the 1-based index of the supports set (an OR alternative) the
    edge belongs to, 0 for the other relations; ``groups`` how many sets the
    source has. Edges of one set are AND requirements.
    """

    source: str
    relation: str
    target: str
    group: int = 0
    groups: int = 0

    @property
    def label(self) -> str:
        """``because`` (one set), ``because, set 2`` (one of several), or the relation's words."""
        base = RELATION_LABELS[self.relation]
        return f"{base}, set {self.group}" if self.relation == "supports" and self.groups > 1 else base


def entry(view: dict) -> dict:
    """One graph node: a projected record whose ``supports`` is the union, plus the legacy keys."""
    out = dict(view)
    out["sets"] = [list(group) for group in view.get("supports") or []]
    out["supports"] = model.support_ids(view)
    out["question"] = view["text"]
    out["answer"] = view.get("choice") or view.get("rationale") or ""
    out["cost"] = view.get("cost_if_wrong") or ""
    return out


def graph(records: Sequence[dict]) -> dict:
    """The version-2 graph payload for validated records: every record, retired ones included, in file order."""
    return {"version": VERSION, "entries": [entry(view) for view in project.project(list(records))]}


def edges(entries: Iterable[dict]) -> list[Edge]:
    """Every relation the entries declare, in file order then field order (supports sets first)."""
    out: list[Edge] = []
    for node in entries:
        rid = node["id"]
        sets = node["sets"] if "sets" in node else node.get("supports") or []
        for i, group in enumerate(sets, start=1):
            out.extend(Edge(rid, "supports", target, i, len(sets)) for target in group)
        for field in ("depends_on", "answers", "supersedes"):
            out.extend(Edge(rid, field, target) for target in node.get(field) or ())
    return out


def blocked_edges(entries: Sequence[dict]) -> set[tuple[str, str]]:
    """(decision, prerequisite) depends_on pairs on a chain that blocks a current adopted decision."""
    by_id = {node["id"]: node for node in entries}
    out: set[tuple[str, str]] = set()
    for node in entries:
        if node["kind"] != "decision" or node.get("applicable", True) or node["retired_by"]:
            continue
        if node["recorded_state"] != "adopted":
            continue
        reasons = set(node.get("blocked_by") or ())
        stack = [node["id"]]
        seen: set[str] = set()
        while stack:
            rid = stack.pop()
            if rid in seen:
                continue
            seen.add(rid)
            for target in by_id.get(rid, {}).get("depends_on") or ():
                if target in reasons:
                    out.add((rid, target))
                    stack.append(target)
    return out


def select(entries: Sequence[dict], *, ids: set[str] | None = None, retired: bool = True) -> list[dict]:
    """The entries to draw: those in ids (all when None), without retired ones unless retired."""
    return [n for n in entries if (ids is None or n["id"] in ids) and (retired or not n["retired_by"])]
