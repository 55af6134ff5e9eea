"""The ledger index: one disposable SQLite database per ledger that every reader shares.

The JSONL file in git stays the only source of truth. The index lives in the
user cache directory (placed, locked and opened through ``ledger.db``, the
layer typed ledgers' projections share) and records what it was built from:
the file's size, mtime, ctime and inode, the length of the bytes it holds, a
digest of their last block, and digest checkpoints along the file.

``open_index`` proves it current before anyone reads it:

* an equal stat and an equal digest of the last block prove it in O(1)
  (ctime changes on every write, and ``os.utime`` cannot set it back);
* otherwise, under the ledger's shared lock, the checkpoints are compared
  block by block and only the lines past the last shared checkpoint are
  validated (``store.parse``, against the records the index holds) and
  indexed again: an append by another tool, a branch switch, a rebase's
  rewritten tail;
* a missing, corrupt, locked-out or foreign-version database, or one that
  would have to validate more than ``UPDATE_LIMIT`` new bytes, is built
  afresh silently: in a temporary file without a journal, one validated
  slice at a time (``store.validated``: ``parse_line``, ``check_line`` and
  ``Index.check`` on every line, the one statement of the rules), then
  renamed into place; a cache directory that cannot be written degrades to an in-memory
  index with one notice.

So the index is also the ledger's validated prefix: the store's append
(``ledger.append``) validates new records against what the index vouches for
(``follower``: ``known``), reading and writing only the file's tail when the
index proves it holds the whole file, and the index then takes in the new
lines; ``parse`` validates other bytes that share a prefix with the ledger
(a staged blob, a rebase result) only past that prefix; and ``read`` hands
full snapshots to the commands that need every record. Locks are always
taken in one order, the ledger's before the index's.

Derived state (retired, resolved, applicable, blocked_by, resolved_by) is
computed by ``ledger.project``, the same code every other reader uses:
an append that supersedes nothing settles only its own records; anything
else re-derives from the stored structural columns (no JSON decoding of the
old lines) and rewrites only the rows whose state changed.

The schema is documented in docs/sql.md (``docket sql --schema`` prints it).

The package, one module per job (imports run down this list):

* ``schema``: the tables, the constants the proof rests on, a record's rows;
* ``handle``: ``Index``, and the validation index backed by SQL (``known``);
* ``proof``: the currency proof, the checkpoints and the meta rows;
* ``build``: the cold build, in a temporary file renamed into place;
* ``settle``: new records' derived state settled against the indexed rows;
* ``incremental``: ``update``, past the prefix the index still shares;
* ``opening``: ``open_index``, ``held``, and builds deferred past a hook's answer;
* ``query``: a briefing's query matched and scored in SQL; the filters of list, --where and show;
* ``reads``: what a briefing's outline reads (facts, strata, scopes, a task's ranked hits, closure);
* ``lines``: records read back by offset, snapshots, ``parse``, the revision, a ledger opened for a briefing;
* ``consequences``: what an append changes for earlier records;
* ``following``: ``follower``, the index's part in the store's append (vouch, then catch up).

Code outside the package uses the names below and nothing else; no SQL outside the package names
one of the index's tables (tests/test_index_boundary.py).
"""

from __future__ import annotations

from docket_git.ledger.index.handle import Index
from docket_git.ledger.index.lines import (
    Briefed,
    for_briefing,
    ledger_bytes,
    parse,
    prefix_digest,
    read,
    records_end,
    records_in_slices,
    records_of,
    revision,
    texts,
)
from docket_git.ledger.index.opening import build_later, finish_later, first_use, held, open_index, opened
from docket_git.ledger.index.query import (
    MAX_TERMS,
    SCOPE_COVERS,
    component_scopes,
    derived_for,
    line_facts,
    mask_points,
    matching_rows,
    named_by_open_questions,
    query_needles,
    task_hits,
    text_points,
)
from docket_git.ledger.index.reads import (
    closure_extras,
    column,
    facts_of,
    hit_ids,
    hit_row,
    ids_at,
    ids_between,
    ids_in_order,
    outline_counts,
    pinned_hits,
    prerequisite_closure,
    ranked_hits,
    record_facts,
    related,
    scope_hits,
    scope_holders,
    scope_strings,
    strata,
)
from docket_git.ledger.index.schema import SCHEMA, TABLE_NAMES, TAIL, db_path, scope_kind

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a few ms of every start)

if TYPE_CHECKING:
    from docket_git.ledger.index.consequences import effects
    from docket_git.ledger.index.following import Follower, follower

#: Names whose module loads on first use: a session hook reads, and never appends.
_LAZY = {"Follower": "following", "follower": "following", "effects": "consequences"}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(__import__(f"{__name__}.{module}", fromlist=[name]), name)
    globals()[name] = value
    return value


__all__ = [
    "MAX_TERMS",
    "SCHEMA",
    "SCOPE_COVERS",
    "TABLE_NAMES",
    "TAIL",
    "Briefed",
    "Follower",
    "Index",
    "build_later",
    "closure_extras",
    "column",
    "component_scopes",
    "db_path",
    "derived_for",
    "effects",
    "facts_of",
    "finish_later",
    "first_use",
    "follower",
    "for_briefing",
    "held",
    "hit_ids",
    "hit_row",
    "ids_at",
    "ids_between",
    "ids_in_order",
    "ledger_bytes",
    "line_facts",
    "mask_points",
    "matching_rows",
    "named_by_open_questions",
    "open_index",
    "opened",
    "outline_counts",
    "parse",
    "pinned_hits",
    "prefix_digest",
    "prerequisite_closure",
    "query_needles",
    "ranked_hits",
    "read",
    "record_facts",
    "records_end",
    "records_in_slices",
    "records_of",
    "related",
    "revision",
    "scope_hits",
    "scope_holders",
    "scope_kind",
    "scope_strings",
    "strata",
    "task_hits",
    "text_points",
    "texts",
]
