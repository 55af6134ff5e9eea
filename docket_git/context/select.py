"""Selection: roots, blocking chains, expansion, the two tiers and the budget ladder.

Records enter the full-text tier one at a time, in a fixed order (roots by
score, each blocked root followed by its blocking prerequisites, then related
records best-first, then fallback pins). A record is admitted only if the
whole briefing, header to footer, still fits with it. The full-text tier comes
before index detail (the seed: over the ceiling the index shortens its lines,
then trims them, then lists bare IDs), so the gate measures the index in the
smallest form a record may push it to:

* the first root admitted: the index may shrink to its count line, so the
  top record is in full whenever its block, the header and the footer fit;
* every other root (and its blocking prerequisites): the index must still
  name its window in bare IDs. A task match (or any root under ``--all``)
  may grow the briefing to the hard limit, other roots to the soft target;
* a related record or a fallback pin after the task matches must leave the
  briefing within the soft target with the index at full detail.

Then the index takes the best form that fits, down a fixed ladder (see
``_layout``): against the hard limit once a task match used it, else against
the soft target. Blocks are never cut; lengths are exact.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet

from docket_git.context import render
from docket_git.context.config import Settings
from docket_git.context.outline import Outline, Ranking
from docket_git.context.render import Entry, Meta, Tally
from docket_git.context.score import Scoring
from docket_git.ledger import model
from docket_git.ledger.project import Derived, view
from docket_git.plain import Plain

#: Most blocking chains printed per decision, and most steps followed along one.
MAX_CHAINS = 8
MAX_CHAIN_STEPS = 32
#: Consecutive roots that do not fit after which admission of roots stops.
MAX_ROOT_MISSES = 64
#: Roots whose records are read ahead in one go.
PREFETCH = 32

#: The forms of the index tier an admission is measured with, richest first: lines at score-scaled
#: detail, the window's bare IDs, the count line alone (``# index: N more; docket list``), and
#: SMALLEST, the shorter of the last two.
SCALED, NAMES, COUNT, SMALLEST = "scaled", "names", "count", "smallest"


class Request(Plain):
    """What the caller asked for."""

    __slots__ = ("all", "files", "max_chars", "query", "renames")

    def __init__(
        self,
        query: str = "",
        files: tuple[str, ...] = (),
        all: bool = False,
        max_chars: int | None = None,
        renames: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.query = query
        self.files = files
        self.all = all
        self.max_chars = max_chars
        #: Scope as recorded -> the path it was renamed to (for scopes whose path no longer exists).
        self.renames = renames


def check_max_chars(value: object, settings: Settings) -> int:
    """``value`` as a hard ceiling, or ValueError unless it is an int of at least ``budget.minimum``."""
    minimum = settings["budget"]["minimum"]
    if type(value) is not int or value < minimum:
        raise ValueError(f"--max-chars must be at least {minimum}")
    return value


def limits(settings: Settings, max_chars: int | None) -> tuple[int, int]:
    """(soft, hard) character limits: the target and target x outer_multiple, or N and N."""
    if max_chars is None:
        budget = settings["budget"]
        return budget["target"], budget["target"] * budget["outer_multiple"]
    n = check_max_chars(max_chars, settings)
    return n, n


# -- blocking chains --------------------------------------------------------------


def _unavailable(record: dict, derived: Derived) -> str | None:
    """Why a prerequisite is unavailable: retired, its state, "blocked"; None when available."""
    rid = record["id"]
    if rid in derived.retired_by:
        return "retired"
    kind = record["kind"]
    if kind == "claim":
        return None if record["state"] == "accepted" else record["state"]
    if kind == "decision":
        if record["state"] != "adopted":
            return record["state"]
        return "blocked" if derived.blocked.get(rid) else None
    return record["state"]


def blocking_chains(record_id: str, by_id: Mapping[str, dict], derived: Derived) -> list[list[str]]:
    """Each chain of prerequisites that blocks a current adopted decision, as [step, ..., reason].

    ``blocked_by`` flattens chains into one list; this keeps them apart, so
    ``d60 -> d6 -> c4`` reads as ``["d6", "c4", "unassessed"]``. Depth first in
    declared order; at most MAX_CHAINS chains, each at most MAX_CHAIN_STEPS
    steps (a longer one ends at its last step with reason "blocked").
    """
    record = by_id.get(record_id)
    if record is None or record["kind"] != "decision" or record_id in derived.retired_by:
        return []
    if record["state"] != "adopted" or not derived.blocked.get(record_id):
        return []
    chains: list[list[str]] = []
    # (finished chain or None, decision to explore, steps so far); explicit stack, chains can be long.
    stack: list[tuple[list[str] | None, str, list[str]]] = [(None, record_id, [])]
    while stack and len(chains) < MAX_CHAINS:
        finished, decision, path = stack.pop()
        if finished is not None:
            chains.append(finished)
            continue
        items: list[tuple[list[str] | None, str, list[str]]] = []
        for prereq in by_id[decision].get("depends_on") or ():
            target = by_id.get(prereq)
            reason = "unknown" if target is None else _unavailable(target, derived)
            if reason is None:
                continue
            steps = [*path, prereq]
            if reason == "blocked" and len(steps) < MAX_CHAIN_STEPS:
                items.append((None, prereq, steps))
            else:
                items.append(([*steps, reason], "", steps))
        if not items and path:
            items.append(([*path, "blocked"], "", path))
        stack.extend(reversed(items))
    return chains


def chain_text(chain: list[str]) -> str:
    """``d6 -> c4 unassessed``."""
    return " -> ".join(chain[:-1]) + " " + chain[-1]


# -- the selector ----------------------------------------------------------------------


class _Selector:
    """Admission state and exact briefing lengths for one briefing."""

    def __init__(self, outline: Outline, settings: Settings, request: Request, meta: Meta) -> None:
        self.meta = meta
        self.soft, self.hard = limits(settings, request.max_chars)
        idx = settings["index"]
        self.detail_min, self.detail_max, self.max_lines = idx["detail_min"], idx["detail_max"], idx["max_lines"]
        exp = settings["expansion"]
        self.decay = (exp["decay_numerator"], exp["decay_denominator"])
        self.floor = exp["floor"]

        self.outline = outline
        self.derived = outline.derived
        #: Record ID -> full record (parsed on first use when the outline came from the cache).
        self.by_id: Mapping[str, dict] = outline.records
        self.pos: dict[str, int] = outline.pos
        self.current: AbstractSet[str] = outline.current
        self.retired_count = outline.retired_count()
        self._views: dict[str, dict] = {}
        self.files = list(request.files)
        self.query = request.query if request.query.strip() else ""
        self.scores = Scoring(
            outline, settings["weights"], files=self.files, query=self.query, renames=dict(request.renames)
        )
        self.task = bool(self.query or self.files) and not request.all
        # Descending score, then newer first, read from the ranking only as far as it is used.
        self.order = self.scores.ranking()
        self.top = max(1, self.scores.totals[self.order[0]]) if self.order else 1
        key = self.scores.key
        self.hits = self.scores.ranked_hits() if self.task else []
        #: Current pinned records, best first.
        self.pins = sorted(self.scores.pinned, key=key, reverse=True)

        # Admission state.
        self.entries: list[Entry] = []
        self.admitted: set[str] = set()
        self.blocks: list[str] = []
        self.blocks_len = 0  # each block plus the blank line before it
        self.full = 0  # current records in full text
        self.missing: set[str] = set()  # current records cited by blocks, not in full text
        #: What coverage counts: task matches and their prerequisite closure, or every current record.
        self.targets = self.scores.targets() if self.task else self.current
        self.uncovered = len(self.targets)
        self.window: list[str] = []  # the index window: the first max_lines deferred records
        self.window_set: set[str] = set()
        self.scan = 0  # rank in self.order where the window's search continues
        self.win_scaled = 0  # the window's index lines' total length
        self.win_names = 0  # the window's IDs' total length
        self._line_len: dict[str, int] = {}
        self._fill_window()
        self._floors: dict[str, int] = {}
        #: The ceiling the final layout must fit: the soft target until a task match used the hard limit.
        self.ceiling = self.soft

        if self.task and self.hits:
            self.roots, self.root_label, self.root_mandatory = self.hits, "selected", True
        elif self.task:
            self.roots = self.pins
            self.root_label, self.root_mandatory = "fallback pin", False
        else:
            self.roots, self.root_label, self.root_mandatory = self.order, "selected", request.all

        mode = "all" if request.all else ("task" if self.task else "unscoped")
        self.head = render.header(meta, mode=mode, query=self.query, files=self.files)
        self.short = self._needs_short(self.head)
        if self.short:
            self.head = render.short_header(meta)

    def view(self, rid: str) -> dict:
        """The projected view of a record, built on first use."""
        v = self._views.get(rid)
        if v is None:
            v = self._views[rid] = view(self.by_id[rid], self.derived)
        return v

    # -- counts ------------------------------------------------------------------------------

    def tally(
        self, named: int, *, full: int | None = None, missing: int | None = None, uncovered: int | None = None
    ) -> Tally:
        """The footer counts for the current state, with trial overrides."""
        f = self.full if full is None else full
        return Tally(
            full=f,
            named=named,
            deferred=len(self.current) - f,
            retired=self.retired_count,
            related_in_index=len(self.missing) if missing is None else missing,
            coverage=("task" if self.hits else "none") if self.task else "all",
            uncovered=self.uncovered if uncovered is None else uncovered,
        )

    def footer(self, tally: Tally, *, short: bool | None = None) -> str:
        return render.short_footer(tally) if (self.short if short is None else short) else render.footer(tally)

    # -- the index window -----------------------------------------------------------------

    def _fill_window(self) -> None:
        order, admitted = self.order, self.admitted
        while len(self.window) < self.max_lines and self.scan < len(order):
            if self.scan % PREFETCH == 0:  # window lines are measured: read their records together
                self.outline.many(list(order[self.scan : self.scan + PREFETCH]))
            rid = order[self.scan]
            self.scan += 1
            if rid not in admitted:
                self.window.append(rid)
                self.window_set.add(rid)
                self.win_scaled += self.scaled_len(rid)
                self.win_names += len(rid)

    def _next_outside(self) -> str | None:
        """The first deferred record after the window."""
        for i in range(self.scan, len(self.order)):
            rid = self.order[i]
            if rid not in self.admitted:
                return rid
        return None

    def detail(self, rid: str) -> int:
        """Characters of text an index line gets: more for a higher score."""
        score = max(0, min(self.scores.totals[rid], self.top))
        return self.detail_min + score * (self.detail_max - self.detail_min) // self.top

    def scaled_len(self, rid: str) -> int:
        n = self._line_len.get(rid)
        if n is None:
            n = self._line_len[rid] = len(render.index_line(self.view(rid), self.detail(rid)))
        return n

    def _index_len(self, count: int, scaled_sum: int, names_sum: int, deferred: int, *, form: str) -> int:
        """The index tier's length with its separator: count window lines (scaled), names, or the count line."""
        if deferred == 0:
            return 0
        if form == COUNT or not count:
            return 1 + len(render.unnamed_index(deferred))
        rest = len(render.index_overflow(deferred - count))
        if form == SCALED:
            return 1 + len(render.index_heading(deferred)) + scaled_sum + rest
        return 1 + len(render.NAMES_LEAD) + names_sum + 2 * (count - 1) + 1 + rest

    # -- admission -------------------------------------------------------------------------------

    def _needs_short(self, full_header: str) -> bool:
        """Use the short header and footer when the full ones leave no room to name the index window.

        Unless the top root's block fits beside them: the full-text tier comes before the index's names.
        """
        tally = self.tally(len(self.window))
        index_len = self._index_len(len(self.window), 0, self.win_names, len(self.current), form=NAMES)
        if len(full_header) + index_len + 1 + len(render.footer(tally)) <= self.hard:
            return False
        limit = self.hard if self.root_mandatory else self.soft
        for rid in self.roots[:1]:
            if self._refuses(rid, limit, SMALLEST, short=False):
                return True
            entry, _ = self._root_entry(rid)
            return self._trial_len(rid, len(render.block(entry)), form=SMALLEST, short=False) > limit
        return True

    def _floor(self, form: str, *, short: bool | None = None) -> int:
        """A lower bound on the briefing's length without the next block, whatever that block is.

        Everything as admitted so far, but the footer at its shortest (no
        optional lines, digits to spare), so a candidate that overruns even
        this bound can be refused without rendering it.
        """
        key = f"{form}:{short}"
        n = self._floors.get(key)
        if n is None and form == SMALLEST:
            n = self._floors[key] = min(self._floor(NAMES, short=short), self._floor(COUNT, short=short))
        if n is None:
            deferred = len(self.current) - self.full
            count = min(len(self.window), deferred)
            index_len = self._index_len(count, self.win_scaled, self.win_names, deferred, form=form)
            shortest = Tally(self.full, deferred, deferred, self.retired_count, 0, self.tally(0).coverage, 0)
            footer_len = min(
                len(self.footer(shortest, short=short)), len(self.footer(shortest.replace(uncovered=1), short=short))
            )
            n = self._floors[key] = len(self.head) + self.blocks_len + index_len + 1 + footer_len - 6
        return n

    def _cites(self, rid: str) -> list[str]:
        """Current records a block of rid names in its relation fields."""
        return [r for r in self._outgoing(rid) if r in self.current]

    def _trial_len(self, rid: str, block_len: int, *, form: str, short: bool | None = None) -> int:
        """The whole briefing's exact length if rid's block were admitted.

        SMALLEST: the index as its count line or the window's names, whichever is shorter.
        """
        if form == SMALLEST:
            return min(
                self._trial_len(rid, block_len, form=NAMES, short=short),
                self._trial_len(rid, block_len, form=COUNT, short=short),
            )
        is_current = rid in self.current
        count, scaled_sum, names_sum = len(self.window), self.win_scaled, self.win_names
        if is_current and rid in self.window_set:
            count, scaled_sum, names_sum = count - 1, scaled_sum - self.scaled_len(rid), names_sum - len(rid)
            nxt = self._next_outside()
            if nxt is not None:
                count, scaled_sum, names_sum = count + 1, scaled_sum + self.scaled_len(nxt), names_sum + len(nxt)
        full = self.full + is_current
        deferred = len(self.current) - full
        missing = len(self.missing) - (rid in self.missing)
        missing += sum(1 for c in self._cites(rid) if c not in self.admitted and c not in self.missing)
        uncovered = self.uncovered - (rid in self.targets)
        tally = self.tally(min(count, deferred), full=full, missing=missing, uncovered=uncovered)
        if form == COUNT:
            tally = tally.replace(named=0)
        index_len = self._index_len(count, scaled_sum, names_sum, deferred, form=form)
        return len(self.head) + self.blocks_len + 1 + block_len + index_len + 1 + len(self.footer(tally, short=short))

    def _refuses(self, rid: str, limit: int, form: str, *, short: bool | None = None) -> bool:
        """True when rid's block cannot fit, judged from a cheap lower bound on its length."""
        freed = 0
        if rid in self.window_set:  # admitting it takes its line (or name) out of the index
            freed = self.scaled_len(rid) if form == SCALED else len(rid) + 2
        return self._floor(form, short=short) - freed + 1 + render.block_floor(self.view(rid)) > limit

    def gate(self, *, mandatory: bool, root: bool = False) -> tuple[int, str]:
        """(limit, index form) an admission is measured with.

        The first root may shrink the index to its count line (beside the
        full header; the short one is there to name the index); under a
        ceiling (--max-chars) any root may shrink it to bare names, full text
        before index detail. A task match, or any root under --all, may use
        the hard limit with bare names. Everything else keeps the briefing
        within the soft limit with the index at full detail.
        """
        limit = self.hard if mandatory else self.soft
        if root and not self.blocks and not self.short:
            return limit, SMALLEST
        # Without --max-chars the soft limit is a target, not a ceiling: nothing is over it, so the
        # index keeps its detail and other roots stop at the target (Docket's ladder runs over a ceiling).
        if mandatory or (root and self.soft == self.hard):
            return limit, NAMES
        return limit, SCALED

    def admit(self, entry: Entry, gate: tuple[int, str]) -> bool:
        """Add entry's block if the whole briefing still fits the gate's limit and index form; True when admitted."""
        rid = entry.view["id"]
        limit, form = gate
        if rid in self.admitted or self._refuses(rid, limit, form):
            return False
        text = render.block(entry)
        if self._trial_len(rid, len(text), form=form) > limit:
            return False
        if limit > self.ceiling:
            self.ceiling = limit
        self.entries.append(entry)
        self.blocks.append(text)
        self.blocks_len += 1 + len(text)
        self.admitted.add(rid)
        self.missing.discard(rid)
        self.missing.update(c for c in self._cites(rid) if c not in self.admitted)
        self.uncovered -= rid in self.targets
        if rid in self.current:
            self.full += 1
            if rid in self.window_set:
                self.window.remove(rid)
                self.window_set.discard(rid)
                self.win_scaled -= self.scaled_len(rid)
                self.win_names -= len(rid)
                self._fill_window()
        self._floors.clear()
        return True

    def _exhausted(self, rid: str, gate: tuple[int, str]) -> bool:
        """True when no block of a record ranked at or after rid, outside the window, can fit any more."""
        if rid in self.window_set or rid in self.admitted:
            return False
        limit, form = gate
        return self._floor(form) + 1 + render.MIN_BLOCK > limit

    # -- the admission order ----------------------------------------------------------------------

    def _root_entry(self, rid: str, label: str | None = None) -> tuple[Entry, list[list[str]]]:
        """A root's entry and its blocking chains."""
        chains = blocking_chains(rid, self.by_id, self.derived)
        score = self.scores[rid]
        label = self.root_label if label is None else label
        return Entry(self.view(rid), label, score.total, score, chains=tuple(chain_text(c) for c in chains)), chains

    def _root(self, rid: str, label: str, *, mandatory: bool, root: bool = True) -> bool:
        """Admit a root and, if it is a blocked decision, every record on its blocking chains."""
        gate = self.gate(mandatory=mandatory, root=root)
        if rid in self.admitted or self._refuses(rid, *gate):
            return False
        entry, chains = self._root_entry(rid, label)
        score = entry.own
        if not self.admit(entry, gate):
            return False
        gate = self.gate(mandatory=mandatory, root=root)  # the chain's steps follow as the root did
        num, den = self.decay
        for chain in chains:
            for step in chain[:-1]:
                if step in self.admitted or step not in self.by_id:
                    continue
                own = self.scores.get(step)
                eff = own.total if own is not None else score.total * num // den
                step_chains = tuple(chain_text(c) for c in blocking_chains(step, self.by_id, self.derived))
                prereq = Entry(self.view(step), "blocking prerequisite", eff, own, via=rid, chains=step_chains)
                self.admit(prereq, gate)
        return True

    def _outgoing(self, rid: str) -> list[str]:
        """Records rid names in supports, depends_on and answers, and (a question) its resolvers."""
        record = self.by_id[rid]
        refs = model.support_ids(record)
        refs.extend(record.get("depends_on") or ())
        refs.extend(record.get("answers") or ())
        refs.extend(self.derived.resolved_by.get(rid, ()))
        return [r for r in dict.fromkeys(refs) if r != rid]

    def _neighbours(self, rid: str) -> list[str]:
        """Records related to rid either way; a retired record only when rid cites it."""
        out = self._outgoing(rid)
        out.extend(self.scores.incoming.get(rid, ()))
        return [r for r in dict.fromkeys(out) if r in self.by_id and r != rid]

    def expand(self, seeds: list[Entry]) -> None:
        """Best-first from seeds: neighbours inherit decay x the parent's score, down to the floor."""
        num, den = self.decay
        heap: list[tuple[int, int, str, str]] = []
        tried: set[str] = set()

        def push(parent: str, score: int) -> None:
            inherited = score * num // den
            if inherited < self.floor:
                return
            fresh = [n for n in self._neighbours(parent) if n not in self.admitted and n not in tried]
            self.outline.many(fresh)  # their blocks are weighed when popped: read their lines together
            for n in fresh:
                own = self.scores.totals.get(n)
                eff = inherited if own is None else min(own, inherited)
                heapq.heappush(heap, (-eff, -self.pos[n], n, parent))

        for entry in seeds:
            if entry.score is not None and not entry.historical:
                push(entry.view["id"], entry.score)
        while heap:
            neg, _, rid, parent = heapq.heappop(heap)
            if rid in tried or rid in self.admitted:
                continue
            tried.add(rid)
            chains = tuple(chain_text(c) for c in blocking_chains(rid, self.by_id, self.derived))
            entry = Entry(self.view(rid), "related record", -neg, self.scores.get(rid), via=parent, chains=chains)
            if self.admit(entry, self.gate(mandatory=False)) and not entry.historical:
                push(rid, -neg)

    def _ahead(self, rids: Sequence[str], skip: Callable[[str], bool] | None = None) -> Iterator[str]:
        """rids in order, their records read ahead PREFETCH at a time (lines decoded together).

        ``skip``: records not worth reading ahead (as things stand when their batch is read).
        """
        many = self.outline.many
        for i, rid in enumerate(rids):
            if i % PREFETCH == 0:
                batch = rids[i : i + PREFETCH]
                many([r for r in batch if not skip(r)] if skip is not None else list(batch))
            yield rid

    def run(self) -> str:
        """Admit records in order, then lay the briefing out."""
        label, mandatory = self.root_label, self.root_mandatory
        misses = 0
        for rid in self._ahead(self.roots):
            # Roots come in score order, so once one outside the index window cannot fit, none can.
            if self._exhausted(rid, self.gate(mandatory=mandatory, root=True)):
                break
            if self._root(rid, label, mandatory=mandatory):
                misses = 0
            elif rid not in self.admitted:
                # Smaller, lower-ranked blocks could still fill a gap, but after a long run of
                # refusals they would only trade the index's order for noise (and time).
                misses += 1
                if misses >= MAX_ROOT_MISSES:
                    break
        self.expand(list(self.entries))
        if self.task and self.hits:
            hits = self.scores.hits
            pins = [rid for rid in self.pins if rid not in hits]
            gate = self.gate(mandatory=False, root=False)
            for rid in self._ahead(pins, skip=lambda rid: self._exhausted(rid, gate)):
                # An exhausted pin would be refused (its block cannot fit): skip it unread.
                if rid not in self.admitted and not self._exhausted(rid, gate):
                    start = len(self.entries)
                    if self._root(rid, "fallback pin", mandatory=False, root=False):
                        self.expand(self.entries[start:])
        return self._layout()

    # -- the ladder -------------------------------------------------------------------------------

    def _layout(self) -> str:
        """The briefing in the best form that fits the ceiling (the hard limit once a task match used it).

        1. the index window at score-scaled detail; 2. the window at
        detail_min; 3. every deferred record named: the top j window lines at
        detail_min (j as large as fits; the lowest-scoring lines give up their
        text first), the rest as bare IDs; 4. the same, naming at least the
        window; 5. as many bare IDs as fit; 6. steps 1-5 with the short header
        and footer; 7. the last-resort three lines.
        """
        deferred = _Deferred(self.order, self.admitted, len(self.current) - self.full)
        tries = [(self.head, self.short)]
        if not self.short:
            tries.append((render.short_header(self.meta), True))
        for ceiling in dict.fromkeys((self.ceiling, self.hard)):
            for head, short in tries:
                text = self._fit(head, short, deferred, ceiling)
                if text is not None:
                    return text
        return render.last_resort(self.meta)

    def _assemble(self, head: str, short: bool, index: str, named: int) -> str:
        parts = [head]
        for text in self.blocks:
            parts.append("\n")
            parts.append(text)
        if index:
            parts.append("\n")
            parts.append(index)
        parts.append("\n")
        parts.append(self.footer(self.tally(named), short=short))
        return "".join(parts)

    def _fit(self, head: str, short: bool, deferred: _Deferred, hard: int) -> str | None:
        d = len(deferred)
        if d == 0:
            text = self._assemble(head, short, "", 0)
            return text if len(text) <= hard else None
        window = deferred[: self.max_lines]
        w = len(window)
        heading = render.index_heading(d)
        lines = [render.index_line(self.view(r), self.detail(r)) for r in window]
        text = self._assemble(head, short, heading + "".join(lines) + render.index_overflow(d - w), w)
        if len(text) <= hard:
            return text
        min_lines = [render.index_line(self.view(r), self.detail_min) for r in window]
        text = self._assemble(head, short, heading + "".join(min_lines) + render.index_overflow(d - w), w)
        if len(text) <= hard:
            return text

        # Steps 3-5: j lines at detail_min, then k bare IDs, then the overflow count.
        fixed = len(head) + self.blocks_len + 1
        footers: dict[int, int] = {}

        def footer_len(named: int) -> int:
            n = footers.get(named)
            if n is None:
                n = footers[named] = len(self.footer(self.tally(named), short=short))
            return n

        lines_len = [0]
        for line in min_lines:
            lines_len.append(lines_len[-1] + len(line))
        ids_len = deferred.ids_len
        # k names cost at least 4k - 1 characters (an ID has at least 2, a separator 2): more than
        # hard // 4 never fit, so the deferred records past that many are never read.
        most = hard // 4

        def index_len(j: int, k: int) -> int:
            if j == 0 and k == 0:
                return len(render.unnamed_index(d))
            n = len(heading) + lines_len[j] if j else 0
            if k:
                lead = render.ALSO_LEAD if j else render.NAMES_LEAD
                n += len(lead) + ids_len(j + k) - ids_len(j) + 2 * (k - 1) + 1
            return n + len(render.index_overflow(d - j - k))

        def fits(j: int, k: int) -> bool:
            return k <= most and fixed + 1 + index_len(j, k) + footer_len(j + k) <= hard

        def most_names(j: int, need: int) -> int:
            """The largest k (names after j lines) that fits, or -1 when none with j + k >= need does."""
            if fits(j, d - j):
                return d - j
            # Below d - j the length grows with k: a name costs more than any digit it saves. So when
            # the fewest names that would do (need - j) do not fit, no more do.
            lo, hi = max(0, need - j), d - j - 1
            if lo > hi or not fits(j, lo):
                return -1
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if fits(j, mid):
                    lo = mid
                else:
                    hi = mid - 1
            return lo

        def text_for(j: int, k: int) -> str:
            if j == 0 and k == 0:
                return self._assemble(head, short, render.unnamed_index(d), 0)
            body = heading + "".join(min_lines[:j]) if j else ""
            if k:
                body += render.names_line(deferred[j : j + k], lead=render.ALSO_LEAD if j else render.NAMES_LEAD)
            return self._assemble(head, short, body + render.index_overflow(d - j - k), j + k)

        for need in (d, w):  # step 3: every deferred record named; step 4: at least the window
            for j in range(w - 1, -1, -1):
                k = most_names(j, need)
                if k >= 0:
                    text = text_for(j, k)
                    if len(text) <= hard:  # the arithmetic above is exact; this keeps the ceiling regardless
                        return text
        k = most_names(0, 0)  # step 5
        text = text_for(0, k) if k >= 0 else ""
        return text if text and len(text) <= hard else None


class _Deferred(Ranking):
    """The ranked records not in full text, read from the ranking as far as the layout looks."""

    __slots__ = ("_lens",)

    def __init__(self, order: Sequence[str], admitted: set[str], count: int) -> None:
        super().__init__((rid for rid in order if rid not in admitted), count)
        self._lens = [0]

    def ids_len(self, n: int) -> int:
        """The total length of the first n deferred IDs."""
        lens = self._lens
        if len(lens) <= n:
            self._fill(n)
            for rid in self._items[len(lens) - 1 : n]:
                lens.append(lens[-1] + len(rid))
        return lens[n]


def select_outline(outline: Outline, settings: Settings, request: Request, meta: Meta) -> str:
    """The briefing for a ledger's outline; "" when the ledger has no records."""
    if not outline.ids:
        return ""
    return _Selector(outline, settings, request, meta).run()
