"""Ledger bytes to records, in bulk: splitting whole lines, decoding many at once, pausing gc.

Every reader that decodes more than a handful of lines (the store, the
outline, history, migration) goes through here, so there is one definition of
"the non-blank lines of a region" and one fast decoder.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import json
from collections.abc import Iterator, Sequence


def whole_lines(data: bytes, start: int = 0, stop: int | None = None) -> tuple[list[bytes], list[int]]:
    """The non-blank lines of data[start:stop] and the offset (in data) just past each.

    The region holds whole lines; its last line may lack a newline, in which
    case its end is ``stop``.
    """
    stop = len(data) if stop is None else stop
    lines = data[start:stop].split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    ends = list(itertools.accumulate((len(line) + 1 for line in lines), initial=start))
    del ends[0]
    if ends and ends[-1] > stop:  # the last line lacks its newline
        ends[-1] = stop
    if all(map(bytes.strip, lines)):
        return lines, ends
    keep = [i for i, line in enumerate(lines) if line.strip()]
    return [lines[i] for i in keep], [ends[i] for i in keep]


def decode_many(lines: Sequence[bytes]) -> list | None:
    """Decode many JSON lines with one ``json.loads`` (several times faster); None if any is not JSON."""
    if not lines:
        return []
    try:
        return json.loads(b"[" + b",".join(lines) + b"]")
    except (ValueError, RecursionError):
        return None


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: decoding builds millions of acyclic objects.

    Left running, it would rescan them over and over (tripling the parse time
    of a large ledger); reference counting still frees everything.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
