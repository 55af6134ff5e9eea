"""SHA-256 hex digests, without loading OpenSSL for small inputs.

Loading OpenSSL (``hashlib``) costs a process ~5 ms, more than a session hook
hashes in all (a session key, a 64 KB tail). The interpreter's own SHA-256
hashes those; OpenSSL's is ~8x faster per byte, so large inputs (ledger
prefixes, builds) take it, imported when first needed.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

try:  # CPython's own SHA-256: _sha256 on 3.11, _sha2 from 3.12
    from _sha256 import sha256 as _builtin
except ImportError:  # pragma: no cover - the interpreter decides
    try:
        from _sha2 import sha256 as _builtin
    except ImportError:
        _builtin = None

#: Inputs under this many bytes are hashed by the interpreter's own SHA-256.
SMALL = 1 << 18


def sha256(data: bytes | memoryview) -> str:
    """The full SHA-256 hex digest of data."""
    return constructor(len(data))(data).hexdigest()


def constructor(total: int) -> Callable[[bytes | memoryview], Any]:
    """The SHA-256 constructor to hash ``total`` bytes with, in one piece or many (lines, blocks)."""
    if _builtin is not None and total < SMALL:
        return _builtin
    from hashlib import sha256 as openssl

    return openssl
