"""docket context through the real console script, in real git repositories."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import Repo, rec
from .ctx import blocks


def write(repo: Repo, path: str, text: str = "x\n") -> None:
    target = repo.path / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def commit(repo: Repo, message: str = "work") -> None:
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", message)


def scoped_ledger(repo: Repo) -> None:
    # `docket init` leaves .gitattributes untracked; keep it out of these scopes.
    with (repo.path / ".git" / "info" / "exclude").open("a") as handle:
        handle.write(".gitattributes\n")
    repo.write_ledger(
        [
            rec("c1", "the a module parses input", scope=["src/a.py"]),
            rec("c2", "the b module writes output", scope=["src/b.py"]),
            rec("c3", "docs are generated", scope=["docs/"]),
        ]
    )


def files_line(text: str) -> str | None:
    return next((line for line in text.splitlines() if line.startswith("# files: ")), None)


# -- empty and missing ledgers, usage errors ----------------------------------------------------


def test_no_ledger_says_so_and_an_empty_ledger_prints_nothing(bare_repo: Repo, repo: Repo) -> None:
    for args in (["context"], ["context", "--for", "gemini"], ["context", "--since", "c1"]):
        result = repo.docket(*args)
        assert (result.code, result.out, result.err) == (0, "", "")
        result = bare_repo.docket(*args)
        assert (result.code, result.out) == (0, "")
        assert (
            result.err
            == f"docket: no ledger at {bare_repo.ledger} yet; run 'docket init' to start one (or record with 'docket claim ...')\n"
        )


def test_max_chars_below_the_minimum_is_a_usage_error(repo: Repo) -> None:
    repo.ok("claim", "one", "--scope", "x")
    for value in ("511", "0", "-1"):
        result = repo.docket("context", "--max-chars", value)
        assert (result.code, result.out) == (2, "")
        assert result.err == "docket: --max-chars must be at least 512\n"
    assert repo.docket("context", "--max-chars", "900.5").code == 2
    assert repo.docket("context", "--max-chars", "lots").code == 2


def test_unknown_harness_and_unknown_option(repo: Repo) -> None:
    repo.ok("claim", "one", "--scope", "x")
    result = repo.docket("context", "--for", "vim")
    assert result.code == 2 and "--for must be one of claude, codex, gemini, copilot, cursor" in result.err
    assert repo.docket("context", "--bogus").code == 2
    assert "--max-chars" in repo.ok("context", "--help").out


def test_output_is_deterministic_and_the_revision_moves(repo: Repo) -> None:
    repo.ok("claim", "one", "--scope", "x")
    repo.ok("claim", "two", "--scope", "y")
    first = repo.ok("context").out
    assert first == repo.ok("context").out
    assert first.startswith("# docket: repo | revision: ")
    repo.ok("claim", "three", "--scope", "z")
    again = repo.ok("context").out
    assert again.splitlines()[0] != first.splitlines()[0]


def test_the_typer_command_and_the_fast_path_agree(repo: Repo) -> None:
    scoped_ledger(repo)
    write(repo, "src/a.py")
    args = ["context", "--max-chars", "700", "--query", "module"]
    via_typer = subprocess.run(
        [sys.executable, "-c", f"from docket_git.cli.main import run; run({args!r})"],
        cwd=repo.path,
        env=repo.env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert via_typer.stdout == repo.ok(*args).out
    assert (
        repo.ok("context").out
        == subprocess.run(
            ["git", "docket", "context"], cwd=repo.path, env=repo.env, capture_output=True, text=True, check=True
        ).stdout
    )


# -- auto-scope ---------------------------------------------------------------------------------


def test_untracked_file_is_scoped(repo: Repo) -> None:
    scoped_ledger(repo)
    write(repo, "src/a.py")
    text = repo.ok("context").out
    assert files_line(text) == "# files: src/a.py"
    assert blocks(text)[0] == "c1"
    assert "### c1 | claim | unassessed [selected]" in text
    off = repo.ok("context", "--no-auto-scope").out
    assert files_line(off) is None
    assert "# selection: scored by recency and relations; no task scope given" in off


def test_clean_tree_falls_back_to_the_last_commit(repo: Repo) -> None:
    scoped_ledger(repo)
    write(repo, "src/a.py")
    commit(repo, "a")
    write(repo, "src/b.py")
    commit(repo, "b")
    text = repo.ok("context").out
    assert files_line(text) == "# files: src/b.py"  # the ledger's own files are never task scope
    assert blocks(text)[0] == "c2"


def test_a_commit_of_only_ledger_records_is_looked_past(repo: Repo) -> None:
    scoped_ledger(repo)
    write(repo, "src/b.py")
    commit(repo, "work on b")
    repo.ok("claim", "Recorded after the work", "--scope", "docs/")
    commit(repo, "record")  # touches only .docket/ledger.jsonl
    assert files_line(repo.ok("context").out) == "# files: src/b.py"


def test_repository_with_no_commits_stays_unscoped(repo: Repo) -> None:
    scoped_ledger(repo)
    text = repo.ok("context").out
    assert files_line(text) is None
    assert "# selection: scored by recency and relations; no task scope given" in text


def test_changed_and_untracked_files_interleave(repo: Repo) -> None:
    scoped_ledger(repo)
    write(repo, "src/a.py")
    write(repo, "src/b.py")
    commit(repo)
    write(repo, "src/a.py", "changed\n")
    write(repo, "src/b.py", "changed\n")
    write(repo, "notes/one.md")
    write(repo, "notes/two.md")
    assert files_line(repo.ok("context").out) == "# files: src/a.py, notes/one.md, src/b.py, notes/two.md"
    (repo.path / ".docket" / "config.toml").write_text("[auto_scope]\nlimit = 2\n")
    assert files_line(repo.ok("context").out) == "# files: src/a.py, notes/one.md"


def test_auto_scope_is_off_beside_a_query_unless_forced(repo: Repo) -> None:
    scoped_ledger(repo)
    write(repo, "src/a.py")
    assert files_line(repo.ok("context", "--query", "docs").out) is None
    forced = repo.ok("context", "--query", "docs", "--auto-scope").out
    assert files_line(forced) == "# files: src/a.py"
    assert files_line(repo.ok("context", "--file", "src/b.py", "--auto-scope").out) == "# files: src/b.py, src/a.py"
    assert files_line(repo.ok("context", "--all").out) is None


def test_from_a_subdirectory(repo: Repo) -> None:
    scoped_ledger(repo)
    write(repo, "src/a.py")
    sub = repo.path / "src"
    text = repo.docket("context", cwd=sub).out
    assert files_line(text) == "# files: src/a.py"
    assert files_line(repo.docket("context", "--file", str(sub / "b.py"), cwd=sub).out) == "# files: src/b.py"


# -- config ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[weights]\nfoo = 1\n", "docket: unknown setting weights.foo\n"),
        ('[budget]\ntarget = "8000"\n', "docket: budget.target must be an integer\n"),
        ("[colour]\nx = 1\n", "docket: unknown settings section [colour]\n"),
        ("weights = 3\n", "docket: [weights] must be a table\n"),
        ("[index]\ndetail_min = 200\n", "docket: index.detail_min must not exceed index.detail_max\n"),
    ],
)
def test_config_errors_exit_1(repo: Repo, toml: str, message: str) -> None:
    repo.ok("claim", "one", "--scope", "x")
    (repo.path / ".docket" / "config.toml").write_text(toml)
    result = repo.docket("context")
    assert (result.code, result.out, result.err) == (1, "", message)


def test_unreadable_config(repo: Repo) -> None:
    repo.ok("claim", "one", "--scope", "x")
    (repo.path / ".docket" / "config.toml").write_text("[weights\n")
    result = repo.docket("context")
    assert result.code == 1 and result.err.startswith("docket: cannot read ")


def test_settings_fingerprint_in_the_header(repo: Repo) -> None:
    repo.ok("claim", "one", "--scope", "x")
    config = repo.path / ".docket" / "config.toml"
    config.write_text("[budget]\ntarget = 8000\n[weights]\ntext = 750\n")
    assert "| settings:" not in repo.ok("context").out.splitlines()[0]
    config.write_text("[weights]\ntext = 400\n")
    first = repo.ok("context").out.splitlines()[0]
    fingerprint = first.split("| settings: ")[1]
    assert len(fingerprint) == 8 and int(fingerprint, 16) >= 0


# -- --since ----------------------------------------------------------------------------------------------


def test_since_latest_and_since_an_earlier_pair(repo: Repo) -> None:
    repo.ok("claim", "keys expire daily", "--state", "accepted", "--scope", "x")
    header = repo.ok("context").out.splitlines()[0]
    pair = header.split("latest: ")[1]
    assert pair.startswith("c1@") and len(pair) == 3 + 12
    assert repo.ok("context", "--since", "c1").out.splitlines()[1] == "# changed: 0 added, 0 no longer available."
    assert repo.ok("context", "--since", pair).out.splitlines()[1] == "# changed: 0 added, 0 no longer available."
    repo.ok("claim", "keys expire weekly", "--state", "accepted", "--supersedes", "c1", "--scope", "x")
    result = repo.ok("context", "--since", pair)
    assert result.err == ""
    lines = result.out.splitlines()
    assert lines[0].endswith(" | since: c1")
    assert lines[1] == "# changed: 1 added, 1 no longer available."
    assert blocks(result.out) == ["c2", "c1"]


def test_unknown_or_stale_baseline_prints_a_full_briefing(repo: Repo) -> None:
    repo.ok("claim", "one", "--scope", "x")
    full = repo.ok("context").out
    for baseline in ("c9", "c1@000000000000"):
        result = repo.ok("context", "--since", baseline)
        assert result.err == f"docket: baseline {baseline} is unknown or stale; printing a full briefing\n"
        assert result.out == full


def test_stale_after_the_history_changed(repo: Repo) -> None:
    repo.ok("claim", "one", "--scope", "x")
    pair = repo.ok("context").out.splitlines()[0].split("latest: ")[1]
    # Rewrite history under the same ID (as a renumbering merge would): the digest no longer matches.
    repo.write_ledger([rec("c1", "something else entirely", scope=["x"])])
    assert "unknown or stale" in repo.ok("context", "--since", pair).err


# -- --for --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("harness", "path"),
    [
        ("claude", ("hookSpecificOutput", "additionalContext")),
        ("codex", ("hookSpecificOutput", "additionalContext")),
        ("gemini", ("hookSpecificOutput", "additionalContext")),
        ("copilot", ("additionalContext",)),
        ("cursor", ("additional_context",)),
    ],
)
def test_for_envelopes_parse_as_json(repo: Repo, harness: str, path: tuple[str, ...]) -> None:
    repo.ok("claim", "une clé — ünïcode", "--scope", "x")
    plain = repo.ok("context").out
    payload = repo.ok("context", "--for", harness).json()
    value: object = payload
    for key in path:
        value = value[key]  # type: ignore[index]
    assert value == plain
    if path[0] == "hookSpecificOutput":
        assert payload["hookSpecificOutput"]["hookEventName"] == "SessionStart"  # type: ignore[index]
    assert repo.ok("context", "--for", harness).out.endswith("}\n")


def test_for_wraps_the_delta_too(repo: Repo) -> None:
    repo.ok("claim", "one", "--scope", "x")
    payload = repo.ok("context", "--since", "c1", "--for", "cursor").json()
    assert "# changed: 0 added" in payload["additional_context"]  # type: ignore[index]


def test_output_fits_every_ceiling(repo: Repo) -> None:
    for i in range(40):
        repo.ok("claim", f"claim number {i} " * 6, "--scope", f"src/m{i % 7}.py")
    for ceiling in (512, 700, 1500, 5000):
        out = repo.ok("context", "--max-chars", str(ceiling)).out
        assert len(out) <= ceiling and out.endswith("\n")


def test_broken_pipe_is_quiet(repo: Repo) -> None:
    for i in range(30):
        repo.ok("claim", f"claim {i}", "--scope", "x")
    proc = subprocess.run(
        f"{Path(sys.executable).parent / 'docket'} context --all | head -1",
        shell=True,
        cwd=repo.path,
        env=repo.env,
        capture_output=True,
        text=True,
    )
    assert proc.stdout.startswith("# docket: ") and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "args", [["list", "--json"], ["list", "--oneline"], ["list"], ["list", "--json", "--where", "premise"]]
)
@pytest.mark.parametrize("merged", [False, True], ids=["stdout", "stderr-too"])
def test_a_reader_that_stops_early_ends_the_command_quietly(repo: Repo, args: list[str], merged: bool) -> None:
    """``docket list | head``: exit 0, nothing on stderr (no "lost sys.stderr"), even with ``2>&1``."""
    repo.write_ledger([rec(f"c{n}", f"premise {n} " + "x" * 200) for n in range(1, 3001)])  # ~1 MB of output
    repo.ok("list", "--oneline")  # build the index first
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "docket"), *args],
        cwd=repo.path,
        env=repo.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merged else subprocess.PIPE,
    )
    assert proc.stdout is not None
    head = proc.stdout.read(100)
    proc.stdout.close()  # the reader goes away with most of the output unread
    err = b""
    if proc.stderr is not None:
        err = proc.stderr.read()
        proc.stderr.close()
    assert proc.wait(timeout=60) == 0
    assert head and err == b""


def test_ledger_below_the_work_tree_root(bare_repo: Repo) -> None:
    project_dir = bare_repo.path / "service"
    project_dir.mkdir()
    (project_dir / ".docket").mkdir()
    (project_dir / ".docket" / "ledger.jsonl").write_text(
        json.dumps(rec("c1", "the api module", scope=["*.py"])) + "\n"
    )
    (project_dir / "api.py").write_text("x\n")
    (bare_repo.path / "top.py").write_text("x\n")
    text = bare_repo.docket("context", cwd=project_dir).out
    assert files_line(text) == "# files: api.py"  # relative to the ledger's directory; top.py is outside it


def test_a_guess_no_record_matches_briefs_unscoped(repo: Repo) -> None:
    """Right after `docket init` the only new file is .gitattributes: no record is about it."""
    repo.ok("claim", "Payments need keys", "--scope", "src/pay/")
    repo.ok("decision", "Keys live in Redis", "--choice", "Redis", "--scope", "src/pay/")
    text = repo.ok("context").out
    assert files_line(text) is None
    assert "# selection: scored by recency and relations; no task scope given" in text
    assert blocks(text) == ["d2", "c1"]
    write(repo, "src/pay/api.py")  # now the guess names work a record is about
    text = repo.ok("context").out
    assert files_line(text) is not None and "src/pay/api.py" in files_line(text)
    assert "# selection: scored by task scope and query, with related records" in text


def test_unreadable_git_state_falls_back_to_unscoped(repo: Repo) -> None:
    scoped_ledger(repo)
    write(repo, "src/a.py")
    (repo.path / ".git" / "index").write_bytes(b"not an index")
    result = repo.ok("context")
    assert files_line(result.out) is None
    assert "no task scope given" in result.out


def test_plain_invocations_skip_typer(repo: Repo) -> None:
    repo.ok("claim", "one", "--scope", "x")
    probe = (
        "import sys, os\n"
        "from docket_git import entry\n"
        "os._exit = lambda code: (print(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click'))), "
        "sys.exit(code))\n"
        "entry.main(['context', '--max-chars', '900'])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=repo.path, env=repo.env, capture_output=True, text=True, check=True
    )
    assert proc.stdout.rstrip().endswith("[]")
    assert proc.stdout.startswith("# docket: repo | revision: ")


def test_missing_driver_notice_tops_the_briefing(repo: Repo) -> None:
    scoped_ledger(repo)
    assert "merge driver not set up" not in repo.ok("context").out
    repo.git("config", "--unset", "merge.docket.driver")
    text = repo.ok("context").out
    assert text.startswith("# merge driver not set up in this clone; run docket init\n# docket: ")
    capped = repo.ok("context", "--max-chars", "600").out
    assert len(capped) <= 600 and capped.startswith("# merge driver not set up")
    tight = repo.docket("context", "--max-chars", "512")
    assert len(tight.out) <= 512 and "merge driver not set up" in tight.err


def test_the_driver_wiring_is_asked_of_git_once_per_config_change(repo: Repo, tmp_path: Path) -> None:
    """The briefing's driver check spawns ``git config`` only when a config file's stat changed (a git on PATH logs it)."""
    import shutil

    scoped_ledger(repo)
    shim = tmp_path / "shim"
    shim.mkdir()
    log = tmp_path / "git.log"
    real = shutil.which("git", path=repo.env["PATH"])
    (shim / "git").write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n')
    (shim / "git").chmod(0o755)
    logged = Repo(repo.path, {**repo.env, "PATH": f"{shim}:{repo.env['PATH']}"})

    def configs() -> int:
        text = log.read_text() if log.exists() else ""
        log.write_text("")
        return sum(" config " in f" {line} " for line in text.splitlines())

    assert "merge driver not set up" not in logged.ok("context").out
    assert configs() == 1  # asked once, then remembered
    assert "merge driver not set up" not in logged.ok("context").out
    assert configs() == 0
    repo.git("config", "--unset", "merge.docket.driver")  # the config file changes: asked again
    assert logged.ok("context").out.startswith("# merge driver not set up")
    assert configs() == 1
    assert logged.ok("context").out.startswith("# merge driver not set up")
    assert configs() == 0
