"""Canonical JSON lines and digests: one definition, used everywhere."""

from __future__ import annotations

import json

from docket_git.digest import sha256 as sha256
from docket_git.ledger.model import ordered

DIGEST_CHARS = 12


def dumps(record: dict) -> str:
    """The record as one compact JSON line (no newline), fields in write order."""
    return json.dumps(ordered(record), ensure_ascii=False, separators=(",", ":"))


def line(record: dict) -> bytes:
    """The record as the UTF-8 bytes of one ledger line, newline included."""
    return (dumps(record) + "\n").encode("utf-8")


def short(digest: str) -> str:
    """A digest as the 12 hex characters shown to users."""
    return digest[:DIGEST_CHARS]
