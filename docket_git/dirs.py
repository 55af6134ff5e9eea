"""Where docket keeps what is not in any repository: the user cache and state directories.

On Linux and the BSDs these follow the XDG Base Directory rules, read here:
an absolute ``$XDG_CACHE_HOME`` / ``$XDG_STATE_HOME``, else ``~/.cache`` /
``~/.local/state`` (a relative value is ignored, as the specification says),
then ``docket-git``. That is what platformdirs returns there, and
tests/test_dirs.py holds the two to it under each environment; importing
platformdirs (4.x loads tempfile, shutil, bz2, lzma and random) cost every
session hook 10-15 ms. macOS, Windows and Android ask platformdirs.
"""

from __future__ import annotations

import os
import sys

APP = "docket-git"


def cache_dir() -> str:
    """The user cache directory for docket (indexes, projections, graph pages)."""
    return _directory("XDG_CACHE_HOME", ".cache", "user_cache_dir")


def state_dir() -> str:
    """The user state directory for docket (agent session state, active context ledgers)."""
    return _directory("XDG_STATE_HOME", ".local/state", "user_state_dir")


def _directory(variable: str, default: str, name: str) -> str:
    if not _xdg_platform():
        import platformdirs

        return getattr(platformdirs, name)(APP)
    base = os.environ.get(variable, "")
    if not base.startswith("/"):
        base = os.path.join(_home(), default)
    return os.path.join(base, APP)


def _xdg_platform() -> bool:
    """True where platformdirs uses its XDG (Unix) rules: not macOS, Windows or Android."""
    if sys.platform in ("darwin", "win32", "cygwin", "android", "ios"):
        return False
    return not (os.environ.get("ANDROID_DATA") == "/data" and os.environ.get("ANDROID_ROOT") == "/system")


def _home() -> str:
    home = os.environ.get("HOME", "")
    if home.startswith("/"):
        return home
    import pwd  # HOME unset or relative: the account's home, as os.path.expanduser falls back to

    return pwd.getpwuid(os.getuid()).pw_dir
