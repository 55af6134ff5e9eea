"""The briefing's text: header, record blocks, index lines, footer. No selection logic.

Every function returns whole lines ending in ``\\n`` so the selector can add
up exact lengths before it commits to a layout. Lengths are in characters
(code points), never bytes.
"""

from __future__ import annotations

import json

from docket_git.context.score import Score
from docket_git.digest import sha256
from docket_git.plain import Plain

LEGEND = (
    "# Context: decisions are commitments, claims are premises, questions are inquiries; "
    "states are not truth and authors are recorders."
)
ROLE = {"claim": "premise", "decision": "commitment", "question": "inquiry"}
EVIDENCE_NOTE = (
    "evidence note: references are supplied provenance and were not freshly verified by this context renderer."
)
GROUNDS = "# Declared grounds; evidence not freshly verified."
RETRIEVE = "# Retrieve full record: docket show RECORD_ID --json"
NO_RECORDS_FIT = "# No records fit."

SELECTION_TEXT = {
    "all": "all current records",
    "task": "scored by task scope and query, with related records",
    "unscoped": "scored by recency and relations; no task scope given",
}

IDENTITY_CLIP = 180
SHORT_IDENTITY_CLIP = 60
QUERY_CLIP = 140
FILES_JOINED_MAX = 180
FILES_CLIP = 150


def one_line(text: str) -> str:
    """Text with every whitespace run (newlines included) folded to one space."""
    return " ".join(text.split())


def clip(text: str, limit: int) -> str:
    """Text cut to limit characters with ``...`` appended, or unchanged when it fits."""
    return text if len(text) <= limit else text[:limit] + "..."


def _value(text: str) -> str:
    """A free-text field inside a block: continuation lines indented, so no line can pose as a header."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n  ".join(lines)


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


# -- header -------------------------------------------------------------------------


class Meta(Plain):
    """What the header says about the ledger: identity, revision, latest record, settings.

    Immutable by convention; compared and hashed by value.
    """

    __slots__ = ("fingerprint", "identity", "latest", "revision")

    def __init__(self, identity: str, revision: str, latest: str, fingerprint: str | None = None) -> None:
        self.identity = identity
        #: 12 hex: SHA-256 of the ledger bytes through the last record's line.
        self.revision = revision
        self.latest = latest
        #: 8 hex when the settings are not the defaults.
        self.fingerprint = fingerprint


def files_line(files: list[str]) -> str:
    """``# files: a.py, b.py``, or a count, digest and clipped list when the paths run long."""
    joined = one_line(", ".join(files))
    if len(joined) <= FILES_JOINED_MAX:
        return f"# files: {joined}\n"
    digest = sha256("\n".join(files).encode("utf-8", "surrogatepass"))[:8]
    return f"# files: {len(files)} paths, {digest}: {clip(joined, FILES_CLIP)}\n"


def header(meta: Meta, *, mode: str, query: str, files: list[str]) -> str:
    """The full header: identity line, legend, query, files and selection lines, then a blank line."""
    first = f"# docket: {clip(one_line(meta.identity), IDENTITY_CLIP)} | revision: {meta.revision}"
    first += f" | latest: {meta.latest}@{meta.revision}"
    if meta.fingerprint:
        first += f" | settings: {meta.fingerprint}"
    lines = [first + "\n", LEGEND + "\n"]
    if query.strip():
        lines.append(f"# query: {clip(one_line(query), QUERY_CLIP)}\n")
    if files:
        lines.append(files_line(files))
    lines.append(f"# selection: {SELECTION_TEXT[mode]}\n")
    return "".join(lines)


def short_header(meta: Meta) -> str:
    """The header when the full one leaves no room: identity (clipped 60) and revision."""
    return f"# docket: {clip(one_line(meta.identity), SHORT_IDENTITY_CLIP)} | revision: {meta.revision}\n"


def last_resort(meta: Meta) -> str:
    """The briefing when nothing else fits the ceiling."""
    return f"# docket revision: {meta.revision}\n{NO_RECORDS_FIT}\n{RETRIEVE}\n"


# -- record blocks ------------------------------------------------------------------


