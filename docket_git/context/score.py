"""Integer scoring of current records against the task: scope, query, recency, degree, pin.

``score = scope + text + recency + degree + pinned``, every part an integer,
so the same ledger, settings and task order records identically everywhere.
Ties break newer first (later file position).
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass

from . import scope as scoping

COMPONENTS: tuple[str, ...] = ("scope", "text", "recency", "degree", "pinned")
#: Query points are capped here before the text weight scales them.
TEXT_POINTS_CAP = 1000


@dataclass(frozen=True)
class Score:
    """One current record's score and its parts."""

    total: int
    scope: int = 0
    text: int = 0
    recency: int = 0
    degree: int = 0
    pinned: int = 0
    #: A task hit matched the task's files (scope) or its query (text points).
    hit: bool = False

    def parts(self) -> str:
        """The non-zero components, e.g. ``scope=700, recency=100``."""
        return ", ".join(f"{name}={getattr(self, name)}" for name in COMPONENTS if getattr(self, name))


def _fields(record: dict) -> str:
    parts = [record["id"], record["text"], record.get("rationale") or "", record.get("choice") or ""]
    parts.extend(record.get("alternatives") or ())
    parts.extend(record.get("scope") or ())
    return " ".join(parts)


def haystack(record: dict) -> str:
    """The casefolded text a query is matched in: id, text, rationale, choice, alternatives, scope."""
    return _fields(record).casefold()


def query_terms(query: str) -> list[str]:
    """The query's distinct casefolded whitespace-separated terms, in order."""
    return list(dict.fromkeys(query.casefold().split()))


def text_points(haystacks: dict[str, str], query: str) -> dict[str, int]:
    """Record ID -> query points (uncapped) for records that match at all.

    A term's weight is ``1000 * (N + 1 - df) // (N + 1)`` over the N given
    records, so a rare term outweighs a common one; a record holding the whole
    query as a phrase gains 1000 more (so any record matching a one-word query
    reaches the full text weight, and a query outranks a glob scope).
    """
    return _points(list(haystacks), list(haystacks.values()), query)


def record_points(records: list[dict], query: str) -> dict[str, int]:
    """``text_points`` over the haystacks of records (casefolded here in one go)."""
    return _points([r["id"] for r in records], [_fields(r) for r in records], query)


def _points(ids: list[str], hays: list[str], query: str) -> dict[str, int]:
    terms = query_terms(query)
    if not terms:
        return {}
    phrase = " ".join(query.casefold().split())
    n = len(ids)
    # One string for the whole corpus: str.find runs in C and each hit skips to the next
    # record, so a rare term costs almost nothing. NUL separates records; if a record holds
    # a NUL itself (or a needle does), fall back to testing record by record.
    corpus = "\x00".join(hays).casefold()
    starts = list(itertools.accumulate((len(h) + 1 for h in corpus.split("\x00")), initial=0))
    flat = len(starts) == n + 1 and "\x00" not in phrase
    folded = None if flat else [h.casefold() for h in hays]

    def holders(needle: str) -> list[int]:
        if folded is not None:
            return [i for i, hay in enumerate(folded) if needle in hay]
        found: list[int] = []
        find, pos = corpus.find, corpus.find(needle)
        while pos >= 0:
            i = bisect_right(starts, pos) - 1
            found.append(i)
            pos = find(needle, starts[i + 1])
        return found

    points = [0] * n
    for term in terms:
        hit = holders(term)
        if hit:
            weight = 1000 * (n + 1 - len(hit)) // (n + 1)
            for i in hit:
                points[i] += weight
    for i in holders(phrase):
        points[i] += 1000
    return {ids[i]: p for i, p in enumerate(points) if p > 0}


def in_degrees(records: Iterable[dict], resolved_by: dict[str, list[str]] | None = None) -> dict[str, int]:
    """Record ID -> references to it from any record's supports, depends_on, answers, resolved_by.

    Pass projected views, or raw records with projection's ``resolved_by`` map.
    """
    return references(list(records), None, resolved_by)[0]


