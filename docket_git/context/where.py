"""``--where QUERY``: a small search grammar compiled to SQL over the ledger index.

    cache redis                   bare words: each must appear in text, choice, rationale or ID
    "two words"                   quotes group words into one term
    kind:decision state:open      fields (below); the same field twice ORs, different fields AND
    -kind:claim  -redis           a leading - negates a term
    scope:src/billing/cache.py    records whose scope covers the path (exact, directory, glob)
    scope:src/billing/            ... and, for a directory, records scoped anywhere under it
    after:2026-01-01 before:2026-02-01   recorded strictly after / before that day
    is:blocked|retired|pinned|resolved|open|conflict|contested

Matching is case-insensitive (Unicode casefolding, like ``list --find``).
Everything a user types reaches SQLite as a bound parameter, never as SQL.
"""

from __future__ import annotations

import datetime
import json
import sqlite3
from dataclasses import dataclass

from docket_git.context import scope as scopes
from docket_git.errors import UsageError
from docket_git.ledger import index as ledger_index
from docket_git.ledger import model
from docket_git.merging.rebase import MERGE_AUTHOR

FIELDS = ("kind", "state", "author", "branch", "scope", "after", "before", "is")
IS_VALUES = ("blocked", "retired", "pinned", "resolved", "open", "conflict", "contested")
_COVER_WEIGHTS = {"scope_exact": 3, "scope_glob": 2, "scope_prefix": 1}
_EXAMPLES = {
    "kind": "kind:decision",
    "state": "state:open",
    "author": "author:alice",
    "branch": "branch:main",
    "scope": "scope:src/app.py",
    "after": "after:2026-01-31",
    "before": "before:2026-01-31",
    "is": "is:blocked",
}

_IS_SQL = {
    "blocked": "(kind = 'decision' AND retired_by = '' AND recorded_state = 'adopted' AND applicable = 0)",
    "retired": "(retired_by != '')",
    "pinned": "(pinned = 1)",
    "resolved": "(state = 'resolved')",
    "open": "(state = 'open')",
    "conflict": f"(kind = 'question' AND state = 'open' AND retired_by = '' AND author = '{MERGE_AUTHOR}')",
    # Current records an open merge question names (a contradiction, or a both-supersede conflict).
    "contested": ledger_index.named_by_open_questions(MERGE_AUTHOR),
}


@dataclass(frozen=True)
class Term:
    """One search term: an optional field, its value, and whether it is negated."""

    field: str | None
    value: str
    negated: bool = False


@dataclass(frozen=True)
class Query:
    """A compiled query: a SQL condition on ``records`` and its parameters."""

    sql: str
    params: tuple
    #: True when the query asks for retired records (``is:retired``): they are included then.
    wants_retired: bool = False


def tokens(text: str, option: str = "--where") -> list[tuple[str, int]]:
    """Split a query on whitespace, keeping double-quoted runs (quotes removed) inside one token.

    Each token comes with the position its first quote opened at (its length when unquoted):
    a colon inside quotes never starts a field.
    """
    out: list[tuple[str, int]] = []
    current: list[str] = []
    quoted = False
    started = False
    first_quote = -1
    for char in text:
        if char == '"':
            quoted = not quoted
            started = True
            if first_quote < 0:
                first_quote = len(current)
        elif char.isspace() and not quoted:
            if started:
                out.append(("".join(current), first_quote if first_quote >= 0 else len(current)))
            current, started, first_quote = [], False, -1
        else:
            current.append(char)
            started = True
    if quoted:
        raise UsageError(f'{option}: unclosed quote in {text!r}; close it with a second "')
    if started:
        out.append(("".join(current), first_quote if first_quote >= 0 else len(current)))
    return out


def parse(text: str, option: str = "--where") -> list[Term]:
    """The terms of a query; a ``UsageError`` names an unknown field, a bad value or a bad date."""
    terms: list[Term] = []
    for token, quote_at in tokens(text, option):
        negated = token.startswith("-") and len(token) > 1 and quote_at > 0
        body = token[1:] if negated else token
        name, colon, value = body.partition(":")
        if not colon or not name or len(name) + int(negated) >= quote_at:
            if body:
                terms.append(Term(None, body, negated))
            continue
        field = name.lower()
        if field not in FIELDS:
            raise UsageError(
                f"{option}: unknown field {name + ':'!r}; fields are {', '.join(f + ':' for f in FIELDS)} "
                f'(quote a word that contains a colon: "{body}")'
            )
        if not value:
            raise UsageError(f"{option}: {field}: needs a value, e.g. {_EXAMPLES[field]}")
        terms.append(Term(field, _checked(field, value, option), negated))
    return terms