class Entry(Plain):
    """One record chosen for the full-text tier, with why it was chosen."""

    __slots__ = ("chains", "label", "note", "own", "score", "via", "view")

    def __init__(
        self,
        view: dict,
        label: str,
        score: int | None = None,
        own: Score | None = None,
        via: str = "",
        chains: tuple[str, ...] = (),
        note: str = "",
    ) -> None:
        self.view = view
        #: selected | blocking prerequisite | related record | fallback pin | changed
        self.label = label
        #: The score the record was admitted with (None: show no selection line).
        self.score = score
        #: The record's own score (None for a retired record, which has none).
        self.own = own
        #: The record this one was reached from (related record, blocking prerequisite).
        self.via = via
        #: ``d6 -> c4 unassessed`` for each blocking chain of a blocked decision.
        self.chains = chains
        #: A closing line in place of the selection line (delta briefings).
        self.note = note

    __hash__ = None  # type: ignore[assignment]  # mutable: holds a dict

    @property
    def historical(self) -> bool:
        """True for a retired record, shown only because a chosen record cites it."""
        return bool(self.view.get("retired_by"))


def _warning(view: dict) -> str | None:
    if view.get("retired_by"):
        return f"warning: retired by {view['retired_by']}; this historical record is not current support."
    kind = view["kind"]
    if kind == "decision" and not view.get("applicable", True):
        return "warning: decision is not applicable; treat it as unavailable current support."
    if (kind == "claim" and view["state"] != "accepted") or kind == "question":
        return f"warning: effective state is {view['state']}; treat this record as unavailable current support."
    return None


def selection_line(entry: Entry) -> str:
    """``selection: score N | parts`` and, for records reached through another, how."""
    if entry.note:
        return entry.note
    own = entry.own
    if entry.label in ("selected", "fallback pin") and own is not None:
        parts = own.parts()
        return f"selection: score {own.total}" + (f" | {parts}" if parts else "")
    relation = "blocks" if entry.label == "blocking prerequisite" else "related to"
    line = f"selection: score {entry.score} | {relation} {entry.via}"
    if own is None:
        return line + "; historical"
    if entry.score != own.total:
        line += f"; own score {own.total}"
    parts = own.parts()
    return line + (f": {parts}" if parts else "")


def _provenance(v: dict) -> str:
    return (
        f"provenance: author={one_line(v.get('author', ''))}, ts={one_line(v.get('ts', ''))}, "
        f"session={one_line(v.get('session', ''))}, branch={one_line(v.get('branch', ''))}"
    )


#: The shortest label a block can carry, and the shortest closing line.
_SHORTEST_LABEL = "changed"
_SHORTEST_CLOSING = "selection: score 0"


def block_floor(view: dict) -> int:
    """A lower bound on the length of any block of this record: its block with the shortest label,
    no blocking chains and the shortest closing line (the selector refuses a record that cannot fit
    even so, before it builds the record's entry)."""
    return len(block(Entry(view, _SHORTEST_LABEL, note=_SHORTEST_CLOSING)))


#: No block is shorter than this (a one-letter claim with empty provenance).
MIN_BLOCK = len(
    f"### c1 | claim | open [{_SHORTEST_LABEL}]\nrole: premise\ntext: x\n"
    f"provenance: author=, ts=, session=, branch=\n{_SHORTEST_CLOSING}\n"
)


