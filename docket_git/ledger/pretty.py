"""Indent-2 JSON, byte for byte what ``json.dumps(value, indent=2, ensure_ascii=False)`` writes, but faster.

With ``indent`` set, the standard library falls back to its pure-Python
encoder: 1.25 s for ``list --json`` at 10k records, 86% of it in
``json.encoder``. Records have a shallow, fixed shape, so this writer walks
them with one type dispatch per value and escapes strings with the C encoder
``json.dumps`` itself uses (``encode_basestring``). Lists are streamed: the
whole output is never held in memory.

``write_slices`` writes a list that arrives in slices (``docket list --json``):
a slice that holds no float, NaN or Infinity goes through orjson's indent-2
writer in one call, whose bytes are json.dumps' for every other value
``json.loads`` makes (``tests/test_where.py`` checks it by hypothesis); a
slice with floats (orjson writes ``1e16`` and NaN differently), an integer
past 64 bits or a lone surrogate (orjson refuses both) goes through ``encode``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from json.encoder import encode_basestring  # the C implementation when available

import orjson  # a hard dependency (pyproject.toml): no import fallback

_INDENTS = ["\n" + "  " * n for n in range(64)]
#: Dict key -> its escaped text and ": " (records repeat the same twenty keys).
_HEADS: dict[str, str] = {}


def _indent(level: int) -> str:
    return _INDENTS[level] if level < len(_INDENTS) else "\n" + "  " * level


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == float("inf"):
        return "Infinity"
    if value == float("-inf"):
        return "-Infinity"
    return float.__repr__(value)


def _key(key: object) -> str:
    """A dict key as json.dumps writes it: strings escaped, numbers, booleans and null quoted."""
    if isinstance(key, str):
        return encode_basestring(key)
    if key is None or isinstance(key, int | float):
        return '"' + encode(key) + '"'
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def encode(value: object, level: int = 0) -> str:
    """``value`` as ``json.dumps(value, indent=2, ensure_ascii=False)`` writes it, nested ``level`` deep."""
    kind = type(value)
    if kind is str:
        return encode_basestring(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return int.__repr__(value)
    if kind is list or kind is tuple:
        if not value:
            return "[]"
        inner = _indent(level + 1)
        if all(type(item) is str for item in value):  # ID lists, scopes, alternatives: C escaping only
            items = map(encode_basestring, value)
        else:
            items = [encode(item, level + 1) for item in value]
        return "[" + inner + ("," + inner).join(items) + _indent(level) + "]"
    if kind is dict:
        if not value:
            return "{}"
        deeper = level + 1
        inner = _indent(deeper)
        heads = _HEADS
        parts = []
        append = parts.append
        for k, v in value.items():  # a record's values, inline: strings, empty lists and flags are most of them
            head = heads.get(k) if type(k) is str else None
            if head is None:
                head = _key(k) + ": "
                if type(k) is str and len(heads) < 4096:
                    heads[k] = head
            of = type(v)
            if of is str:
                append(head + encode_basestring(v))
            elif of is list and not v:
                append(head + "[]")
            elif v is False:
                append(head + "false")
            elif v is True:
                append(head + "true")
            else:
                append(head + encode(v, deeper))
        return "{" + inner + ("," + inner).join(parts) + _indent(level) + "}"
    if kind is float:
        return _float(value)
    # Subclasses and anything else: the standard encoder decides (and raises for what JSON cannot hold).
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return text.replace("\n", _indent(level)) if level else text


def write_list(items: Iterable[object], write: Callable[[str], object]) -> None:
    """Write a list as ``json.dumps(list(items), indent=2, ensure_ascii=False)`` would, one item at a time."""
    write_slices((([item], False) for item in items), write)


def write_slices(slices: Iterable[tuple[list, bool]], write: Callable[[str], object]) -> None:
    """``write_list`` over the items of each (items, exact) slice in turn, a write per slice.

    ``exact``: the caller knows the slice holds no float, NaN or Infinity, so
    orjson may write it (see the module's docstring).
    """
    first = True
    for items, exact in slices:
        if not items:
            continue
        text = _orjson_items(items) if exact else None
        if text is None:
            text = ",\n  ".join([encode(item, 1) for item in items])
        write(("[\n  " if first else ",\n  ") + text)
        first = False
    write("[]" if first else "\n]")


def _orjson_items(items: list) -> str | None:
    """The items as ``write_list`` writes them between its brackets, by orjson; None when it cannot."""
    try:
        text = orjson.dumps(items, option=orjson.OPT_INDENT_2).decode()
    except TypeError:  # orjson.JSONEncodeError: an integer past 64 bits, a lone surrogate, deep nesting
        return None
    return text[4:-2]  # inside "[\n  " and "\n]"
