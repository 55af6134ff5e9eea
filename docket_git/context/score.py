"""Integer scoring of current records against the task: scope, query, recency, degree, pin.

``score = scope + text + recency + degree + pinned``, every part an integer,
so the same ledger, settings and task order records identically everywhere.
Ties break newer first (later file position).
"""

from __future__ import annotations

import heapq
import itertools
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet

from docket_git.context import scope as scoping
from docket_git.context.outline import Outline, Ranking, TaskHits, base_score
from docket_git.ledger.index import query_needles
from docket_git.ledger.model import searchable
from docket_git.plain import Plain

COMPONENTS: tuple[str, ...] = ("scope", "text", "recency", "degree", "pinned")
#: Query points are capped here before the text weight scales them.
TEXT_POINTS_CAP = 1000


class Score(Plain):
    """One current record's score and its parts."""

    __slots__ = ("degree", "hit", "pinned", "recency", "renamed", "scope", "text", "total")

    def __init__(
        self,
        total: int,
        scope: int = 0,
        text: int = 0,
        recency: int = 0,
        degree: int = 0,
        pinned: int = 0,
        hit: bool = False,
        renamed: bool = False,
    ) -> None:
        self.total = total
        self.scope = scope
        self.text = text
        self.recency = recency
        self.degree = degree
        self.pinned = pinned
        #: A task hit matched the task's files (scope) or its query (text points).
        self.hit = hit
        #: The scope matched through the path git says the recorded one was renamed to.
        self.renamed = renamed

    def parts(self) -> str:
        """The non-zero components, e.g. ``scope=700, recency=100`` (``scope=1000 via rename``)."""
        out = []
        for name in COMPONENTS:
            value = getattr(self, name)
            if value:
                out.append(f"{name}={value} via rename" if name == "scope" and self.renamed else f"{name}={value}")
        return ", ".join(out)


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
    return _points([r["id"] for r in records], [searchable(r) for r in records], query)


def _points(ids: list[str], hays: list[str], query: str) -> dict[str, int]:
    terms, phrase = query_needles(query)
    if not terms:
        return {}
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


