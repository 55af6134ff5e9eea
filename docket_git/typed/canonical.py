"""Canonical JSON for typed ledgers: the one byte form every record and identity is hashed in.

Objects have their keys sorted by Unicode code point, there is no whitespace,
strings are UTF-8 with only ``"``, ``\\`` and control characters escaped (as
``JSON.stringify`` does), and numbers follow RFC 8785: an integral value is
written as an integer, any other finite number in the ECMAScript shortest
round-trip form. Integers must lie in the IEEE-754 safe range (|n| <= 2**53-1),
NaN and the infinities are refused, and nesting deeper than 32 is refused.
"""

from __future__ import annotations

import hashlib
import json
import math

MAX_DEPTH = 32
SAFE_INTEGER = 2**53 - 1


class NotCanonical(ValueError):
    """A value that has no canonical JSON form; the message says where and why."""


def _number(value: float) -> str:
    """An RFC 8785 (ECMAScript Number::toString) rendering of a finite float."""
    if value == 0:
        return "0"
    from decimal import Decimal

    # repr holds the shortest digits that round-trip, which is what ECMAScript prints too.
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, digit_tuple))
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)  # type: ignore[operator]
    digits = stripped.lstrip("0")
    k = len(digits)
    n = k + exponent  # the value is 0.DIGITS x 10**n
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + digits
    else:
        mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
        out = f"{mantissa}e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"
    return ("-" if value < 0 else "") + out


def check(value: object, where: str = "value", depth: int = 0) -> bool:
    """Raise ``NotCanonical`` unless value is plain finite JSON; True when it holds a non-integral float."""
    if depth > MAX_DEPTH:
        raise NotCanonical(f"{where}: nested deeper than {MAX_DEPTH} levels")
    if value is None or value is True or value is False:
        return False
    kind = type(value)
    if kind is str:
        try:
            value.encode("utf-8")  # type: ignore[union-attr]
        except UnicodeEncodeError:
            raise NotCanonical(f"{where}: a string holds a lone surrogate, which is not valid UTF-8") from None
        return False
    if kind is int:
        if abs(value) > SAFE_INTEGER:  # type: ignore[arg-type]
            raise NotCanonical(f"{where}: the integer {value} is outside the safe range ±(2**53-1)")
        return False
    if kind is float:
        if not math.isfinite(value):  # type: ignore[arg-type]
            raise NotCanonical(f"{where}: NaN and Infinity are not JSON numbers")
        # Integral values below 1e21 are written as integer digits, so they must be safe integers too.
        if value.is_integer() and SAFE_INTEGER < abs(value) < 1e21:  # type: ignore[union-attr,arg-type]
            raise NotCanonical(f"{where}: the number {value} is an integer outside the safe range ±(2**53-1)")
        return True
    if kind is list:
        floats = False
        for i, item in enumerate(value):  # type: ignore[arg-type]
            floats |= check(item, f"{where}[{i}]", depth + 1)
        return floats
    if kind is dict:
        floats = False
        for key, item in value.items():  # type: ignore[union-attr]
            if type(key) is not str:
                raise NotCanonical(f"{where}: object keys must be strings")
            check(key, where, depth + 1)
            floats |= check(item, f"{where}.{key}", depth + 1)
        return floats
    raise NotCanonical(f"{where}: {kind.__name__} is not a JSON value")


def _slow(value: object) -> str:
    if type(value) is float:
        return _number(value)
    if type(value) is list:
        return "[" + ",".join(_slow(v) for v in value) + "]"
    if type(value) is dict:
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + _slow(value[k]) for k in sorted(value)) + "}"
    return json.dumps(value, ensure_ascii=False)


def dumps(value: object, where: str = "value") -> str:
    """The canonical JSON text of value; raises ``NotCanonical``."""
    if check(value, where):
        return _slow(value)
    return _ENCODER.encode(value)


def _plain(value: object) -> int:
    """1 plain JSON with a non-integral float, 0 plain without, -1 not canonical (no message: see ``check``)."""
    floats = 0
    stack = [(value, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        if depth > MAX_DEPTH:
            return -1
        kind = type(item)
        if kind is str or item is None or kind is bool:
            continue
        if kind is int:
            if not -SAFE_INTEGER <= item <= SAFE_INTEGER:  # type: ignore[operator]
                return -1
        elif kind is dict:
            for key, sub in item.items():  # type: ignore[union-attr]
                if type(key) is not str:
                    return -1
                push((sub, depth + 1))
        elif kind is list:
            for sub in item:  # type: ignore[union-attr]
                push((sub, depth + 1))
        elif kind is float:
            if not math.isfinite(item) or (item.is_integer() and SAFE_INTEGER < abs(item) < 1e21):  # type: ignore[arg-type]
                return -1
            floats = 1
        else:
            return -1
    return floats


def dumps_parsed(value: object) -> str | None:
    """Canonical text of a value parsed from JSON, or None when it has none (``check`` says why); fast."""
    found = _plain(value)
    if found < 0:
        return None
    return _slow(value) if found else _ENCODER.encode(value)


#: One encoder, built once: json.dumps with options builds a new one per call, which costs more than encoding.
_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))
dumps_trusted = _ENCODER.encode
"""Canonical text of a value already known to be plain JSON without floats (replay's hot path)."""


def digest(text: str) -> str:
    """``sha256:<hex>`` of text's UTF-8 bytes."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
