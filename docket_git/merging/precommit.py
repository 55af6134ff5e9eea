"""Does ``.pre-commit-config.yaml`` run docket's guard? A strict reader of just ``repos -> hooks -> id``.

A committed file must not be able to switch the guard off by merely
mentioning it: the guard counts only when a ``hooks:`` entry of a ``repos:``
item has ``id: docket-check``. A comment, a string elsewhere or a key of
another name does not.

PyYAML is not a dependency, and the question needs only block mappings,
block sequences and scalars. This reader understands exactly those (plain,
single- and double-quoted scalars; comments; ``---``); anything else (flow
collections, anchors, aliases, tags, block scalars, duplicate keys, bad
indentation) makes it give up with ``Unreadable``. Giving up is the safe
side: docket then installs its own git hook, so the guard runs.
"""

from __future__ import annotations

from dataclasses import dataclass

GUARD_ID = "docket-check"
#: Beyond this many lines the file is not a hand-written pre-commit config: give up.
MAX_LINES = 20_000


class Unreadable(ValueError):
    """The file uses YAML this reader does not understand (or is not YAML)."""


@dataclass
class _Line:
    number: int
    indent: int
    text: str


def _strip_comment(text: str) -> str:
    """text without a trailing comment (``#`` at the start or after a blank, outside quotes)."""
    quote = ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"" and (i == 0 or text[i - 1] in " \t:-[{,"):
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
    return text.rstrip()


def _lines(text: str) -> list[_Line]:
    out = []
    raw = text.split("\n")
    if len(raw) > MAX_LINES:
        raise Unreadable(f"more than {MAX_LINES} lines")
    for number, line in enumerate(raw, start=1):
        line = line.removesuffix("\r")
        if "\t" in line[: len(line) - len(line.lstrip())]:
            raise Unreadable(f"line {number}: a tab in the indentation")
        body = _strip_comment(line)
        if not body.strip():
            continue
        if body in ("---", "..."):
            continue
        if body.startswith(("--- ", "%")):
            raise Unreadable(f"line {number}: directives and content after '---' not read")
        out.append(_Line(number, len(body) - len(body.lstrip(" ")), body.strip()))
    return out


def _flow(text: str, number: int) -> object:
    """A one-line flow collection (``[a, 'b']``, ``{k: v}``, nested) of plain or quoted scalars."""
    pos = 0

    def fault(why: str) -> Unreadable:
        return Unreadable(f"line {number}: {why} in a flow collection")

    def spaces() -> None:
        nonlocal pos
        while pos < len(text) and text[pos] == " ":
            pos += 1

    def scalar(stops: str) -> str:
        nonlocal pos
        if text[pos] in "'\"":
            quote = text[pos]
            end = pos + 1
            while True:
                end = text.find(quote, end)
                if end < 0:
                    raise fault("an unterminated quote")
                if quote == "'" and text[end + 1 : end + 2] == "'":
                    end += 2
                    continue
                break
            word = text[pos : end + 1]
            pos = end + 1
            return _scalar(word, number)
        start = pos
        while pos < len(text) and text[pos] not in stops and text[pos : pos + 2] != ": ":
            if text[pos] in "[]{}&*!|>%@`#":
                raise fault(f"{text[pos]!r}")
            pos += 1
        return text[start:pos].rstrip()

    def value(stops: str) -> object:
        nonlocal pos
        spaces()
        if pos >= len(text):
            raise fault("an unexpected end")
        if text[pos] == "[":
            pos += 1
            items: list = []
            spaces()
            if text[pos : pos + 1] == "]":
                pos += 1
                return items
            while True:
                items.append(value(",]"))
                spaces()
                if text[pos : pos + 1] == ",":
                    pos += 1
                    continue
                if text[pos : pos + 1] == "]":
                    pos += 1
                    return items
                raise fault("expected ',' or ']'")
        if text[pos] == "{":
            pos += 1
            out: dict = {}
            spaces()
            if text[pos : pos + 1] == "}":
                pos += 1
                return out
            while True:
                spaces()
                key = scalar(",}:")
                if text[pos : pos + 1] != ":":
                    raise fault("expected 'key: value'")
                pos += 1
                if key in out:
                    raise fault(f"{key!r} given twice")
                out[key] = value(",}")
                spaces()
                if text[pos : pos + 1] == ",":
                    pos += 1
                    continue
                if text[pos : pos + 1] == "}":
                    pos += 1
                    return out
                raise fault("expected ',' or '}'")
        return scalar(stops)

    node = value("")
    spaces()
    if pos != len(text):
        raise fault("text after the end")
    return node


