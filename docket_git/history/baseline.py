"""Baselines for the briefing's ``--since``: a record's ledger as it stood in history, and what changed.

``--since ID@DIGEST`` names the ledger as it was when the agent last saw it:
the newest commit whose ledger has that digest at that record. A merge may
have renumbered the records since, so the baseline is matched into the
current ledger by the merge's ID-blind content key.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from docket_git.history.renumbering import LEDGER_RELPATH, History, HistoryUnavailable, _bulk, match_into


def _open(repo_root: Path, ledger_relpath: str, limit: int | None) -> History | None:
    try:
        history = History(Path(repo_root), ledger_relpath, limit)
        history.head  # noqa: B018 - raises when there are no commits
    except HistoryUnavailable:
        return None
    return history


def baseline_from_digest(
    repo_root: Path, ledger_relpath: str, record_id: str, digest12: str, search_limit: int | None = None
) -> tuple[list[dict], str] | None:
    """(the records up to and including record_id, the commit) of the newest ledger version whose
    prefix digest at record_id starts with digest12; None when no version within the limit has it.

    ``search_limit`` None reads ``history.search_limit`` from ``.docket/config.toml`` (default 2000).
    """
    history = _open(repo_root, ledger_relpath, search_limit)
    if history is None:
        return None
    try:
        found = history.find_digest(record_id, digest12.lower())
        if found is None:
            return _journal_baseline(history, record_id, digest12.lower())
        commit, blob, index = found
        return _bulk(history.ledger(blob).lines[: index + 1]), commit
    finally:
        history.save()


def _journal_baseline(history: History, record_id: str, digest: str) -> tuple[list[dict], str] | None:
    """The baseline from the old ledger a rebase or cherry-pick renumbered (this clone's journal), if git still has it."""
    from docket_git.merging import journal

    for entry in journal.lookup(history.git_dir, record_id, digest):
        if not entry.blob:
            continue
        try:
            data = history.graph.blob(entry.blob)
        except Exception:
            continue  # collected since (git gc): nothing to read the baseline from
        records = _bulk(data.splitlines())
        for i, record in enumerate(records):
            if record.get("id") == record_id:
                return records[: i + 1], ""
    return None


def baseline_from_rev(repo_root: Path, rev: str, ledger_relpath: str = LEDGER_RELPATH) -> tuple[list[dict], str] | None:
    """(every record of the ledger at a commit-ish, the commit ID); None when rev names no commit."""
    history = _open(repo_root, ledger_relpath, None)
    if history is None:
        return None
    try:
        commit = history.graph.resolve(rev)
        return None if commit is None else (history.records_at(commit), commit)
    finally:
        history.save()


def added_since(baseline_records: Sequence[dict], current_records: Sequence[dict]) -> list[dict]:
    """The current records no baseline record matches: what was added since the baseline."""
    seen = set(match_into(baseline_records, current_records).values())
    return [r for r in current_records if r["id"] not in seen]


def delta_id_map(baseline_records: Sequence[dict], current_records: Sequence[dict]) -> dict[str, str]:
    """``match_into`` covering every baseline ID: one the current ledger no longer holds maps to "".

    For a delta that maps unknown IDs to themselves: an unmatched baseline ID
    must not pass for the different current record that now has that ID.
    """
    found = match_into(baseline_records, current_records)
    return {r["id"]: found.get(r["id"], "") for r in baseline_records}


def translate_delta_ids(ids: Sequence[str], mapping: dict[str, str]) -> list[str]:
    """Baseline IDs in current IDs (IDs the current ledger no longer holds are left out)."""
    return [mapping[i] for i in ids if i in mapping]


# -- resolving an old ID ----------------------------------------------------------------------