def references(
    records: list[dict], current: set[str] | None, resolved_by: dict[str, list[str]] | None = None
) -> tuple[dict[str, int], dict[str, list[str]]]:
    """In-degrees (from every record), and record ID -> current records that cite it, in one scan.

    ``resolved_by`` (question -> resolving records) stands in for the field of
    projected views when raw records are given; a resolved question then
    counts as citing each record that resolves it.
    """
    counts: dict[str, int] = {}
    incoming: dict[str, list[str]] = {}
    get = counts.get
    views = resolved_by is None
    for record in records:
        supports = record.get("supports")
        depends = record.get("depends_on")
        answers = record.get("answers")
        resolved = record.get("resolved_by") if views else None
        if not (supports or depends or answers or resolved):
            continue
        refs: list[str] = [ref for group in supports for ref in group] if supports else []
        if depends:
            refs.extend(depends)
        if answers:
            refs.extend(answers)
        if resolved:
            refs.extend(resolved)
        for ref in refs:
            counts[ref] = get(ref, 0) + 1
        src = record["id"]
        if current is None or src in current:
            for ref in dict.fromkeys(refs):
                incoming.setdefault(ref, []).append(src)
    if resolved_by:
        for question, answering in resolved_by.items():
            cites = current is None or question in current
            for ref in answering:
                counts[ref] = get(ref, 0) + 1
                if cites:
                    incoming.setdefault(ref, []).append(question)
    return counts, incoming


class Scoring:
    """Scores of the current records of a ledger: totals up front, parts on demand.

    Takes raw records in file order (retired included) with projection's
    ``resolved_by`` map, or projected views without it.
    """

    def __init__(
        self,
        records: list[dict],
        current: set[str],
        weights: dict[str, int],
        *,
        resolved_by: dict[str, list[str]] | None = None,
        position: dict[str, int] | None = None,
        files: list[str] | None = None,
        query: str = "",
    ) -> None:
        self.weights = weights
        #: Current record -> its 0-based position in the whole history.
        if position is None:
            position = {r["id"]: i for i, r in enumerate(records)}
        self.position: dict[str, int] = position.copy()  # then drop the (few) retired records
        for rid in position.keys() - current:
            del self.position[rid]
        live = [records[i] for i in self.position.values()]
        self.scope = scoping.scope_points(live, files or [], weights)
        self.points = record_points(live, query) if query.strip() else {}
        #: In-degrees, and the reverse relation index expansion walks (one scan for both).
        self.degrees, self.incoming = references(records, current, resolved_by)
        self.span = max(1, len(records) - 1)
        self.pinned: set[str] = {r["id"] for r in live if r.get("pinned")}
        #: Task hits: records matching the task's files or query.
        self.hits: set[str] = set(self.scope) | set(self.points)
        w = weights
        w_recency, span = w["recency"], self.span
        #: Record ID -> total score, for every current record; the sparse parts are added after.
        totals = self.totals = {rid: w_recency * i // span for rid, i in self.position.items()}
        w_degree, cap = w["degree"], w["degree_cap"]
        for rid, n in self.degrees.items():
            if rid in totals:
                totals[rid] += w_degree * min(n, cap)
        for rid in self.pinned:
            totals[rid] += w["pinned"]
        for rid, n in self.scope.items():
            totals[rid] += n
        for rid, p in self.points.items():
            totals[rid] += w["text"] * min(p, TEXT_POINTS_CAP) // TEXT_POINTS_CAP
        self._parts: dict[str, Score] = {}

    def __getitem__(self, rid: str) -> Score:
        """The record's score with its parts."""
        score = self._parts.get(rid)
        if score is None:
            w = self.weights
            s = self.scope.get(rid, 0)
            p = self.points.get(rid, 0)
            t = w["text"] * min(p, TEXT_POINTS_CAP) // TEXT_POINTS_CAP
            r = w["recency"] * self.position[rid] // self.span
            d = w["degree"] * min(self.degrees.get(rid, 0), w["degree_cap"])
            pin = w["pinned"] if rid in self.pinned else 0
            score = self._parts[rid] = Score(s + t + r + d + pin, s, t, r, d, pin, hit=s > 0 or p > 0)
        return score

    def get(self, rid: str) -> Score | None:
        """The record's score, or None for a record that is not current."""
        return self[rid] if rid in self.totals else None


def score_records(
    history: list[dict],
    current_ids: Iterable[str],
    weights: dict[str, int],
    *,
    files: list[str] | None = None,
    query: str = "",
) -> dict[str, Score]:
    """Scores for the current records of a projected history (file order, retired included)."""
    scoring = Scoring(history, set(current_ids), weights, files=files, query=query)
    return {rid: scoring[rid] for rid in scoring.totals}
