"""SHA-256 hex digests, without loading OpenSSL for small inputs.

Loading OpenSSL (``hashlib``) costs a process ~5 ms, more than a session hook
hashes in all (a session key, a 64 KB tail). The interpreter's own SHA-256
hashes those; OpenSSL's is ~8x faster per byte, so large inputs (ledger
prefixes, builds) take it, imported when first needed.
"""

from __future__ import annotations

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
    if _builtin is not None and len(data) < SMALL:
        return _builtin(data).hexdigest()
    import hashlib

    return hashlib.sha256(data).hexdigest()
