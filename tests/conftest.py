"""Shared fixtures: isolated environments, real git repositories, the real console script."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TypeVar

import pytest

from tests import forkserver


def _script(name: str) -> str:
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    if not found:
        pytest.exit(f"the {name} console script is not installed; run: pip install -e '.[test]'", 2)
    return found


DOCKET = _script("docket")
T = TypeVar("T")


class Forks:
    """The worker's fork server (tests/forkserver.py), started on first use and ended with the worker."""

    #: Commands git and agents start as processes: always the real console script.
    REAL_COMMANDS = ("hook", "merge-driver")

    def __init__(self) -> None:
        self.pipes: tuple[IO[str], IO[str]] | None = None  # to and from the server
        self.start_env = {k: v for k, v in os.environ.items() if not _foreign(k)}  # the worker's, as it started
        self.base = {k: v for k, v in self.start_env.items() if forkserver.shapes_interpreter(k)}
        self.files: Path | None = None
        self.always_real = os.environ.get("DOCKET_TEST_PROCESSES") == "real"
        self.lock = threading.Lock()  # one request at a time on the server's pipe

    def serves(self, args: tuple[str, ...], env: dict[str, str]) -> bool:
        """Whether a forked child is the process the console script would be for this call."""
        if self.always_real or (args and args[0] in self.REAL_COMMANDS):
            return False
        return {k: v for k, v in env.items() if forkserver.shapes_interpreter(k)} == self.base

    def _start(self) -> tuple[IO[str], IO[str]]:
        if self.pipes is None:
            self.files = Path(tempfile.mkdtemp(prefix="docket-forks-"))
            for name in ("stdin", "stdout", "stderr"):
                (self.files / name).write_bytes(b"")
            # The interpreter the console script names (its #! line), as sys.executable in docket.
            python = Path(DOCKET).read_text(errors="replace").splitlines()[0].removeprefix("#!").strip()
            proc = subprocess.Popen(
                [python, forkserver.__file__, DOCKET],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=self.start_env,
            )
            proc.wait()  # it detaches at once: the server is its child, not ours (see forkserver.serve)
            assert proc.stdin is not None and proc.stdout is not None
            self.pipes = (proc.stdin, proc.stdout)
            atexit.register(self.stop)
        return self.pipes

    def run(
        self, args: list[str], cwd: Path, env: dict[str, str], stdin: bytes | None, timeout: float
    ) -> tuple[int, bytes, bytes]:
        with self.lock:
            return self._run(args, cwd, env, stdin, timeout)

    def _run(
        self, args: list[str], cwd: Path, env: dict[str, str], stdin: bytes | None, timeout: float
    ) -> tuple[int, bytes, bytes]:
        to_server, from_server = self._start()
        assert self.files is not None
        (self.files / "stdin").write_bytes(stdin or b"")
        request = {
            "args": args,
            "cwd": str(cwd),
            "env": env,
            "stdin": str(self.files / "stdin") if stdin is not None else os.devnull,
            "stdout": str(self.files / "stdout"),
            "stderr": str(self.files / "stderr"),
            "timeout": timeout,
        }
        try:
            to_server.write(json.dumps(request) + "\n")
            to_server.flush()
            line = from_server.readline()
        except BrokenPipeError:
            line = ""
        if not line:
            self.stop()  # the next call starts another
            raise RuntimeError("the docket fork server ended")
        reply = json.loads(line)
        if reply.get("timeout"):
            raise subprocess.TimeoutExpired([DOCKET, *args], timeout)
        return reply["code"], (self.files / "stdout").read_bytes(), (self.files / "stderr").read_bytes()

    def stop(self) -> None:
        if self.pipes is not None:
            for pipe in self.pipes:  # the server's loop ends at the end of its input
                with contextlib.suppress(BrokenPipeError):
                    pipe.close()
            self.pipes = None
        if self.files is not None:
            shutil.rmtree(self.files, ignore_errors=True)
            self.files = None


_FOREIGN = ("DOCKET_", "CLAUDE_", "CODEX_", "GIT_")


def _foreign(name: str) -> bool:
    return name.startswith(_FOREIGN) or name in ("AI_AGENT", "SESSION_ID")


FORKS = Forks()


