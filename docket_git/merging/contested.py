"""Contradicting decisions a merge brings together: one open question names both.

The rule (docs/merging.md, "Contradicting decisions"): a decision that one
side of the merge added and one that the other side added contradict when

- both are adopted and current in the merged ledger (neither superseded, and
  neither recorded by a merge),
- each one's ``choice`` is among the other's ``alternatives`` (compared with
  case and runs of whitespace ignored), and
- their scopes overlap: a scope of each is the same path, directory, glob or
  component name, or one is a directory (``src/``) holding the other or a
  glob matching it.

Decisions both sides already share (the common prefix, or a record matched on
both sides) are not the merge's business, nor is a contradiction within one
side. The question is scoped to the shared scopes (the narrower of each
overlapping pair), its timestamp is the later decision's, and a merge that
finds an equal question already asked (a merge the other way) asks nothing:
the same inputs give the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from docket_git.ledger import model
from docket_git.merging.rebase import MERGE_AUTHOR, merge_question

#: How a contradiction question's text starts; it then names the two decisions, ours first.
PREFIX = "Contradicting decisions"
_GLOB = frozenset("*?[]")


@dataclass
class Contradiction:
    """Two adopted decisions from different sides of a merge, each choosing what the other rejected."""

    ours: str
    theirs: str
    scope: list[str]
    #: The open question appended to settle it ("" when an equal question already exists).
    question: str = ""

    def describe(self) -> str:
        """One line for a person: what the merge found and what it did."""
        asked = f"; open question {self.question} asks which stands" if self.question else ""
        return (
            f"{self.ours} here and {self.theirs} from the other side contradict on {', '.join(self.scope)} "
            f"(each one's choice is among the other's alternatives); kept both{asked}"
        )

    def refusal(self) -> str:
        """The message when a strict merge refuses instead."""
        return (
            f"{self.ours} here and {self.theirs} from the other side contradict on {', '.join(self.scope)}; "
            "supersede one of them by hand, or merge without strict mode (--strict / merge.docket.strict) "
            "to get an open question instead"
        )


def _norm(text: object) -> str:
    return " ".join(str(text).split()).casefold()


def _scope_norm(scope: str) -> str:
    scope = scope.replace("\\", "/")
    while scope.startswith("./"):
        scope = scope[2:]
    return scope.casefold()


def _covers(scope: str, other: str) -> bool:
    """True when (normalised) scope is a directory holding other, or a glob matching it."""
    if scope.endswith("/") and other.startswith(scope):
        return True
    return bool(_GLOB & set(scope)) and fnmatchcase(other, scope)


def _overlap(one: str, two: str) -> str | None:
    """The narrower of two overlapping scopes (as recorded), or None when they do not overlap."""
    a, b = _scope_norm(one), _scope_norm(two)
    if a == b:
        return one
    if _covers(a, b):
        return two
    if _covers(b, a):
        return one
    return None


def shared_scope(one: Sequence[str], two: Sequence[str]) -> list[str]:
    """The scopes two records share (the narrower of each overlapping pair), sorted; empty when disjoint."""
    return sorted({hit for a in one for b in two if (hit := _overlap(a, b)) is not None})


def contradict(one: dict, two: dict) -> bool:
    """True when each decision's choice is among the other's alternatives."""
    first, second = _norm(one.get("choice", "")), _norm(two.get("choice", ""))
    if not first or not second or first == second:
        return False
    return first in {_norm(a) for a in two.get("alternatives") or ()} and second in {
        _norm(a) for a in one.get("alternatives") or ()
    }


def _asked(records: Sequence[dict]) -> set[frozenset[str]]:
    """The decision pairs merge questions already ask about."""
    out = set()
    for record in records:
        if record.get("author") != MERGE_AUTHOR or record.get("kind") != "question":
            continue
        text = str(record.get("text", ""))
        if text.startswith(PREFIX):
            tokens = [m.group(0) for m in model.ID_TOKEN_RE.finditer(text)]
            if len(tokens) >= 2:
                out.add(frozenset(tokens[:2]))
    return out


def _clip(text: object, limit: int = 100) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _candidates(records: Sequence[dict], retired: set[str]) -> list[dict]:
    return [
        r
        for r in records
        if r.get("kind") == "decision"
        and r.get("state") == "adopted"
        and r.get("author") != MERGE_AUTHOR
        and r["id"] not in retired
    ]


def settle(ours_tail: Sequence[dict], theirs_new: Sequence[dict], top: int) -> tuple[list[dict], list[Contradiction]]:
    """(questions to append after ID number ``top``, the contradictions found) for a merge.

    ``ours_tail``: the records this side added after the shared prefix;
    ``theirs_new``: the records the merge appends from the other side
    (renumbered, merge questions included).
    """
    retired = {t for r in (*ours_tail, *theirs_new) for t in r.get("supersedes") or ()}
    ours, theirs = _candidates(ours_tail, retired), _candidates(theirs_new, retired)
    if not ours or not theirs:
        return [], []
    asked = _asked([*ours_tail, *theirs_new])
    questions: list[dict] = []
    found: list[Contradiction] = []
    by_choice: dict[str, list[dict]] = {}  # pairs by lookup, never all ours x theirs (tails can be long)
    for incoming in theirs:
        by_choice.setdefault(_norm(incoming.get("choice", "")), []).append(incoming)
    for here in ours:
        rejected = dict.fromkeys(_norm(a) for a in here.get("alternatives") or ())
        for incoming in (i for alt in rejected for i in by_choice.get(alt, ())):
            if not contradict(here, incoming):
                continue
            scope = shared_scope(here.get("scope") or (), incoming.get("scope") or ())
            if not scope:
                continue
            a, b = here["id"], incoming["id"]
            contradiction = Contradiction(a, b, scope)
            found.append(contradiction)
            if frozenset((a, b)) in asked:
                continue
            top += 1
            mine, other = here.get("choice", ""), incoming.get("choice", "")
            question = merge_question(
                model.make_id("question", top),
                f'{PREFIX} {a} and {b}: {a} chose "{_clip(mine, 60)}" over "{_clip(other, 60)}", '
                f'{b} chose "{_clip(other, 60)}" over "{_clip(mine, 60)}". Which one stands?',
                (
                    f'{a} says "{_clip(here.get("text"))}"; {b} says "{_clip(incoming.get("text"))}". '
                    f"Both are adopted on {', '.join(scope)}, from different sides of a merge, and each one's "
                    "choice is among the other's alternatives. Supersede the one that should not stand."
                ),
                scope,
                max(str(here.get("ts", "")), str(incoming.get("ts", ""))),
                [f"contradiction: {a} and {b}"],
            )
            contradiction.question = question["id"]
            asked.add(frozenset((a, b)))
            questions.append(question)
    return questions, found