def block(entry: Entry) -> str:
    """One record's full-text block, every line ending in a newline."""
    v = entry.view
    kind = v["kind"]
    tags = [entry.label]
    if v.get("pinned"):
        tags.append("pinned")
    if entry.historical:
        tags.append("historical")
    out = [
        f"### {v['id']} | {kind} | {v['state']} [{', '.join(tags)}]",
        f"role: {ROLE[kind]}",
        f"text: {_value(v['text'])}",
    ]
    recorded = v.get("recorded_state", v["state"])
    if recorded != v["state"]:
        out.append(f"recorded state: {recorded}")
    if kind == "decision":
        choice = v.get("choice", "")
        out.append(f"choice: {_value(choice)}")
        alternatives = [a for a in v.get("alternatives") or () if a != choice]
        if alternatives:
            out.append(f"alternatives: {_json(alternatives)}")
        out.append(f"applicable: {'true' if v.get('applicable') else 'false'}")
        if v.get("blocked_by"):
            out.append(f"blocked_by: {_json(v['blocked_by'])}")
        out.extend(f"blocked: {chain}" for chain in entry.chains)
        if v.get("decided_by"):
            out.append(f"decided by: {_value(v['decided_by'])}")
    for name in ("scope", "supports", "depends_on", "answers", "supersedes"):
        if v.get(name):
            out.append(f"{name}: {_json(v[name])}")
    rationale = v.get("rationale") or ""
    if rationale and rationale not in (v["text"], v.get("choice")):
        out.append(f"rationale: {_value(rationale)}")
    for name in ("revisit", "cost_if_wrong"):
        if v.get(name):
            out.append(f"{name}: {_value(v[name])}")
    if v.get("evidence"):
        out.append(f"evidence: {_json(v['evidence'])}")
        out.append(EVIDENCE_NOTE)
    out.append(_provenance(v))
    warning = _warning(v)
    if warning:
        out.append(warning)
    if v.get("resolved_by"):
        out.append(f"resolved by: {_json(v['resolved_by'])}")
    line = selection_line(entry)
    if line:
        out.append(line)
    return "\n".join(out) + "\n"


# -- index ----------------------------------------------------------------------------


def index_line(view: dict, detail: int) -> str:
    """``<id> <kind> <state>  <text clipped to detail>``."""
    return f"{view['id']} {view['kind']} {view['state']}  {clip(one_line(view['text']), detail)}\n"


def index_heading(deferred: int) -> str:
    """The first line of the index tier."""
    return f"# index: {deferred} more current records\n"


def index_overflow(rest: int) -> str:
    """The line counting current records the index does not name."""
    return f"# and {rest} more; docket list\n" if rest > 0 else ""


#: Bare IDs alone form the index (``# index: c4, d3``), or follow its lines (``# also: c1, q2``).
NAMES_LEAD = "# index: "
ALSO_LEAD = "# also: "


def names_line(ids: list[str], *, lead: str = NAMES_LEAD) -> str:
    """Bare record IDs on one line."""
    return f"{lead}{', '.join(ids)}\n"


def unnamed_index(deferred: int) -> str:
    """The index tier when not one name fits."""
    return f"# index: {deferred} more; docket list\n"


# -- footer ---------------------------------------------------------------------------


class Tally(Plain):
    """The counts a footer reports."""

    __slots__ = ("coverage", "deferred", "full", "named", "related_in_index", "retired", "uncovered")

    def __init__(
        self,
        full: int,
        named: int,
        deferred: int,
        retired: int,
        related_in_index: int = 0,
        coverage: str = "all",
        uncovered: int = 0,
    ) -> None:
        self.full = full
        self.named = named
        self.deferred = deferred
        self.retired = retired
        self.related_in_index = related_in_index
        #: "task" (task matches exist), "none" (task mode, no match), "all" (no task scope)
        self.coverage = coverage
        self.uncovered = uncovered


def footer(t: Tally) -> str:
    """The full footer: tier counts, gaps, coverage, the evidence caveat, the retrieval command."""
    lines = [f"# full text: {t.full}; index: {t.named}; retired: {t.retired}."]
    unlisted = t.deferred - t.named
    if unlisted > 0:
        lines.append(f"# Not listed: {unlisted}; reach them with docket list.")
    if t.related_in_index > 0:
        lines.append(f"# Related records in index only: {t.related_in_index}; formulas remain complete.")
    if t.coverage == "none":
        named = "the highest-scoring current records" if unlisted > 0 else "every current record"
        lines.append(f"# No task matches; the index names {named}.")
        lines.append("# Coverage: no matches found. Selected ledger data only.")
    elif t.uncovered:
        lines.append(f"# Coverage: partial, {t.uncovered} in the index only. Selected ledger data only.")
    elif t.coverage == "task":
        lines.append("# Coverage: task matches and their prerequisites covered. Selected ledger data only.")
    else:
        lines.append("# Coverage: every current record in full text. Selected ledger data only.")
    lines += [GROUNDS, RETRIEVE]
    return "\n".join(lines) + "\n"


def short_footer(t: Tally) -> str:
    """The footer beside the short header: tier counts and the retrieval command."""
    return f"# full text: {t.full}; index: {t.named}; retired: {t.retired}.\n{RETRIEVE}\n"