def _isolated_values(root: Path) -> dict[str, str]:
    """The variables that cut a process under root off from the user's git config, caches and agents."""
    home = root / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n[user]\n\tname = Test\n\temail = t@example.com\n")
    return {
        "HOME": str(home),
        "XDG_CACHE_HOME": str(root / "cache"),
        "XDG_STATE_HOME": str(root / "state"),
        "XDG_CONFIG_HOME": str(root / "config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_AUTHOR_NAME": "Test Author",
        "GIT_AUTHOR_EMAIL": "author@example.com",
        "GIT_COMMITTER_NAME": "Test Author",
        "GIT_COMMITTER_EMAIL": "author@example.com",
        "DOCKET_AUTHOR": "tester",
        "PATH": str(Path(DOCKET).parent) + os.pathsep + os.environ.get("PATH", ""),
    }


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A process environment cut off from the user's git config, caches and agent variables."""
    for name in list(os.environ):
        if _foreign(name):
            monkeypatch.delenv(name, raising=False)
    for key, value in _isolated_values(tmp_path).items():
        monkeypatch.setenv(key, value)
    return dict(os.environ)


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> object:
        return json.loads(self.out)


@dataclass
class Repo:
    """A real git repository with helpers to run docket and git inside it."""

    path: Path
    env: dict[str, str]

    @property
    def ledger(self) -> Path:
        return self.path / ".docket" / "ledger.jsonl"

    def docket(
        self, *args: str, input: str | bytes | None = None, cwd: Path | None = None, real: bool = False
    ) -> Result:
        """``docket ARGS`` in the repository (or cwd): a warm forked child of the worker's fork server
        (tests/forkserver.py), or the console script as a subprocess when ``real`` is set, for the
        commands git and agents start (``hook``, ``merge-driver``), and whenever the fork server
        would not be the same process (see ``Forks.serves``)."""
        data = input.encode() if isinstance(input, str) else input
        where = cwd or self.path
        if real or not FORKS.serves(args, self.env):
            proc = subprocess.run([DOCKET, *args], cwd=where, env=self.env, input=data, capture_output=True, timeout=60)
            return Result(proc.returncode, proc.stdout.decode(), proc.stderr.decode())
        code, out, err = FORKS.run(list(args), where, self.env, data, timeout=60)
        return Result(code, out.decode(), err.decode())

    def ok(self, *args: str, **kw) -> Result:
        result = self.docket(*args, **kw)
        assert result.code == 0, f"docket {' '.join(args)} exited {result.code}: {result.err}"
        return result

    def imports(self, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
        """``docket ARGS`` run under ``python -X importtime``: the process and the modules it imported."""
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "docket_git", *args],
            cwd=self.path,
            env=self.env,
            capture_output=True,
            text=True,
        )
        imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "import time:" in line}
        return proc, imported

    def git(self, *args: str, check: bool = True) -> str:
        proc = subprocess.run(["git", *args], cwd=self.path, env=self.env, capture_output=True, text=True)
        if check and proc.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
        return proc.stdout

    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.ledger.read_text().splitlines() if line.strip()]

    def write_ledger(self, lines: list[dict | str]) -> bytes:
        self.ledger.parent.mkdir(exist_ok=True)
        text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
        self.ledger.write_text(text)
        return self.ledger.read_bytes()


