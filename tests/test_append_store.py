"""The store owns writes; the index follows: deleting the index never changes what a write does.

The same appends, accepted and refused, run twice in the same repository:
once with the index present (current, or stale after an edit behind its
back) and once with the user cache emptied before every command. The
ledger's bytes after each step, and every command's output and exit code,
must be the same.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from docket_git.ledger import canonical

from .conftest import Repo, rec

TS = {"ts": "2026-01-01T00:00:00+00:00", "author": "tester", "session": "", "branch": "main"}


def batch(*records: dict) -> str:
    """``docket record -`` input with fixed provenance, so both runs write the same bytes."""
    return "".join(json.dumps({**TS, **r}) + "\n" for r in records)


def hand_append(ledger: Path) -> None:
    """Another tool appends a valid record: the index cannot prove itself any more."""
    top = max(int(json.loads(line)["id"][1:]) for line in ledger.read_text().splitlines() if line.strip())
    with ledger.open("ab") as handle:
        handle.write(canonical.line(rec(f"c{top + 1}", "appended by hand")))


def torn_tail(ledger: Path) -> None:
    """A killed tool left half a line, without its newline."""
    with ledger.open("ab") as handle:
        handle.write(b'{"schema":2,"kind":"cla')


def duplicate(ledger: Path) -> None:
    """A second line with the first line's ID, in the middle of the file."""
    lines = ledger.read_text().splitlines(keepends=True)
    lines.insert(2, lines[0])
    ledger.write_text("".join(lines))


def undo_duplicate(ledger: Path) -> None:
    lines = ledger.read_text().splitlines(keepends=True)
    del lines[2]
    ledger.write_text("".join(lines))


def marked(ledger: Path) -> None:
    """Conflict markers left in the file."""
    lines = ledger.read_text().splitlines(keepends=True)
    ledger.write_text("".join([lines[0], "<<<<<<< HEAD\n", *lines[1:]]))


def unmarked(ledger: Path) -> None:
    ledger.write_text(ledger.read_text().replace("<<<<<<< HEAD\n", ""))


STEPS: list = [
    (
        "run",
        ("record", "-"),
        batch(
            {"kind": "claim", "text": "the cache is keyed by path", "scope": ["src/cache.py"]},
            {"kind": "decision", "text": "key it by content", "choice": "sha256", "supports": [["@1"]]},
            {"kind": "question", "text": "what about renames?"},
        ),
    ),
    ("run", ("record", "-"), batch({"kind": "claim", "text": "keyed by content now", "supersedes": ["c1"]})),
    ("run", ("record", "-"), batch({"kind": "claim", "text": "cites nothing real", "supersedes": ["c99"]})),
    ("run", ("record", "-"), batch({"kind": "claim", "text": "answers a claim", "answers": ["c4"]})),
    ("run", ("record", "-"), batch({"kind": "claim", "text": "x" * 40_000})),
    (
        "run",
        ("record", "-"),
        batch({"kind": "decision", "text": "renames follow", "choice": "git -M", "answers": ["q3"]}),
    ),
    ("edit", hand_append),
    ("run", ("record", "-"), batch({"kind": "claim", "text": "after a hand append"})),
    ("run", ("record", "--dry-run", "-"), batch({"kind": "claim", "text": "only checked"})),
    ("edit", torn_tail),
    ("run", ("record", "-"), batch({"kind": "claim", "text": "after a torn line"})),
    ("edit", duplicate),
    ("run", ("record", "-"), batch({"kind": "claim", "text": "refused: the ledger repeats an ID"})),
    ("edit", undo_duplicate),
    ("edit", marked),
    ("run", ("record", "-"), batch({"kind": "claim", "text": "refused: conflict markers"})),
    ("edit", unmarked),
    ("run", ("record", "-"), batch(*({"kind": "claim", "text": f"batch {i}"} for i in range(5)))),
    ("run", ("claim", "from the command line", "--scope", "src/cache.py", "--dry-run"), None),
]


