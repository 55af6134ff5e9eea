"""``--since``: what changed after a baseline record.

The delta is a pure function of two record lists, the baseline's and the
current ledger's, so the baseline can come from a prefix of the current file
(``resolve_baseline``) or from the ledger at an older commit, with ``id_map``
mapping its IDs to current ones when a merge has renumbered the tail.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from docket_git.context import render
from docket_git.context.outline import Outline
from docket_git.context.render import Entry, Meta
from docket_git.context.select import blocking_chains, chain_text
from docket_git.ledger import model
from docket_git.ledger.project import Derived, derive, is_available, project, view
from docket_git.plain import Plain


class Delta(Plain):
    """Records added after the baseline, and records available then that no longer are."""

    __slots__ = ("added", "chains", "lost")

    def __init__(self, added: list[dict], lost: list[dict], chains: dict[str, tuple[str, ...]] | None = None) -> None:
        #: Projected current views of the added records, in file order.
        self.added = added
        #: Projected views (current ones; the baseline's if the record is gone) of records that lost availability.
        self.lost = lost
        #: Blocked decision -> its ``blocked:`` chains, for the blocks.
        self.chains = {} if chains is None else chains


parse_since = model.split_ref


def resolve_baseline(snapshot, value: str) -> list[dict] | None:
    """The ledger's records up to and including the baseline, or None if unknown or stale.

    With ``@DIGEST`` the digest must match the SHA-256 of the ledger bytes up
    to and including that record's line (the header shows 12 hex; 8 to 64 are
    accepted): an ID renumbered by a merge names different bytes and is stale.
    """
    rid, digest = parse_since(value)
    if not model.is_id(rid):
        return None
    position = snapshot.position(rid)
    if position is None:
        return None
    if digest is not None:
        if not model.DIGEST_RE.match(digest):
            return None
        if not snapshot.prefix_digest(position).startswith(digest.lower()):
            return None
    return snapshot.records[: position + 1]


def delta(baseline: list[dict], current: list[dict], id_map: dict[str, str] | None = None) -> Delta:
    """Added and no-longer-available records between two raw record lists.

    A record that was already unavailable at the baseline is not a change.
    """
    mapped = (lambda rid: id_map.get(rid, rid)) if id_map else (lambda rid: rid)
    before = project(baseline)
    derived = derive(current)
    now = [view(r, derived) for r in current]
    known = {mapped(v["id"]) for v in before}
    added = [v for v in now if v["id"] not in known]
    by_id = {v["id"]: v for v in now}
    lost: list[dict] = []
    for then in before:
        if not is_available(then):
            continue
        later = by_id.get(mapped(then["id"]))
        if later is None:
            lost.append(then)
        elif not is_available(later):
            lost.append(later)
    return Delta(added, lost, _chains((*added, *lost), {r["id"]: r for r in current}, derived))


def _chains(views: Iterable[dict], by_id: Mapping[str, dict], derived: Derived) -> dict[str, tuple[str, ...]]:
    chains = {}
    for v in views:
        found = blocking_chains(v["id"], by_id, derived)
        if found:
            chains[v["id"]] = tuple(chain_text(c) for c in found)
    return chains


def appended(outline: Outline, position: int) -> Delta | None:
    """The delta since the record at ``position`` of this same ledger, from its outline; None if not certain.

    A record's availability depends only on earlier records and on what
    supersedes it, so when no record after the baseline supersedes anything,
    nothing available then has stopped being available: the delta is just
    the records added since. Otherwise None, and the caller compares the
    two projections in full.
    """
    records, derived, pos = outline.records, outline.derived, outline.pos
    if any(pos[by] > position for by in derived.retired_by.values()):
        return None
    later = outline.many(outline.ids[position + 1 :])
    added = [view(r, derived) for r in later]
    return Delta(added, [], _chains(added, records, derived))


#: At most this many ``old -> new`` pairs are named on the renumbered line.
RENUMBERED_SHOWN = 20


def render_delta(
    d: Delta, meta: Meta, since: str, *, limit: int, detail: int, id_map: Mapping[str, str] | None = None
) -> str:
    """The delta briefing: blocks labelled ``changed`` while they fit, then index lines at detail.

    ``id_map`` (baseline ID -> current ID): the IDs a merge, rebase or cherry-pick changed since
    are named on one line before the records, so an agent holding the baseline's IDs learns what
    they are called now (``# renumbered since d3@...: c2 -> c3, d3 -> d4``).
    """
    since_id = parse_since(since)[0]
    pairs = [f"{old} -> {new}" for old, new in (id_map or {}).items() if new and new != old]
    moved = ""
    if pairs:
        more = f" and {len(pairs) - RENUMBERED_SHOWN} more" if len(pairs) > RENUMBERED_SHOWN else ""
        moved = f"# renumbered since {since}: {', '.join(pairs[:RENUMBERED_SHOWN])}{more}\n"
    changed = f"# changed: {len(d.added)} added, {len(d.lost)} no longer available.\n"
    first = f"# docket: {render.clip(render.one_line(meta.identity), render.IDENTITY_CLIP)}"
    first += f" | revision: {meta.revision} | latest: {meta.latest}@{meta.revision} | since: {since_id}\n"
    head = first + changed + moved
    if len(head) > limit:
        short = f"# docket: {render.clip(render.one_line(meta.identity), render.SHORT_IDENTITY_CLIP)}"
        head = short + f" | revision: {meta.revision} | since: {since_id}\n" + changed + moved
        if len(head) > limit:
            head = head[: -len(moved)] if moved else head
        if len(head) > limit:
            return render.last_resort(meta)
    entries = [
        Entry(v, "changed", chains=d.chains.get(v["id"], ()), note=f"change: added after {since_id}") for v in d.added
    ]
    entries += [
        Entry(v, "changed", chains=d.chains.get(v["id"], ()), note=f"change: no longer available since {since_id}")
        for v in d.lost
    ]
    n = len(entries)
    out = [head]
    size = len(head)

    def heading(remaining: int) -> str:
        return f"# index: {remaining} more changed records\n"

    def reserve(remaining: int, *, with_heading: bool) -> int:
        # Room what follows needs at least: the index heading and the count of what stays unnamed.
        if remaining <= 0:
            return 0
        extra = 1 + len(heading(remaining)) if with_heading else 0
        return extra + len(render.index_overflow(remaining))

    i = 0
    while i < n:
        text = render.block(entries[i])
        if size + 1 + len(text) + reserve(n - i - 1, with_heading=True) > limit:
            break
        out += ["\n", text]
        size += 1 + len(text)
        i += 1
    if i < n:
        first_line = heading(n - i)
        out += ["\n", first_line]
        size += 1 + len(first_line)
        while i < n:
            line = render.index_line(entries[i].view, detail)
            if size + len(line) + reserve(n - i - 1, with_heading=False) > limit:
                break
            out.append(line)
            size += len(line)
            i += 1
        out.append(render.index_overflow(n - i))
    text = "".join(out)
    if len(text) > limit:  # only when even the heading cannot fit beside the header
        return head
    return text