@pytest.fixture(scope="session")
def _initialised(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One repository after ``git init`` and ``docket init``, made once per worker; ``repo`` copies it.

    What ``docket init`` writes is the same in every repository (its paths are the interpreter's, not the
    repository's), so a copy is the repository the test would have made, at a copy's cost instead of
    three processes'. Tests of ``docket init`` itself start from ``bare_repo``.
    """
    root = tmp_path_factory.mktemp("initialised")
    env = {k: v for k, v in os.environ.items() if not _foreign(k)} | _isolated_values(root)
    path = root / "repo"
    path.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True, env=env)
    Repo(path, env).ok("init")
    return path


@pytest.fixture
def repo(tmp_path: Path, env: dict[str, str], _initialised: Path) -> Repo:
    """An initialised git repository (no commits) with an empty docket ledger (a copy of one ``docket init`` made)."""
    path = tmp_path / "repo"
    shutil.copytree(_initialised, path, symlinks=True)
    return Repo(path, env)


def build_template(factory: pytest.TempPathFactory, initialised: Path, build: Callable[[Repo], T]) -> tuple[Path, T]:
    """A repository built once (for a module-scoped fixture) by ``build`` from a copy of ``_initialised``.

    ``build`` runs docket and git as a test would, in an environment of its own (isolated like ``env``);
    ``from_template`` gives each test a copy. A copy of a built repository is the repository the test
    would have built (git and docket keep no absolute path in it), at a copy's cost instead of the
    processes'. What lives outside the repository (docket's caches, agent state) starts empty in the
    test's own environment, as for a clone.
    """
    root = factory.mktemp("template")
    env = {k: v for k, v in os.environ.items() if not _foreign(k)} | _isolated_values(root)
    path = root / "repo"
    shutil.copytree(initialised, path, symlinks=True)
    return path, build(Repo(path, env))


def from_template(template: Path, repo: Repo) -> Repo:
    """Replace ``repo``'s files with a copy of a ``build_template`` repository; ``repo`` keeps its environment."""
    shutil.rmtree(repo.path)
    shutil.copytree(template, repo.path, symlinks=True)
    return repo


_templates: dict[Callable, tuple[Path, object]] = {}


def template_fixture(build: Callable[[Repo], dict]) -> Callable:
    """A fixture giving each test a copy of the repository ``build`` made (once per worker) and what it returned.

    ``name = template_fixture(build)`` in a test module (or here) declares the fixture ``name``: a dict of
    what ``build`` returned, plus ``"repo"``, the test's own ``repo`` with the built files
    (``build_template``, ``from_template``).
    """

    @pytest.fixture
    def fixture(repo: Repo, tmp_path_factory: pytest.TempPathFactory, _initialised: Path) -> dict:
        if build not in _templates:
            _templates[build] = build_template(tmp_path_factory, _initialised, build)
        template, built = _templates[build]
        assert isinstance(built, dict)
        return {**built, "repo": from_template(template, repo)}

    fixture.__doc__ = f"``{build.__name__}``'s repository (built once, copied per test) and what it returned."
    return fixture


def commit(repo: Repo, message: str) -> str:
    """``git add -A`` and commit; the new commit's ID."""
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", message)
    return repo.git("rev-parse", "HEAD").strip()


def diverged(repo: Repo) -> None:
    """A branch ``topic`` off HEAD records "Topic claim" and main "Main claim", each committed; main is checked out."""
    repo.git("checkout", "-q", "-b", "topic")
    repo.ok("claim", "Topic claim")
    commit(repo, "topic")
    repo.git("checkout", "-q", "main")
    repo.ok("claim", "Main claim")
    commit(repo, "main")


def build_merged(repo: Repo) -> dict:
    """main and topic both recorded after the fork; topic merged into main, so topic's c2 and d3 became c4 and d5."""
    repo.ok("claim", "Shared premise")
    commit(repo, "shared")
    fork = repo.records()
    repo.git("checkout", "-q", "-b", "topic")
    repo.ok("claim", "Topic claim")
    repo.ok("decision", "Topic decides on c2", "--choice", "X", "--depends-on", "c2")
    topic_tip = commit(repo, "topic: claim and decision")
    topic_data = repo.ledger.read_bytes()
    topic_records = repo.records()
    repo.git("checkout", "-q", "main")
    repo.ok("claim", "Main claim")
    repo.ok("claim", "Main second claim")
    commit(repo, "main: two claims")
    main_added = repo.records()[len(fork) :]
    repo.git("merge", "-q", "--no-edit", "topic")
    merge = repo.git("rev-parse", "HEAD").strip()
    return {
        "topic_tip": topic_tip,
        "topic_data": topic_data,
        "topic_records": topic_records,
        "main_added": main_added,
        "merge": merge,
    }


#: ``build_merged``'s repository: the history tests' renumbering merge.
merged = template_fixture(build_merged)


@pytest.fixture
def bare_repo(env: dict[str, str], git_repo) -> Repo:
    """A git repository without a ledger: pytest-git's ``git_repo`` (``git init`` in its own workspace,
    after ``env`` has isolated git's config, so the branch is ``main``)."""
    path = Path(git_repo.workspace)
    assert (path / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n", "git_repo ran before env"
    return Repo(path, env)


def rec(rid: str, text: object = None, **fields) -> dict:
    """A complete, valid schema-2 record for hand-written test ledgers."""
    kind = {"c": "claim", "d": "decision", "q": "question"}[rid[0]]
    record = {
        "schema": 2,
        "kind": kind,
        "id": rid,
        "text": f"record {rid}" if text is None else text,
        "state": {"claim": "unassessed", "decision": "adopted", "question": "open"}[kind],
        "ts": "2026-01-01T00:00:00+00:00",
        "author": "tester",
        "session": "",
        "branch": "",
        "scope": [],
        "rationale": "",
        "supports": [],
        "depends_on": [],
        "answers": [],
        "supersedes": [],
        "evidence": [],
        "revisit": "",
        "cost_if_wrong": "",
        "pinned": False,
    }
    if kind == "decision":
        record.update(choice=f"choice {rid}", alternatives=[], decided_by="")
    record.update(fields)
    return record


_ROOT = Path(__file__).resolve().parent.parent


def project_copy(dest: Path) -> Path:
    """The working tree's tracked and untracked (not ignored) files, copied to dest."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=_ROOT,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    for raw in filter(None, listed):
        name = os.fsdecode(raw)
        source = _ROOT / name
        if source.is_file() and not source.is_symlink():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    return dest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "once: installs docket or runs a real agent; scripts/test runs these in one process beside the parallel run",
    )
