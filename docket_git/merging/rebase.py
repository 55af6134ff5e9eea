"""Merging two ledger histories: one pure function, used by ``docket rebase`` and the git driver.

``merge(base, ours, theirs)`` keeps ``ours`` untouched and returns the records
to append after it (the tail), the IDs those records had in ``theirs``, and the
semantic conflicts it settled. Records are plain dicts; the inputs are any
sequences, so the driver can hand in ``RawLedger`` objects that parse a line
only when it is looked at (a 100k-record shared prefix is compared as bytes and
never parsed).

Matching uses ``content_key``: the record without its ID, with ID tokens in
prose masked, so a record keeps its identity when a merge renumbers it. A later
merge in either direction finds it again and appends nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from docket_git.ledger import model
from docket_git.ledger.validate import parse_line

MERGE_AUTHOR = "docket-merge"
_MASK = "#"
_BLANK_LINE = re.compile(rb"\n[ \t\r\f\v]*\n")


class MergeRefused(Exception):
    """The histories cannot be merged without a person deciding something."""


@dataclass
class Conflict:
    """Both histories superseded one record; the incoming side's relation was dropped."""

    target: str
    #: Our record that retired the target.
    ours: str
    #: The incoming record's ID in the other history, and its ID in the merged ledger.
    theirs_was: str
    theirs: str
    #: The open question appended to settle it ("" when an equal question already exists).
    question: str = ""

    def describe(self) -> str:
        """One line for a person: what happened and what the merge did."""
        asked = f"; open question {self.question} asks which stands" if self.question else ""
        return (
            f"both histories supersede {self.target}: {self.ours} here and {self.theirs} "
            f"(was {self.theirs_was}) from the other side; kept both, dropped "
            f"{self.theirs} supersedes {self.target}{asked}"
        )

    def refusal(self) -> str:
        """The message when a strict merge refuses instead."""
        return (
            f"both histories supersede {self.target} ({self.ours} here, {self.theirs_was} in the other "
            "ledger); supersede one of them by hand, or merge without strict mode "
            "(--strict / merge.docket.strict) to get an open question instead"
        )


# -- ledgers as lazily parsed lines ------------------------------------------------


class RawLedger(Sequence):
    """A ledger's non-blank lines, each parsed to a record on first access.

    ``lenient`` ledgers (a merge base, which may even hold conflict markers
    after a criss-cross merge) read an unparseable line as None instead of
    raising ``ValueError``.
    """

    def __init__(self, data: bytes, *, lenient: bool = False) -> None:
        lines = data.split(b"\n")
        if lines and not lines[-1]:
            lines.pop()
        if lines and (not lines[0].strip() or not lines[-1].strip() or _BLANK_LINE.search(data)):
            self.numbers = [n for n, line in enumerate(lines, start=1) if line.strip()]
            lines = [line for line in lines if line.strip()]
        else:
            self.numbers = None
        self.lines: list[bytes] = lines
        self.lenient = lenient
        self._parsed: dict[int, object] = {}

    def __len__(self) -> int:
        return len(self.lines)

    def line_number(self, i: int) -> int:
        """The 1-based file line number of record i."""
        return self.numbers[i] if self.numbers is not None else i + 1

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if i in self._parsed:
            return self._parsed[i]
        try:
            record = parse_line(self.lines[i])
        except ValueError as exc:
            if not self.lenient:
                raise ValueError(f"line {self.line_number(i)}: {exc}") from None
            record = None
        if not isinstance(record, dict):
            if not self.lenient:
                raise ValueError(f"line {self.line_number(i)}: record: each JSONL line must be an object")
            record = None
        self._parsed[i] = record
        return record

    def find(self, record_id: str, end: int | None = None) -> int | None:
        """The position of record_id among the first ``end`` records (all by default), or None.

        A binary search over the records' increasing IDs; a line on the way
        that holds no record ID (a lenient ledger's unreadable line) falls
        back to a byte scan. A non-lenient ledger raises ``ValueError`` there.
        """
        stop = len(self) if end is None else end
        want = model.seq(record_id)
        lo, hi = 0, stop
        while lo < hi:
            mid = (lo + hi) // 2
            record = self[mid]
            rid = record.get("id") if isinstance(record, dict) else None
            if not model.is_id(rid):
                break
            if rid == record_id:
                return mid
            if model.seq(rid) < want:
                lo = mid + 1
            else:
                hi = mid
        else:
            return None
        needle = f'"{record_id}"'.encode()
        for i in range(stop):
            if needle in self.lines[i]:
                record = self[i]
                if isinstance(record, dict) and record.get("id") == record_id:
                    return i
        return None


