"""``parse_line(raw, bulk=True)`` (orjson, for reads of ``validate.BULK`` bytes or more) gives exactly
``parse_line(raw)``'s answer: the same value, with the same types and key order, or the same message.

orjson reads and refuses some lines differently from json; each case below is one of them, and each would
fail if a line orjson does not write back byte for byte were taken as orjson read it.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docket_git.errors import LedgerError
from docket_git.ledger import canonical, store, validate
from tests.hypothesis_helpers import profile

from .conftest import rec
from .test_validate_fast import mutated


def outcome(raw: bytes, *, bulk: bool) -> tuple:
    """("value", its repr, the type of every value in it, in order) or ("refused", the message)."""
    try:
        value = validate.parse_line(raw, bulk=bulk)
    except ValueError as exc:
        return ("refused", str(exc))
    return ("value", repr(value), list(_types(value)))


def _types(value: object):
    yield type(value)
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _types(item)
    elif isinstance(value, list):
        for item in value:
            yield from _types(item)


LINE = canonical.line(rec("c1"))[:-1]

#: Lines orjson refuses or reads otherwise than json, and what parse_line makes of each.
CASES = {
    "NaN": (LINE.replace(b'"text":"record c1"', b'"text":NaN'), "value"),
    "Infinity": (LINE.replace(b'"schema":2', b'"schema":Infinity'), "value"),
    "-Infinity": (LINE.replace(b'"schema":2', b'"schema":-Infinity'), "value"),
    "a float past the largest": (LINE.replace(b'"schema":2', b'"schema":1e400'), "value"),
    "an integer past 64 bits": (LINE.replace(b'"schema":2', b'"schema":18446744073709551616'), "value"),
    "a negative integer past 64 bits": (LINE.replace(b'"schema":2', b'"schema":-9223372036854775809'), "value"),
    "a lone surrogate": (LINE.replace(b"record c1", b"record \\ud800"), "value"),
    "not UTF-8": (LINE.replace(b"record c1", b"record \xff"), "refused"),
    "a surrogate in UTF-8": (LINE.replace(b"record c1", b"record \xed\xa0\x80"), "refused"),
    "a field given twice": (LINE.replace(b'"schema":2', b'"schema":2,"schema":2'), "refused"),
    "a field given twice, the second differing": (LINE.replace(b'"schema":2', b'"schema":3,"schema":2'), "refused"),
    "33 levels": (LINE.replace(b"[]", b"[" * 33 + b"]" * 33, 1), "refused"),
    "40 levels of objects": (LINE.replace(b"[]", b'{"a":' * 40 + b"1" + b"}" * 40, 1), "refused"),
    "2,000 levels": (LINE.replace(b"[]", b"[" * 2000 + b"]" * 2000, 1), "refused"),
    "a byte order mark": (b"\xef\xbb\xbf" + LINE, "refused"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bulk_reads_every_line_orjson_reads_otherwise_as_json_does(name: str) -> None:
    raw, expected = CASES[name]
    found = outcome(raw, bulk=True)
    assert found == outcome(raw, bulk=False)
    assert found[0] == expected


def test_the_values_json_reads_are_kept_exactly() -> None:
    """The integer past 64 bits stays an int (orjson reads a float); NaN stays NaN (orjson refuses it)."""
    big = validate.parse_line(CASES["an integer past 64 bits"][0], bulk=True)
    assert type(big["schema"]) is int and big["schema"] == 2**64
    assert math.isnan(validate.parse_line(CASES["NaN"][0], bulk=True)["text"])
    assert validate.parse_line(CASES["a lone surrogate"][0], bulk=True)["text"] == "record \ud800"


@pytest.mark.parametrize(
    "number", [b"0.1", b"1e16", b"1e+16", b"1.5", b"-0.0", b"-0", b"5e-324", b"1.7976931348623157e308"]
)
def test_floats_and_other_spellings_read_as_json_reads_them(number: bytes) -> None:
    raw = LINE.replace(b'"schema":2', b'"schema":' + number)
    assert outcome(raw, bulk=True) == outcome(raw, bulk=False)


def test_docket_s_own_lines_take_orjson_s_value() -> None:
    """The fast way is taken: a canonical line (evidence objects, relations, non-ASCII text) writes back."""
    record = rec("d3", 'Ünïcode 長い "quoted" \\ tab\t', evidence=[{"ref": "x", "commit": "c"}], depends_on=["c1"])
    raw = canonical.line(record)[:-1]
    assert validate._written_back(raw) == record
    assert validate._written_back(raw.replace(b'":', b'": ', 1)) is None  # spaced: json reads it


@profile(40, 500)
@given(data=mutated(), extra=st.sampled_from([b"", b"1e400", b"18446744073709551616", b"NaN", b"0.1", b"1e16"]))
def test_bulk_gives_what_parse_line_gives_on_every_mutated_line(data: bytes, extra: bytes) -> None:
    for raw in data.split(b"\n"):
        if extra:
            raw = raw.replace(b'"schema":2', b'"schema":' + extra, 1)
        assert outcome(raw, bulk=True) == outcome(raw, bulk=False)


def test_a_read_of_bulk_size_refuses_a_field_given_twice_as_a_small_read_does(tmp_path: Path) -> None:
    """``store.validated`` reads past ``BULK`` bytes in bulk: the last line's doubled field is still refused."""
    lines = [canonical.line(rec(f"c{n}", "x" * 500)) for n in range(1, validate.BULK // 700 + 2)]
    bad = lines[-1].replace(b'"schema":2', b'"schema":2,"schema":2')
    data = b"".join(lines[:-1]) + bad
    assert len(data) >= validate.BULK
    messages = []
    for blob in (data, bad):
        snap = store.Snapshot(path=Path("ledger.jsonl"), data=blob)
        with pytest.raises(LedgerError) as caught:
            for _ in store.validated(snap):
                pass
        messages.append(str(caught.value).split(": ", 1)[1])
    assert messages[0] == messages[1] == "field 'schema' appears twice; the line is ambiguous, keep one of them"