def _scalar(text: str, number: int) -> object:
    if not text:
        return ""
    if text[0] in "[{":
        return _flow(text, number)
    if text[0] in "&*!|>%@`":
        raise Unreadable(f"line {number}: {text[0]!r} (anchors, aliases, tags, block scalars) not read")
    if text[0] == "'":
        if len(text) < 2 or not text.endswith("'"):
            raise Unreadable(f"line {number}: unterminated quote")
        return text[1:-1].replace("''", "'")
    if text[0] == '"':
        if len(text) < 2 or not text.endswith('"') or "\\" in text:
            raise Unreadable(f"line {number}: a double-quoted scalar with escapes or no end")
        return text[1:-1]
    return text


def _split_key(text: str, number: int) -> tuple[str, str] | None:
    """(key, rest) when text is a ``key: value`` or ``key:`` entry, else None."""
    if text[0] in "'\"":
        end = text.find(text[0], 1)
        if end < 0:
            raise Unreadable(f"line {number}: unterminated quote")
        key, after = text[1:end], text[end + 1 :]
        if after == ":" or after.startswith(": "):
            return key, after[1:].strip()
        return None
    at = text.find(": ")
    if text.endswith(":") and (at < 0 or at > len(text) - 2):
        at = len(text) - 1
    if at <= 0:
        return None
    key = text[:at]
    if key[0] in "[{&*!|>%@`?":
        raise Unreadable(f"line {number}: complex key not read")
    return key, text[at + 1 :].strip()


class _Reader:
    def __init__(self, lines: list[_Line]) -> None:
        self.lines = lines
        self.i = 0

    def block(self, indent: int) -> object:
        line = self.lines[self.i]
        if line.indent != indent:
            raise Unreadable(f"line {line.number}: unexpected indentation")
        if line.text == "-" or line.text.startswith("- "):
            return self.sequence(indent)
        if _split_key(line.text, line.number) is None:
            self.i += 1
            return _scalar(line.text, line.number)
        return self.mapping(indent)

    def _child(self, indent: int, number: int) -> object:
        """The value of a ``key:`` or ``-`` with nothing after it: the block below, or empty."""
        if self.i >= len(self.lines):
            return None
        nxt = self.lines[self.i]
        if nxt.indent > indent:
            return self.block(nxt.indent)
        return None

    def sequence(self, indent: int) -> list:
        items: list = []
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.indent != indent or not (line.text == "-" or line.text.startswith("- ")):
                break
            rest = line.text[1:].lstrip(" ")
            if not rest:
                self.i += 1
                items.append(self._child(indent, line.number))
                continue
            # "- key: value" opens a mapping whose keys sit where "key" starts.
            inner = indent + (len(line.text) - len(rest))
            self.lines[self.i] = _Line(line.number, inner, rest)
            items.append(self.block(inner))
        return items

    def mapping(self, indent: int) -> dict:
        out: dict = {}
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.indent < indent:
                break
            if line.indent > indent:
                raise Unreadable(f"line {line.number}: unexpected indentation")
            if line.text == "-" or line.text.startswith("- "):
                break
            entry = _split_key(line.text, line.number)
            if entry is None:
                raise Unreadable(f"line {line.number}: expected 'key: value'")
            key, rest = entry
            key = _scalar(key, line.number)
            if key in out:
                raise Unreadable(f"line {line.number}: {key!r} given twice")
            self.i += 1
            if rest:
                out[key] = _scalar(rest, line.number)
                continue
            nxt = self.lines[self.i] if self.i < len(self.lines) else None
            if nxt is not None and nxt.indent == indent and (nxt.text == "-" or nxt.text.startswith("- ")):
                out[key] = self.sequence(indent)  # a sequence may sit at its key's indentation
            else:
                out[key] = self._child(indent, line.number)
        return out


def load(text: str) -> object:
    """The document's structure (dicts, lists, strings, None); ``Unreadable`` past what this reader knows."""
    lines = _lines(text)
    if not lines:
        return None
    reader = _Reader(lines)
    node = reader.block(lines[0].indent)
    if reader.i != len(lines):
        raise Unreadable(f"line {lines[reader.i].number}: unexpected indentation")
    return node


def runs_guard(text: str) -> bool:
    """True when some ``repos[*].hooks[*].id`` is ``docket-check``; False otherwise or when unreadable."""
    try:
        data = load(text)
    except (Unreadable, RecursionError):
        return False
    repos = data.get("repos") if isinstance(data, dict) else None
    if not isinstance(repos, list):
        return False
    for repo in repos:
        hooks = repo.get("hooks") if isinstance(repo, dict) else None
        if isinstance(hooks, list) and any(isinstance(h, dict) and h.get("id") == GUARD_ID for h in hooks):
            return True
    return False
