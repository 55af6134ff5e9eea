"""docket's cache and state directories are where platformdirs puts them, under each environment.

``docket_git.dirs`` reads the XDG rules itself on Linux (a session hook must not
pay platformdirs' import); these tests run both in a fresh interpreter with the
environment given and compare, so an XDG rule platformdirs changes shows here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the XDG rules are read by hand on Linux only")

PROBE = (
    "import json, platformdirs\n"
    "from docket_git import dirs\n"
    "print(json.dumps([dirs.cache_dir(), platformdirs.user_cache_dir('docket-git'),"
    " dirs.state_dir(), platformdirs.user_state_dir('docket-git')]))\n"
)


def probe(env: dict[str, str]) -> list[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("XDG_") and k != "HOME"}
    out = subprocess.run([sys.executable, "-c", PROBE], env={**base, **env}, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize(
    "env",
    [
        {"HOME": "/home/someone"},
        {"HOME": "/home/someone/"},
        {"HOME": "/"},
        {"HOME": "/home/someone", "XDG_CACHE_HOME": "/var/cache/x", "XDG_STATE_HOME": "/var/state/y/"},
        {"HOME": "/home/someone", "XDG_CACHE_HOME": "relative/cache", "XDG_STATE_HOME": "./state"},
        {"HOME": "/home/someone", "XDG_CACHE_HOME": "", "XDG_STATE_HOME": ""},
        {"HOME": "/home/with space", "XDG_CACHE_HOME": "/caché dir"},
        {},  # no HOME: the account's home from the password database
    ],
    ids=["home", "home-slash", "root-home", "xdg-absolute", "xdg-relative", "xdg-empty", "odd-chars", "no-home"],
)
def test_same_directories_as_platformdirs(env: dict[str, str]) -> None:
    cache, platform_cache, state, platform_state = probe(env)
    assert cache == platform_cache
    assert state == platform_state
    assert Path(cache).name == Path(state).name == "docket-git"


def test_xdg_variables_move_both(tmp_path: Path) -> None:
    cache, _, state, _ = probe({"HOME": "/home/someone", "XDG_CACHE_HOME": str(tmp_path / "c")})
    assert cache == str(tmp_path / "c" / "docket-git")
    assert state == "/home/someone/.local/state/docket-git"


def test_hook_start_imports_neither_platformdirs_nor_openssl(tmp_path: Path) -> None:
    """The session hook's path resolves directories and digests without platformdirs or hashlib."""
    code = (
        "import sys, json\n"
        "from pathlib import Path\n"
        "from docket_git.agents import state\n"
        "from docket_git.ledger import db\n"
        "state.save('s', {'a': 1}); assert state.load('s') == {'a': 1}\n"
        "db.cache_path('index', Path('.'))\n"
        "print(json.dumps(sorted(m for m in ('platformdirs', 'hashlib', '_hashlib') if m in sys.modules)))\n"
    )
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
    assert (tmp_path / "state" / "docket-git" / "sessions").is_dir()
