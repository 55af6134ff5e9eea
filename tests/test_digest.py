"""digest.sha256 gives hashlib's digest on both sides of the size where it changes implementation."""

from __future__ import annotations

import hashlib

import pytest

from docket_git import digest


@pytest.mark.parametrize("size", [0, 1, 63, 64, 65, 4096, digest.SMALL - 1, digest.SMALL, digest.SMALL + 1, 3 << 20])
def test_same_digest_as_hashlib(size: int) -> None:
    data = bytes((i * 131 + 7) % 256 for i in range(size))
    want = hashlib.sha256(data).hexdigest()
    assert digest.sha256(data) == want
    assert digest.sha256(memoryview(data)) == want
    assert digest.sha256(memoryview(data)[1:]) == hashlib.sha256(data[1:]).hexdigest()
    h = digest.constructor(size)()
    for start in range(0, size, 100_000):
        h.update(memoryview(data)[start : start + 100_000])
    assert h.hexdigest() == want


def test_small_inputs_use_the_interpreters_own_and_large_ones_openssl() -> None:
    assert digest.constructor(digest.SMALL - 1) is not hashlib.sha256
    assert digest.constructor(digest.SMALL) is hashlib.sha256
