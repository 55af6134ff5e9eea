"""Count how often a session-start briefing climbs back from ledger/ into context/ (issue 32 item 5).

The briefing path should read as settings -> index -> select -> render: the
briefing (``docket_git/context/``) asks the ledger's index (``ledger/``) for
what it needs and goes on, rather than calling down and back up again and
again. This script traces one warm ``build_briefing`` as ``docket hook
session-start`` calls it (``defer_index``, Claude's character limit, the
index already built) with ``sys.setprofile`` and counts the returns from a
function in ``docket_git/ledger/`` into one in ``docket_git/context/`` (the
nearest docket frame up the stack: a context manager or a standard-library
wrapper between them does not hide the climb):

* *climbs* (the figure docs/performance.md quotes): distinct call sites, a
  context function and the ledger function it called, whose return came back up;
* *returns*: every such return (a call site inside a loop counts each time).

    python bench/walk.py                 # the 1k-record bench repository (made if missing)
    python bench/walk.py --sizes 100000  # another size
    python bench/walk.py --list          # and name each call site

Run from a checkout with docket installed (``pip install -e .``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path
from types import CodeType, FrameType

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run  # noqa: E402 - bench/run.py, beside this file: the bench repositories


def room(filename: str, package: str) -> str | None:
    """``context``, ``ledger``, ... for a file of the package; None for anything else."""
    if not filename.startswith(package):
        return None
    rest = filename[len(package) :].lstrip(os.sep)
    return rest.split(os.sep, 1)[0] if os.sep in rest else None


def trace(repo: Path) -> Counter:
    """(context function, ledger function) -> returns from the one into the other, over one warm briefing."""
    import docket_git
    from docket_git.agents.hooks import CONTEXT_LIMITS
    from docket_git.context import build_briefing

    package = str(Path(docket_git.__file__).parent)
    os.chdir(repo)
    build_briefing(repo, max_chars=CONTEXT_LIMITS["claude"])  # warm: the index is built (not deferred)
    sites: Counter = Counter()

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event != "return":
            return
        if room(frame.f_code.co_filename, package) != "ledger":
            return
        caller = frame.f_back
        while caller is not None and room(caller.f_code.co_filename, package) is None:
            caller = caller.f_back  # through contextlib, functools and the like: the docket code that called
        if caller is None or room(caller.f_code.co_filename, package) != "context":
            return
        sites[(_name(caller.f_code, package), _name(frame.f_code, package))] += 1

    sys.setprofile(profile)
    try:
        briefing = build_briefing(repo, max_chars=CONTEXT_LIMITS["claude"], defer_index=True)
    finally:
        sys.setprofile(None)
    assert briefing.text, "the briefing is empty: nothing was walked"
    return sites


def _name(code: CodeType, package: str) -> str:
    path = Path(code.co_filename).relative_to(Path(package).parent).with_suffix("")
    return f"{'.'.join(path.parts[1:])}.{code.co_qualname}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--list", action="store_true", help="name each call site and how often it returned")
    opts = parser.parse_args()
    env = run.base_env()
    os.environ.clear()
    os.environ.update(env)
    os.environ["XDG_CACHE_HOME"] = str(run.OUT / "cache" / "walk")
    os.environ["XDG_STATE_HOME"] = str(run.OUT / "state" / "walk")
    for n in opts.sizes:
        sites = trace(run.repository(n, opts.seed))
        print(f"{n} records: {len(sites)} climbs back up (distinct call sites), {sum(sites.values())} returns")
        if opts.list:
            for (caller, callee), count in sorted(sites.items()):
                print(f"  {count:6d}  {caller} <- {callee}")


if __name__ == "__main__":
    main()