def plain(data: bytes, end: int) -> bool:
    """True when ``data[:end]`` has no blank line (``RawLedger`` would skip one): each line there is one record."""
    return not data[:1].isspace() and _BLANK_LINE.search(data, 0, end) is None


def shared_start(a: bytes, b: bytes) -> int:
    """Where the last whole line a and b share begins (a byte offset; 0 when they share no whole line).

    Compared 64 KiB at a time, then halving the block that differs.
    """
    n = min(len(a), len(b))
    block = 1 << 16
    lo = 0  # a[:lo] == b[:lo]
    while lo < n and a[lo : min(lo + block, n)] == b[lo : min(lo + block, n)]:
        lo += block
    common = min(lo, n)
    if lo < n:
        hi = min(lo + block, n)  # a[:hi] != b[:hi]
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if a[lo:mid] == b[lo:mid]:
                lo = mid
            else:
                hi = mid
        common = lo
    cut = a.rfind(b"\n", 0, common) + 1  # just past the last whole shared line
    return a.rfind(b"\n", 0, cut - 1) + 1 if cut else 0


def common_prefix(a: Sequence, b: Sequence) -> int:
    """How many leading records a and b share, compared as parsed records.

    Raw lines that are byte-identical are equal without parsing; only lines
    whose bytes differ are parsed and compared as objects.
    """
    limit = min(len(a), len(b))
    raw = isinstance(a, RawLedger) and isinstance(b, RawLedger)
    i = 0
    while i < limit:
        if raw:
            la, lb = a.lines, b.lines  # type: ignore[attr-defined]
            while i < limit and la[i] == lb[i]:
                i += 1
            if i == limit:
                break
        try:
            same = a[i] == b[i] and a[i] is not None
        except ValueError:
            same = False
        if not same:
            break
        i += 1
    return i


# -- identity ------------------------------------------------------------------------


def _mask(text: str) -> str:
    return model.ID_TOKEN_RE.sub(_MASK, text)


def content_key(record: dict, *, supersedes: bool = True) -> str:
    """A record's identity across renumbering: no ID, ID tokens in prose and evidence masked.

    Relations stay in the key, so records citing different records differ.
    ``supersedes=False`` leaves that relation out (a merge may have dropped
    one of its targets).
    """
    out: dict = {}
    for name, value in record.items():
        if name == "id" or (name == "supersedes" and not supersedes):
            continue
        if name in model.PROSE_FIELDS:
            if isinstance(value, str):
                value = _mask(value)
            elif isinstance(value, list):
                value = [_mask(v) if isinstance(v, str) else v for v in value]
        elif name == "evidence" and isinstance(value, list):
            value = [
                {**e, "ref": _mask(e["ref"])} if isinstance(e, dict) and isinstance(e.get("ref"), str) else e
                for e in value
            ]
        elif name == "legacy" and not supersedes and isinstance(value, dict):
            relation_map = value.get("relation_map")
            if isinstance(relation_map, dict):
                relation_map = {k: v for k, v in relation_map.items() if k != "mapped_supersedes"}
                value = {**value, "relation_map": relation_map}
        out[name] = value
    return json.dumps(out, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def translate(record: dict, mapping: dict[str, str]) -> dict:
    """A copy of record with every cited ID looked up once in mapping (relations and prose)."""

    def one(ref: object) -> object:
        return mapping.get(ref, ref) if isinstance(ref, str) else ref

    def prose(text: str) -> str:
        return model.ID_TOKEN_RE.sub(lambda m: mapping.get(m.group(0), m.group(0)), text)

    out = dict(record)
    for name in model.FLAT_RELATIONS:
        if isinstance(out.get(name), list):
            out[name] = [one(r) for r in out[name]]
    if isinstance(out.get("supports"), list):
        out["supports"] = [[one(r) for r in g] if isinstance(g, list) else g for g in out["supports"]]
    for name in model.PROSE_FIELDS:
        value = out.get(name)
        if isinstance(value, str):
            out[name] = prose(value)
        elif isinstance(value, list):
            out[name] = [prose(v) if isinstance(v, str) else v for v in value]
    legacy = out.get("legacy")
    if isinstance(legacy, dict) and isinstance(legacy.get("relation_map"), dict):
        relation_map = dict(legacy["relation_map"])
        for relation in model.RELATIONS:
            key = f"mapped_{relation}"
            if key in relation_map:
                relation_map[key] = out.get(relation, [])
        out["legacy"] = {**legacy, "relation_map": relation_map}
    return out


def _prose_ids(record: dict) -> set[str]:
    """The record IDs named in a record's prose fields."""
    found: set[str] = set()
    for name in model.PROSE_FIELDS:
        value = record.get(name)
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str):
                found.update(m.group(0) for m in model.ID_TOKEN_RE.finditer(text))
    return found


