"""The ledger index: one disposable SQLite database per ledger that every reader shares.

The JSONL file in git stays the only source of truth. The index lives in the
user cache directory (placed, locked and opened through ``ledger.db``, the
layer typed ledgers' projections share) and is proven current, or brought
current, before anyone reads it (``proof``). It is also the ledger's validated
prefix: the store's append (``ledger.append``) validates new records against
what the index vouches for, ``parse`` validates other bytes that share a
prefix with the ledger (a staged blob, a rebase result) only past it, and
``read`` hands full snapshots to the commands that need every record. Locks
are always taken in one order, the ledger's before the index's.

Derived state (retired, resolved, applicable, blocked_by, resolved_by) is
computed by ``ledger.project``, the same code every other reader uses: an
append that supersedes nothing settles only its own records; anything else
rewrites only the rows whose state changed (``settle``).

The schema is documented in docs/sql.md (``docket sql --schema`` prints it).

The package, one module per job (imports run down this list):

* ``schema``: the tables, the constants the proof rests on, a record's rows;
* ``proof``: ``Index``, the currency proof, ``open_index`` and ``held``, builds deferred past a hook's answer;
* ``build``: the cold build, in a temporary file renamed into place;
* ``settle``: new records' derived state settled against the indexed rows;
* ``update``: ``update``, past the prefix the index still shares; the index's part in an append (``follower``,
  and its ``effects`` on earlier records);
* ``query``: a briefing's query matched and scored in SQL; the filters of list, --where and show;
* ``reads``: what a briefing's outline reads (facts, strata, scopes, a task's ranked hits, closure);
* ``lines``: records read back by offset, snapshots, ``parse``, the revision, a ledger opened for a briefing.

Code outside the package uses the names below and nothing else; no SQL outside the package names
one of the index's tables (tests/test_index_boundary.py).
"""

from __future__ import annotations

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
from docket_git.ledger.index.proof import Index, build_later, finish_later, first_use, held, open_index, opened
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
    from docket_git.ledger.index.update import Follower, effects, follower

#: Names whose module loads on first use: a session hook reads, and never appends.
_LAZY = {"Follower": "update", "follower": "update", "effects": "update"}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(__import__(f"{__name__}.{module}", fromlist=[name]), name)
    globals()[name] = value
    return value