def transcript(repo: Repo, *, with_index: bool) -> list:
    """(exit code, stdout, stderr, ledger bytes) after each step; ``with_index``: the index is kept between steps."""
    cache = Path(repo.env["XDG_CACHE_HOME"])
    out = []
    for step in STEPS:
        if with_index:
            repo.docket("list")  # present and current (a refused ledger: present, and stale after the edit)
        else:
            shutil.rmtree(cache, ignore_errors=True)
        if step[0] == "edit":
            step[1](repo.ledger)
            continue
        _, args, stdin = step
        result = repo.docket(*args, input=stdin)
        out.append((args, result.code, result.out, result.err, repo.ledger.read_bytes()))
    return out


def test_a_write_is_the_same_with_and_without_the_index(repo: Repo, tmp_path: Path) -> None:
    seed = tmp_path / "seed"
    shutil.copytree(repo.path, seed, symlinks=True)
    cache = Path(repo.env["XDG_CACHE_HOME"])
    shutil.rmtree(cache, ignore_errors=True)
    kept = transcript(repo, with_index=True)
    index_files = list((cache / "docket-git" / "index").glob("*.sqlite"))
    assert index_files, "the index was kept between steps"
    shutil.rmtree(repo.path)
    shutil.copytree(seed, repo.path, symlinks=True)
    deleted = transcript(repo, with_index=False)
    assert [r[1] for r in kept].count(1) >= 5, "refusals are part of what is compared"
    assert [r[1] for r in kept].count(0) >= 6
    for with_index, without in zip(kept, deleted, strict=True):
        assert with_index == without, with_index[0]


HOLDER = """
import signal, sys, time
from pathlib import Path
from docket_git.ledger import db, store
from docket_git.ledger.index import db_path
ledger = Path(sys.argv[1])
signal.alarm(40)  # without the bounded wait the two processes would wait for each other for ever
with db.lock(db_path(ledger)):
    print("held", flush=True)
    time.sleep(3)  # the append starts meanwhile and takes the ledger's lock
    with store.locked(ledger, exclusive=False):
        pass
print("done", flush=True)
"""


def test_an_append_never_waits_for_ever_on_a_build_that_waits_for_the_ledger(repo: Repo) -> None:
    """A build a session hook deferred holds the index's lock and then asks for the ledger's (``finish_later``)."""
    repo.ok("claim", "first")
    before = repo.ledger.read_bytes()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(repo.ledger)], env=repo.env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        started = time.monotonic()
        result = repo.docket("claim", "while a build waits")
        took = time.monotonic() - started
        assert result.code == 0 and result.out.startswith("c2 "), result.err
        assert took < 30, f"the append waited {took:.1f} s"
        assert holder.wait(timeout=30) == 0  # and the holder got the ledger's lock once the append was done
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    assert repo.ledger.read_bytes().startswith(before)
    assert [r["id"] for r in repo.records()] == ["c1", "c2"]
    repo.ok("check")


def test_a_dry_run_with_no_index_builds_none_and_a_write_leaves_it_current(repo: Repo) -> None:
    """With no index file, an append that writes builds the index before the write (``Follower.tail``'s
    ``build``: the store need not validate every line as well) and the index follows the write; a dry run,
    which writes nothing, validates the ledger itself and leaves no index behind."""
    repo.ok("claim", "first")
    cache = Path(repo.env["XDG_CACHE_HOME"])
    shutil.rmtree(cache, ignore_errors=True)
    repo.ok("claim", "only checked", "--dry-run")
    assert not list(cache.glob("docket-git/index/*.sqlite")), "a dry run leaves no index"
    repo.ok("claim", "second")
    assert len(list(cache.glob("docket-git/index/*.sqlite"))) == 1
    assert [r["id"] for r in repo.records()] == ["c1", "c2"]
    repo.ok("check")