def _drop_supersedes(record: dict, target: str) -> None:
    record["supersedes"] = [t for t in record["supersedes"] if t != target]
    legacy = record.get("legacy")
    if isinstance(legacy, dict) and isinstance(legacy.get("relation_map"), dict):
        relation_map = legacy["relation_map"]
        if "mapped_supersedes" in relation_map:
            record["legacy"] = {**legacy, "relation_map": {**relation_map, "mapped_supersedes": record["supersedes"]}}


# -- the merge -------------------------------------------------------------------------


class _Waiting:
    """Our tail records not yet matched by one of theirs, by full and by supersedes-blind key."""

    def __init__(self, records: list[dict]) -> None:
        self.full: dict[str, list[dict]] = {}
        self.loose: dict[str, list[dict]] = {}
        self.taken: set[str] = set()
        for record in records:
            self.full.setdefault(content_key(record), []).append(record)
            self.loose.setdefault(content_key(record, supersedes=False), []).append(record)

    def take(self, record: dict) -> dict | None:
        """Consume the one waiting record that matches record, if any."""
        for candidate in self.full.get(content_key(record), ()):
            if candidate["id"] not in self.taken:
                self.taken.add(candidate["id"])
                return candidate
        # Equal but for supersedes targets one side lost to an earlier both-supersede merge.
        mine = set(record.get("supersedes") or ())
        for candidate in self.loose.get(content_key(record, supersedes=False), ()):
            other = set(candidate.get("supersedes") or ())
            if candidate["id"] not in self.taken and (mine <= other or other <= mine):
                self.taken.add(candidate["id"])
                return candidate
        return None


def _clip(text: object, limit: int = 100) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _asks(record: dict) -> tuple[str, frozenset[str]] | None:
    """(target, the two records) a merge question names, from its text; None for other records."""
    if record.get("author") != MERGE_AUTHOR or record.get("kind") != "question":
        return None
    tokens = [m.group(0) for m in model.ID_TOKEN_RE.finditer(str(record.get("text", "")))]
    return (tokens[0], frozenset(tokens[1:3])) if len(tokens) >= 3 else None


def merge_question(qid: str, text: str, rationale: str, scope: list[str], ts: str, evidence: list[str]) -> dict:
    """An open question recorded by a merge (author ``docket-merge``): how every merge asks a person."""
    return model.ordered(
        {
            "schema": model.SCHEMA,
            "kind": "question",
            "id": qid,
            "text": text,
            "state": "open",
            # Deterministic, so merging the other way produces an equal question and finds this one.
            "ts": ts,
            "author": MERGE_AUTHOR,
            "session": "",
            "branch": "",
            "scope": scope,
            "rationale": rationale,
            "supports": [],
            "depends_on": [],
            "answers": [],
            "supersedes": [],
            "evidence": [{"ref": ref} for ref in evidence],
            "revisit": "",
            "cost_if_wrong": "",
            "pinned": False,
        }
    )


def _question(conflict: Conflict, here: dict, incoming: dict, qid: str) -> dict:
    ours, theirs, target = conflict.ours, conflict.theirs, conflict.target
    return merge_question(
        qid,
        f"Both branches superseded {target}: {ours} here and {theirs} from the merged branch. Which one stands?",
        # The two texts make the question tell conflicts apart even with every ID masked.
        (
            f'{ours} says "{_clip(here.get("text"))}"; {theirs} says "{_clip(incoming.get("text"))}". '
            f"The merge kept both and dropped {theirs} supersedes {target} so the ledger stays valid. "
            "Supersede the one that should not stand."
        ),
        sorted({*(here.get("scope") or ()), *(incoming.get("scope") or ())}),
        max(str(here.get("ts", "")), str(incoming.get("ts", ""))),
        [f"dropped relation: {theirs} supersedes {target}"],
    )


