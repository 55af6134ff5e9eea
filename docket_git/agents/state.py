"""Per-session memory for agent hooks: one small JSON file per session ID.

Lives in the user state directory (``dirs.state_dir``), never in the repository;
entries untouched for 30 days are removed when a session writes (the
directory is scanned for them at most once an hour).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from docket_git.digest import sha256
from docket_git.errors import LedgerError

EXPIRY_SECONDS = 30 * 24 * 3600


_directories: list[Path] = []


def _directory() -> Path:
    if not _directories:  # resolved once a process: a hook looks up several keys
        from docket_git.dirs import state_dir

        _directories.append(Path(state_dir()) / "sessions")
    return _directories[0]


def _file(session_id: str) -> Path:
    # Session IDs come from agents: hash them so no ID can name a path.
    key = sha256(session_id.encode("utf-8", "replace"))[:32]
    return _directory() / f"{key}.json"


def load(session_id: str) -> dict:
    """What this session remembered, or {} (unknown session, or unreadable state)."""
    if not session_id:
        return {}
    try:
        from docket_git.repo import files

        data = json.loads(files.read_bytes(_file(session_id), None, follow=True))
    except (OSError, ValueError, LedgerError):
        return {}
    return data if isinstance(data, dict) else {}


def save(session_id: str, state: dict) -> None:
    """Remember state for this session (atomically) and expire stale sessions."""
    if not session_id:
        return
    target = _file(session_id)
    with contextlib.suppress(OSError):
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(state, sort_keys=True))
        os.replace(tmp, target)
        _expire(target.parent)


#: Expired entries are looked for at most this often: a scan stats every file in the
#: directory, thousands after a month of sessions, and every hook that saves state used to pay it.
EXPIRY_SCAN_SECONDS = 3600
#: The file whose mtime says when the directory was last scanned.
EXPIRY_STAMP = "expired.stamp"
#: What this module writes: session state, repeat markers, and temp files a killed process left.
_EXPIRING = (".json", ".claim", ".tmp")
_scanned: list[Path] = []


def _expire(directory: Path) -> None:
    """Remove entries untouched for EXPIRY_SECONDS; at most once a process and once an EXPIRY_SCAN_SECONDS."""
    if directory in _scanned:
        return
    _scanned.append(directory)
    now = time.time()
    stamp = directory / EXPIRY_STAMP
    try:
        if now - stamp.stat().st_mtime < EXPIRY_SCAN_SECONDS:
            return
    except OSError:
        pass
    with contextlib.suppress(OSError):
        os.close(os.open(stamp, os.O_CREAT | os.O_WRONLY, 0o600))
        os.utime(stamp)
    cutoff = now - EXPIRY_SECONDS
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        for entry in entries:
            if entry.name.endswith(_EXPIRING):
                with contextlib.suppress(OSError):
                    if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                        os.unlink(entry.path)


def claim(key: str, window: float) -> bool:
    """True the first time key is claimed within window seconds; False for a repeat (atomic across processes).

    Two hook processes fired for one event (an agent that also runs another
    agent's hook settings) race here: exactly one of them wins.
    """
    if not key or window <= 0:
        return True
    marker = _file(f"claim:{key}").with_suffix(".claim")
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        return True
    except FileExistsError:
        try:
            if time.time() - marker.stat().st_mtime < window:
                return False
            os.utime(marker)
        except OSError:
            return True
        return True
    except OSError:
        return True  # no state directory: never suppress a briefing for it


def recent(key: str, window: float) -> bool:
    """True when key was claimed less than window seconds ago."""
    if not key or window <= 0:
        return False
    try:
        return time.time() - _file(f"claim:{key}").with_suffix(".claim").stat().st_mtime < window
    except OSError:
        return False