class Scoring:
    """Scores of the current records of an outline: totals and parts on demand, the ranking lazily."""

    def __init__(
        self,
        outline: Outline,
        weights: dict[str, int],
        *,
        files: list[str] | None = None,
        query: str = "",
        renames: dict[str, str] | None = None,
    ) -> None:
        self.weights = weights
        self.outline = outline
        #: Record ID -> its 0-based position in the whole history.
        self.position: Mapping[str, int] = outline.pos
        self.span = max(1, len(outline.ids) - 1)
        matched = scoping.matched_scopes(outline.scopes, files or [], weights, renames)
        rows = outline.scope_hits(matched, weights, self.span)
        #: Current record -> its scope points, for the records a task file matched.
        self.scope: dict[str, int] = {row[0]: row[2] for row in rows}
        #: Records whose scope matched only through a renamed path.
        self.renamed: set[str] = {row[0] for row in rows if row[3]}
        #: In-degrees, and the reverse relation index expansion walks.
        self.degrees, self.incoming = outline.degrees, outline.incoming
        self.pinned: AbstractSet[str] = outline.pinned
        #: A query's hits matched and ranked in the index (a large indexed outline), else None.
        self.task: TaskHits | None = (
            outline.task_hits(rows, query, weights, self.span, TEXT_POINTS_CAP) if query.strip() else None
        )
        #: Task hits: records matching the task's files or query.
        self.hits: AbstractSet[str]
        #: Task hit -> its query points (uncapped; only hits with some), and its scope and text parts
        #: (what the task adds to the task-free score).
        self.points: Mapping[str, int] | _RowPart
        self.boost: Mapping[str, int] | _RowPart
        #: Ranking keys of the scope hits (from their rows), and the hits best first when known.
        self._keys: dict[str, int] = {}
        self._ranked_hits: Sequence[str] | None = None
        if self.task is not None:
            self.hits, self.points = self.task, _RowPart(self.task, lambda row: row[0])
            self.boost = _RowPart(self.task, lambda row: row[1] + self._text(row[0]))
            self._ranked_hits = self.task.ranked()
            self._keys = self.task.keys  # filled as the ranking is read, with the keys SQL sorted by
        else:
            if query.strip():
                found = outline.text_points(query)  # from the index's haystacks, when it has them
                self.points = found if found is not None else record_points(outline.many(list(outline.live)), query)
            else:
                self.points = {}
            self.hits = set(self.scope) | set(self.points)
            boost = dict(self.scope)
            for rid, p in self.points.items():
                boost[rid] = boost.get(rid, 0) + self._text(p)
            self.boost = boost
            if not self.points:
                self._keys = {row[0]: row[4] for row in rows}
                self._ranked_hits = [row[0] for row in rows]
        #: Record ID -> total score, for every current record (computed when asked for).
        self.totals: Mapping[str, int] = _Totals(self, outline.current)
        self._parts: dict[str, Score] = {}

    def _text(self, points: int) -> int:
        """The text part of a score: query points, capped, scaled to the text weight."""
        return self.weights["text"] * min(points, TEXT_POINTS_CAP) // TEXT_POINTS_CAP

    def total(self, rid: str) -> int:
        """A current record's total score."""
        base = base_score(self.weights, self.span, self.position[rid], self.degrees.get(rid, 0), rid in self.pinned)
        return base + self.boost.get(rid, 0)

    def key(self, rid: str) -> int:
        """The ranking key of a current record: higher score first, then newer first."""
        key = self._keys.get(rid)
        return (self.totals[rid] << 40) | self.position[rid] if key is None else key

    def ranked_hits(self) -> Sequence[str]:
        """The task hits, best first (read from the index as far as used, when it ranked them)."""
        if self._ranked_hits is None:
            self._ranked_hits = sorted(self.hits, key=self.key, reverse=True)
        return self._ranked_hits

    def targets(self) -> AbstractSet[str]:
        """The task hits and their prerequisite closure through current records (what coverage counts)."""
        if self.task is not None:
            return self.task.targets()
        return self.outline.closure(self.ranked_hits())

    def ranking(self) -> Ranking:
        """Every current record, best first (descending score, then newer first), produced as read."""
        if self.task is not None:  # the hits ranked in SQL, the rest from the index strata without them
            keys = self.task.keys
            boosted = ((keys[rid], rid) for rid in self.task.ranked())
            base = self.outline.base_order(self.weights, self.span, without=self.task)
            merged = heapq.merge(boosted, base, reverse=True)
            return Ranking((rid for _, rid in merged), len(self.outline.current))
        boosted = [(self.key(rid), rid) for rid in self.ranked_hits()]
        base = self.outline.base_order(self.weights, self.span)
        if boosted:
            skip = self.boost
            base = heapq.merge(boosted, ((k, rid) for k, rid in base if rid not in skip), reverse=True)
        return Ranking((rid for _, rid in base), len(self.outline.current))

    def __getitem__(self, rid: str) -> Score:
        """The record's score with its parts."""
        score = self._parts.get(rid)
        if score is None:
            w = self.weights
            s = self.scope.get(rid, 0)
            p = self.points.get(rid, 0)
            t = self._text(p)
            r = w["recency"] * self.position[rid] // self.span
            d = w["degree"] * min(self.degrees.get(rid, 0), w["degree_cap"])
            pin = w["pinned"] if rid in self.pinned else 0
            score = self._parts[rid] = Score(
                s + t + r + d + pin, s, t, r, d, pin, hit=s > 0 or p > 0, renamed=rid in self.renamed
            )
        return score

    def get(self, rid: str) -> Score | None:
        """The record's score, or None for a record that is not current."""
        return self[rid] if rid in self.totals else None


class _RowPart:
    """Task hit -> one part of its ``TaskHits`` row, read when asked for (0 for any other record).

    Only ``get`` is offered: scoring reads these parts one record at a time and never lists them.
    """

    __slots__ = ("_part", "_task")

    def __init__(self, task: TaskHits, part: Callable[[tuple[int, int, int]], int]) -> None:
        self._task, self._part = task, part

    def get(self, rid: str, default: int = 0) -> int:
        row = self._task.row(rid)
        return default if row is None else self._part(row) or default


class _Totals(Mapping[str, int]):
    """Current record -> total score, each computed on first use."""

    def __init__(self, scoring: Scoring, current: AbstractSet[str]) -> None:
        self._scoring, self._current = scoring, current
        self._known: dict[str, int] = {}

    def __getitem__(self, rid: str) -> int:
        total = self._known.get(rid)
        if total is None:
            key = self._scoring._keys.get(rid)
            if key is not None:
                total = key >> 40
            elif rid not in self._current:
                raise KeyError(rid)
            else:
                total = self._scoring.total(rid)
            self._known[rid] = total
        return total

    def __contains__(self, rid: object) -> bool:
        return rid in self._known or rid in self._current

    def __iter__(self) -> Iterator[str]:
        return iter(self._scoring.outline.live)

    def __len__(self) -> int:
        return len(self._current)