def merge(
    base: Sequence, ours: Sequence, theirs: Sequence, *, strict: bool = False
) -> tuple[list[dict], dict[str, str], list]:
    """Merge theirs into ours: (records to append to ours, theirs' ID -> new ID, conflicts settled).

    The conflicts are ``Conflict``s (both sides superseded one record) and
    ``contested.Contradiction``s (two adopted decisions from different sides
    each choose what the other rejected); each got an open question.
    ``base`` is the common ancestor (empty when unknown); its records that
    ours no longer has are not re-imported. Raises ``MergeRefused`` when a
    record cannot be placed, or on either kind of conflict when strict.
    Inputs are valid ledgers; ``ValueError`` from a ``RawLedger`` line passes through.
    """
    shared = common_prefix(ours, theirs)
    ours_tail: list[dict] = list(ours[shared:])
    theirs_tail: list[dict] = list(theirs[shared:])
    in_base_until = common_prefix(base, theirs)  # theirs records before this are base records
    base_keys = {content_key(r) for r in base[in_base_until:] if isinstance(r, dict)}

    top = 0
    for record in (*([ours[shared - 1]] if shared else []), *ours_tail):
        top = max(top, model.seq(record["id"]))
    retired_by: dict[str, dict] = {}
    for record in ours_tail:
        for target in record.get("supersedes") or ():
            retired_by[target] = record

    waiting = _Waiting(ours_tail)
    mapping: dict[str, str] = {}
    moved: dict[str, str] = {}
    dropped: set[str] = set()
    tail: list[dict] = []
    conflicts: list[tuple[Conflict, dict, dict]] = []

    for position, original in enumerate(theirs_tail, start=shared):
        old = original["id"]
        record = translate(original, mapping)
        match = waiting.take(record)
        if match is not None:
            mapping[old] = match["id"]
            continue
        if position < in_base_until or content_key(original) in base_keys:
            dropped.add(old)  # ours removed or rewrote it (or a cherry-pick's history)
            continue
        cited = {ref for _, ref in model.references(original) if ref in dropped}
        # An ID in prose must not be left naming whatever record holds that ID on this side.
        mentioned = {token for token in _prose_ids(original) if token in dropped} - cited
        if cited or mentioned:
            named = ", ".join(sorted(cited | mentioned, key=model.seq))
            how = " (in its text)" if not cited else ""
            raise MergeRefused(
                f"{old} cites {named}{how}, which this side does not have; bring that record over first "
                "(cherry-pick or merge the commit that recorded it), or give this one up and record it again"
            )
        top += 1
        new = model.make_id(record["kind"], top)
        record["id"] = new
        for target in list(record.get("supersedes") or ()):
            here = retired_by.get(target)
            if here is None:
                continue
            conflict = Conflict(target=target, ours=here["id"], theirs_was=old, theirs=new)
            if strict:
                raise MergeRefused(conflict.refusal())
            _drop_supersedes(record, target)
            conflicts.append((conflict, here, record))
        for target in record.get("supersedes") or ():
            retired_by[target] = record
        mapping[old] = new
        moved[old] = new
        tail.append(record)

    # A merge the other way may already have asked (its question came in, renumbered, above).
    asked = {a for a in map(_asks, (*ours_tail, *tail)) if a is not None}
    for conflict, here, incoming in conflicts:
        if (conflict.target, frozenset((conflict.ours, conflict.theirs))) in asked:
            continue
        question = _question(conflict, here, incoming, model.make_id("question", top + 1))
        top += 1
        conflict.question = question["id"]
        tail.append(question)
    from docket_git.merging import contested

    questions, contradictions = contested.settle(ours_tail, tail, top)
    if contradictions and strict:
        raise MergeRefused(contradictions[0].refusal())
    tail.extend(questions)
    return tail, moved, [*(c for c, _, _ in conflicts), *contradictions]


def match(records: Sequence, pool: Sequence, mapping: dict[str, str] | None = None) -> dict[str, str]:
    """Each record's ID -> the ID of the equal record in pool, found as ``merge`` finds them.

    Records are taken in order and their citations translated through the
    matches so far (and the given mapping), so a renumbered record and the
    records citing it are found again; a record a merge changed (a dropped
    supersedes target) still matches. Records without an equal are left out.
    """
    # Only a record with the same ``ts`` can have the same content key (``content_key`` keeps every
    # field but the ID, masking only prose, evidence and relations): a large pool is cut to those
    # first, in its order, so matching a few records does not key every record of a 100k ledger.
    stamps = {r.get("ts") for r in records}
    if all(isinstance(ts, str) for ts in stamps):
        pool = [r for r in pool if r.get("ts") in stamps]
    waiting = _Waiting(list(pool))
    found = dict(mapping or {})
    out: dict[str, str] = {}
    for original in records:
        hit = waiting.take(translate(original, found))
        if hit is not None:
            found[original["id"]] = hit["id"]
            out[original["id"]] = hit["id"]
    return out
