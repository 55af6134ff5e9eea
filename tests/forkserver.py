"""A warm docket process that forks one child per ``Repo.docket`` call (the tests' fast path to the CLI).

Starting the console script costs a Python start and docket's imports (about 0.1 s of CPU) before the
command does anything; the suite runs docket thousands of times. This server is a plain Python process
started once per test worker with the worker's own environment: it imports ``docket_git.entry`` and the
command modules (nothing that reads the environment, the working directory or git at import: pygit2 is
not among them), then waits. For each request it forks a child that takes the request's working
directory, environment, argv and standard streams and runs ``entry.main`` as the console script would,
so each command starts from a process that has run nothing but imports, never from the test process
(whose monkeypatches, warning filters, caches and threads it does not inherit).

What differs from the console script is only what a process start itself does: the interpreter's
startup and the imports. Tests where those are under test (the hooks and the merge driver that git and
agents start, import-time checks, signals, concurrency, the installed scripts) start the console script
as a subprocess themselves, and ``Repo.docket`` sends ``hook`` and ``merge-driver`` to the real script,
as it does any call with ``real=True`` or an environment whose locale or ``PYTHON*`` variables differ
from the server's (those shape the interpreter before docket runs). ``DOCKET_TEST_PROCESSES=real``
sends every call to the real script (``scripts/test --real``).

Protocol, one JSON line each way on the server's stdin and stdout: the request
``{"args", "cwd", "env", "stdin", "stdout", "stderr", "timeout"}`` (the three streams are file paths)
and the reply ``{"code": N}`` or ``{"timeout": true}``.
"""

from __future__ import annotations

import atexit
import json
import os
import resource
import select
import signal
import sys

#: What the console script imports on the way to each command (entry routes the light commands to their
#: own modules; the rest go through cli.main). Importing them here is what makes a child warm.
WARM = (
    "docket_git.entry",
    "docket_git.cli.main",
    "docket_git.cli.context",
    "docket_git.cli.record",
    "docket_git.cli.listing",
    "docket_git.cli.show",
    "docket_git.cli.ledger_fast",
    "docket_git.cli.session_fast",
    "docket_git.cli.sql",
    "docket_git.cli.check",
)

#: Variables that shape the interpreter itself (stream encodings, flags, paths) rather than docket.
INTERPRETER_PREFIXES = ("PYTHON", "LC_")
INTERPRETER_NAMES = ("LANG", "LANGUAGE")


def shapes_interpreter(name: str) -> bool:
    return name.startswith(INTERPRETER_PREFIXES) or name in INTERPRETER_NAMES


def _child(request: dict, streams: tuple[tuple[str, str | None], ...], script: str) -> None:
    """Become the command: never returns."""
    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        for fd, (path, mode) in enumerate(
            zip((request["stdin"], request["stdout"], request["stderr"]), "rww", strict=True)
        ):
            handle = os.open(path, os.O_RDONLY if mode == "r" else os.O_WRONLY | os.O_TRUNC)
            os.dup2(handle, fd)
            os.close(handle)
        # The standard streams a Python started with these files would have (same encodings and error
        # handlers as this server's, which started under the same locale variables).
        (in_enc, in_err), (out_enc, out_err), (err_enc, err_err) = streams
        sys.stdin = sys.__stdin__ = open(0, encoding=in_enc, errors=in_err, closefd=False)  # noqa: SIM115
        sys.stdout = sys.__stdout__ = open(1, "w", encoding=out_enc, errors=out_err, closefd=False)  # noqa: SIM115
        sys.stderr = sys.__stderr__ = open(  # noqa: SIM115
            2, "w", encoding=err_enc, errors=err_err, closefd=False, buffering=1
        )
        sys.argv = [script, *request["args"]]
        from docket_git import entry

        try:
            entry.main(request["args"])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if exc.code is not None and not isinstance(exc.code, int):
                print(exc.code, file=sys.stderr)
        except BaseException:
            sys.excepthook(*sys.exc_info())
            code = 1
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except OSError:
                code = code or 120
    finally:
        os._exit(code)


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def serve() -> None:
    script = sys.argv[1]
    sys.path[0] = os.path.dirname(script)  # the console script's sys.path, not this file's directory
    # Detach: the test process starts this one and reaps it at once, so a test that asks whether its
    # process has any child left (tests/test_run_git.py) sees none; the grandchild serves. It ends at
    # the end of its input, when the test process closes the pipe or dies.
    if os.fork() > 0:
        os._exit(0)
    for name in WARM:
        __import__(name)
    streams = tuple((s.encoding, s.errors) for s in (sys.stdin, sys.stdout, sys.stderr))
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)  # children inherit neither end of the request pipe
    for line in requests:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            requests.close()
            replies.close()
            _child(request, streams, script)
        pidfd = os.pidfd_open(pid)
        ready, _, _ = select.select([pidfd], [], [], request["timeout"])
        reply: dict[str, object]
        if not ready:
            os.kill(pid, signal.SIGKILL)
            reply = {"timeout": True}
        else:
            reply = {}
        _, status = os.waitpid(pid, 0)
        os.close(pidfd)
        reply.setdefault("code", os.waitstatus_to_exitcode(status))
        replies.write(json.dumps(reply) + "\n")
        replies.flush()
    # A detached process's CPU is in no one's rusage: FORKSERVER_CPU_LOG (for measuring the suite)
    # gets a line with this server's and its children's CPU seconds.
    log = os.environ.get("FORKSERVER_CPU_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(f"{_cpu_seconds():.3f}\n")


if __name__ == "__main__":
    serve()
