"""Files in the user cache directory: where one lives, reading it, replacing it atomically.

Caches are optimisations: a missing, unreadable or unwritable cache file is
never an error, and a write never leaves a half-written file (temp file +
rename). Nothing here is trusted beyond the bytes it was checked against.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path


def cache_path(kind: str, key: str, suffix: str) -> Path:
    """The cache file for key (hashed) under the user cache dir's ``kind`` folder."""
    from platformdirs import user_cache_dir

    name = hashlib.sha256(key.encode()).hexdigest()[:32]
    return Path(user_cache_dir("docket-git")) / kind / f"{name}.{suffix}"


def ledger_key(path: Path) -> str:
    """The key a ledger's caches are filed under: its resolved path."""
    return str(path.resolve())


def read(target: Path) -> bytes | None:
    """A cache file's bytes, or None when it cannot be read."""
    try:
        return target.read_bytes()
    except OSError:
        return None


def write(target: Path, *chunks: bytes) -> None:
    """Replace a cache file with the chunks, atomically; silently give up when it cannot be written."""
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
        os.replace(tmp, target)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