def _checked(field: str, value: str, option: str) -> str:
    if field == "kind" and value.lower() not in model.KINDS:
        raise UsageError(f"{option}: kind: must be one of {', '.join(model.KINDS)}; got {value!r}")
    if field == "state" and value.lower() not in model.ALL_STATES:
        raise UsageError(f"{option}: state: must be one of {', '.join(model.ALL_STATES)}; got {value!r}")
    if field == "is" and value.lower() not in IS_VALUES:
        raise UsageError(f"{option}: is: must be one of {', '.join(IS_VALUES)}; got {value!r}")
    if field in ("after", "before"):
        try:
            return datetime.date.fromisoformat(value).isoformat()
        except ValueError:
            raise UsageError(
                f"{option}: {field}: wants a date as YYYY-MM-DD, e.g. {_EXAMPLES[field]}; got {value!r}"
            ) from None
    return value.lower() if field in ("kind", "state", "is") else value


def _condition(term: Term) -> tuple[str, list]:
    field, value = term.field, term.value
    if field is None:
        return (
            "(docket_has(id, ?) OR docket_has(text, ?) OR docket_has(choice, ?) OR docket_has(rationale, ?))",
            [value] * 4,
        )
    if field == "kind":
        return "(kind = ?)", [value]
    if field == "state":
        return "(state = ?)", [value]
    if field in ("author", "branch"):
        return f"(docket_same({field}, ?))", [value]
    if field == "scope":
        return ledger_index.SCOPE_COVERS, [scopes.normalize(value)]
    if field == "after":
        return "(substr(ts, 1, 10) > ?)", [value]
    if field == "before":
        return "(substr(ts, 1, 10) < ?)", [value]
    return _IS_SQL[value], []


def compile_query(text: str, option: str = "--where") -> Query:
    """The SQL condition for a query: terms of one field OR, fields AND, negated terms AND NOT.

    Bare words are each their own group (all must match), as in a search box.
    """
    terms = parse(text, option)
    groups: dict[str, list[tuple[str, list]]] = {}
    parts: list[str] = []
    params: list = []
    for n, term in enumerate(terms):
        sql, args = _condition(term)
        if term.negated:
            parts.append(f"NOT {sql}")
            params.extend(args)
        elif term.field is None:
            groups[f"word{n}"] = [(sql, args)]
        else:
            groups.setdefault(term.field, []).append((sql, args))
    for alternatives in groups.values():
        parts.append("(" + " OR ".join(sql for sql, _ in alternatives) + ")")
        for _, args in alternatives:
            params.extend(args)
    wants_retired = any(t.field == "is" and t.value == "retired" and not t.negated for t in terms)
    return Query(" AND ".join(parts) if parts else "1", tuple(params), wants_retired)


def _has(haystack: str | None, needle: str) -> bool:
    return haystack is not None and needle.casefold() in haystack.casefold()


def _same(value: str | None, wanted: str) -> bool:
    return value is not None and value.casefold() == wanted.casefold()


def _covers(scope: str, path: str) -> bool:
    scope = scopes.normalize(scope)
    # ``scope:DIR/`` also selects what is scoped under DIR (its files, subdirectories and globs).
    if path.endswith("/") and scope.startswith(path):
        return True
    return scopes.strength([path], scope, _COVER_WEIGHTS) > 0


def _ids(text: str | None) -> str:
    return json.dumps([m.group(0) for m in model.ID_TOKEN_RE.finditer(text or "")])


def install(conn: sqlite3.Connection) -> None:
    """Register the functions compiled queries call (``docket_has``, ``docket_same``, ``docket_covers``, ``docket_ids``)."""
    conn.create_function("docket_has", 2, _has, deterministic=True)
    conn.create_function("docket_same", 2, _same, deterministic=True)
    conn.create_function("docket_covers", 2, _covers, deterministic=True)
    conn.create_function("docket_ids", 1, _ids, deterministic=True)


def matching(conn: sqlite3.Connection, query: Query, *, retired: bool) -> list[str]:
    """The IDs of the records a compiled query matches, in file order (current ones unless retired)."""
    install(conn)
    current = not (retired or query.wants_retired)
    return [rid for (rid,) in ledger_index.matching_rows(conn, query.sql, query.params, current=current)]
