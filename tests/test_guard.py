"""The PreToolUse guard: which agent tool calls write a ledger, through the real hook command."""

from __future__ import annotations

import json
import os
import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docket_git.agents.guard import command_writes_ledger, edited_paths, is_ledger_path, ledger_write, patch_paths

from .conftest import Repo

WRITES = [
    "echo x >> .docket/ledger.jsonl",
    "echo x > ./.docket/ledger.jsonl",
    "printf '%s\\n' '{}' 2>&1 >>.docket/ledger.jsonl",
    "cat a.jsonl | tee -a .docket/ledger.jsonl",
    "sed -i 's/a/b/' .docket/ledger.jsonl",
    "sed -i.bak -e 's/x/y/' sub/.docket/ledger.jsonl",
    "perl -pi -e 's/a/b/' .docket/ledger.jsonl",
    "truncate -s 0 .docket/ledger.jsonl",
    "sort -o .docket/ledger.jsonl .docket/ledger.jsonl",
    "sort -uo .docket/ledger.jsonl x",
    "uniq a.jsonl .docket/ledger.jsonl",
    "git checkout -- .docket/ledger.jsonl",
    "git checkout HEAD~2 .docket/ledger.jsonl",
    "git restore .docket/ledger.jsonl",
    "git -C . rm .docket/ledger.jsonl",
    "rm -f .docket/ledger.jsonl",
    "mv .docket/ledger.jsonl /tmp/x",
    "cp /tmp/other.jsonl .docket/ledger.jsonl",
    "dd if=/dev/zero of=.docket/ledger.jsonl",
    "find .docket -name '*.jsonl' -delete",
    "python3 -c \"open('.docket/ledger.jsonl','a').write('x')\"",
    "node -e \"require('fs').writeFileSync('.docket/ledger.jsonl','')\"",
    "cd src && echo x >> ../.docket/ledger.jsonl",
    "sudo tee .docket/ledgers/events.jsonl < x",
    "bash -c 'echo x >> .docket/ledger.jsonl'",
    # found by trying the old guard (issue 14): each of these passed without a word
    "cd .docket && echo x >> ledger.jsonl",
    "cd .docket; sed -i d ledger.jsonl",
    "L=.docket/ledger.jsonl; echo x >> $L",
    "export L=.docket/ledger.jsonl && tee -a ${L} < x",
    "python3 fix.py .docket/ledger.jsonl",
    "sed -i -e 's/x/y/' .docket/ledger.jsonl",
    "sed -Ei 's/x/y/' .docket/ledger.jsonl",
    "sed --in-place=.bak 's/x/y/' .docket/ledger.jsonl",
    "echo x | tee -a .docket/ledger.jsonl",
    "tee -a .docket/ledger.jsonl < /tmp/x",
    "cp other.jsonl .docket/ledger.jsonl",
    "cp -t .docket/ other.jsonl",
    "for f in .docket/*.jsonl; do sed -i d $f; done",
    "ls .docket/*.jsonl | xargs rm",
    "rm .docket/*",
    "cat <<EOF > .docket/ledger.jsonl\n{}\nEOF",
    "python3 - <<'EOF'\nopen('.docket/ledger.jsonl', 'w')\nEOF",
    'bash -lc "rm .docket/ledger.jsonl"',
    "eval 'echo x > .docket/ledger.jsonl'",
    "echo x &>> .docket/ledger.jsonl",
    "echo x >| .docket/ledger.jsonl",
    "(cd .docket && truncate -s0 ledger.jsonl)",
    "timeout 5 rm .docket/ledger.jsonl",
    "vim .docket/ledger.jsonl",
    "mytool --fix .docket/ledger.jsonl",
    "Set-Content -Path .docket/ledger.jsonl -Value x",
    "apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: .docket/ledger.jsonl\n*** End Patch\nEOF",
]

READS = [
    "cat .docket/ledger.jsonl",
    "grep -n c12 .docket/ledger.jsonl",
    "jq -c . .docket/ledger.jsonl | head",
    "wc -l .docket/ledger.jsonl > /tmp/count",
    "git log -p -- .docket/ledger.jsonl",
    "git diff HEAD~1 -- .docket/ledger.jsonl",
    "git show HEAD:.docket/ledger.jsonl",
    "git add .docket/ledger.jsonl",
    "git commit -m 'record' .docket/ledger.jsonl",
    "docket claim 'The cache is safe' --scope .docket/ledger.jsonl",
    "cp .docket/ledger.jsonl /tmp/backup.jsonl",
    "sort .docket/ledger.jsonl",
    "echo hello > notes.txt",
    "tail -f .docket/ledger.jsonl 2>&1",
    "git commit -F- <<'EOF'\nEdit .docket/ledger.jsonl > nothing\nEOF",
    # a ledger path inside a quoted argument is text, not a target
    'git commit -m "docs: echo x >> .docket/ledger.jsonl"',
    "echo 'rm .docket/ledger.jsonl; tee .docket/ledger.jsonl' > notes.txt",
    "grep -c '\\.docket/ledger.jsonl' README.md",
    "cd .docket && cat ledger.jsonl > /tmp/copy.jsonl",
    "L=.docket/ledger.jsonl; jq . $L",
    "docket decision 'Keep it' --choice x --scope .docket/ledger.jsonl",
    "sed -n 1p .docket/ledger.jsonl",
    "head -c 100 .docket/ledger.jsonl | xxd",
    "git add .docket/ledger.jsonl && git commit -m 'record: d3'",
    "echo x >> src/ledger.jsonl",
    "Get-Content .docket/ledger.jsonl",
]


@pytest.mark.parametrize("command", WRITES)
def test_write_forms_are_caught(command: str) -> None:
    assert command_writes_ledger(command, "/repo")


@pytest.mark.parametrize("command", READS)
def test_read_forms_stay_silent(command: str) -> None:
    assert not command_writes_ledger(command, "/repo")


def test_unbalanced_quotes_still_judged_by_the_words() -> None:
    assert command_writes_ledger("rm .docket/ledger.jsonl 'oops", "/repo")
    assert not command_writes_ledger("cat .docket/ledger.jsonl 'oops", "/repo")


def test_patch_paths_and_edit_tools() -> None:
    patch = (
        "*** Begin Patch\n*** Add File: a.py\n+x\n*** Update File: src/b.py\n*** Move to: src/c.py\n@@\n-y\n+z\n"
        "*** Delete File: .docket/ledger.jsonl\n*** End Patch\n"
    )
    assert patch_paths(patch) == ["a.py", "src/b.py", "src/c.py", ".docket/ledger.jsonl"]
    assert ledger_write("apply_patch", {"command": patch}) == ".docket/ledger.jsonl"
    assert ledger_write("apply_patch", {"command": patch.replace(".docket/ledger.jsonl", "x.txt")}) is None
    assert edited_paths("apply_patch", {"input": patch})[:2] == ["a.py", "src/b.py"]  # Copilot's spelling
    view = {"command": "view", "path": ".docket/ledger.jsonl"}
    assert edited_paths("str_replace_editor", view) == []
    assert ledger_write("str_replace_editor", {**view, "command": "str_replace"}) == ".docket/ledger.jsonl"
    assert ledger_write("StrReplace", {"file_path": "/r/.docket/ledger.jsonl"}) == "/r/.docket/ledger.jsonl"
    assert ledger_write("Bash", {"command": ["bash", "-lc", "echo x >> .docket/ledger.jsonl"]}) is not None
    assert edited_paths("Read", {"file_path": ".docket/ledger.jsonl"}) is None


def test_ledger_paths() -> None:
    assert is_ledger_path("/repo/.docket/ledger.jsonl")
    assert is_ledger_path("ledger.jsonl", "/repo/.docket")
    assert is_ledger_path(".docket/ledgers/map.jsonl")
    assert is_ledger_path(".docket/ledger.jsonl.schema1")
    assert not is_ledger_path(".docket/config.toml")
    assert not is_ledger_path("src/ledger.jsonl")


def hook(repo: Repo, payload: object, *extra: str) -> tuple[int, str, str]:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    result = repo.docket("hook", "pre-tool-use", *extra, input=data)
    return result.code, result.out, result.err


def test_hook_asks_for_direct_edits(repo: Repo) -> None:
    for tool, tool_input in [
        ("Write", {"file_path": str(repo.ledger), "content": "{}"}),
        ("Edit", {"file_path": ".docket/ledger.jsonl", "old_string": "a", "new_string": "b"}),
        ("MultiEdit", {"file_path": ".docket/ledger.jsonl", "edits": []}),
        ("Bash", {"command": "echo x >> .docket/ledger.jsonl"}),
    ]:
        code, out, _ = hook(repo, {"tool_name": tool, "tool_input": tool_input, "cwd": str(repo.path)})
        assert code == 0
        decision = json.loads(out)["hookSpecificOutput"]
        assert decision["hookEventName"] == "PreToolUse"
        assert decision["permissionDecision"] == "ask"
        assert "docket claim" in decision["permissionDecisionReason"]  # the user sees this
        assert "docket rebase" in decision["additionalContext"]  # the model sees this
        assert "Approve" not in decision["additionalContext"]


def test_hook_is_silent_for_reads_and_other_files(repo: Repo) -> None:
    for tool_input in [{"command": "cat .docket/ledger.jsonl"}, {"command": "docket claim x"}, {"command": "ls"}]:
        assert hook(repo, {"tool_name": "Bash", "tool_input": tool_input, "cwd": str(repo.path)}) == (0, "", "")
    payload = {"tool_name": "Write", "tool_input": {"file_path": "src/a.py"}, "cwd": str(repo.path)}
    assert hook(repo, payload) == (0, "", "")


def test_malformed_input_exits_zero_silently(repo: Repo) -> None:
    for junk in ("", "not json", "[1,2]", '{"tool_name": 5}', '{"tool_name":"Bash","tool_input":"x"}'):
        assert hook(repo, junk) == (0, "", ""), junk


def test_other_agent_envelopes(repo: Repo) -> None:
    payload = {"tool_name": "Bash", "tool_input": {"command": "rm .docket/ledger.jsonl"}, "cwd": str(repo.path)}
    shell = {**payload, "hook_event_name": "beforeShellExecution"}
    assert json.loads(hook(repo, shell, "--for", "cursor")[1])["permission"] == "ask"
    assert json.loads(hook(repo, payload, "--for", "cursor")[1])["permission"] == "deny"  # preToolUse ignores ask
    assert json.loads(hook(repo, payload, "--for", "copilot")[1])["permissionDecision"] == "deny"
    codex = json.loads(hook(repo, payload, "--for", "codex")[1])["hookSpecificOutput"]
    assert codex["permissionDecision"] == "deny"  # Codex runs the call on "ask"
    assert "docket decision" in codex["permissionDecisionReason"] and "Approve" not in codex["permissionDecisionReason"]
    assert repo.docket("hook", "pre-tool-use", "--for", "vim", input="{}").code == 2


def test_governing_decisions_once_per_session_and_file(repo: Repo) -> None:
    repo.ok("decision", "Payments retry with idempotency keys", "--choice", "keys", "--scope", "src/pay/")
    repo.ok("decision", "The store module owns key expiry", "--choice", "TTL", "--scope", "src/pay/store.py")
    repo.ok("decision", "Unrelated", "--choice", "x", "--scope", "docs/")
    repo.ok("decision", "Old rule", "--choice", "y", "--scope", "src/pay/store.py")
    repo.ok("decision", "New rule", "--choice", "z", "--scope", "src/pay/store.py", "--supersedes", "d4")
    payload = {
        "session_id": "s1",
        "tool_name": "Edit",
        "tool_input": {"file_path": str(repo.path / "src/pay/store.py")},
        "cwd": str(repo.path),
    }
    code, out, _ = hook(repo, payload)
    assert code == 0
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"].splitlines()
    assert context == [
        "Recorded decisions govern src/pay/store.py; read one with `docket show ID`:",
        "d5 decision adopted: New rule",
        "d2 decision adopted: The store module owns key expiry",
        "d1 decision adopted: Payments retry with idempotency keys",
    ]
    assert hook(repo, payload) == (0, "", "")  # once per session and file
    assert hook(repo, {**payload, "session_id": "s2"})[1] != ""


def test_internal_error_never_fails_the_session(repo: Repo) -> None:
    repo.ok("decision", "Rule", "--choice", "x", "--scope", "src/")
    repo.ledger.write_text(repo.ledger.read_text() + "{broken\n")
    payload = {"session_id": "s", "tool_name": "Write", "tool_input": {"file_path": "src/a.py"}, "cwd": str(repo.path)}
    code, out, err = hook(repo, payload)
    assert (code, out) == (0, "")
    assert err.startswith("docket: ") and err.count("\n") == 1


def test_gemini_gets_deny_because_its_before_tool_has_no_ask(repo: Repo) -> None:
    payload = {"tool_name": "write_file", "tool_input": {"file_path": ".docket/ledger.jsonl"}, "cwd": str(repo.path)}
    out = json.loads(hook(repo, payload, "--for", "gemini")[1])
    assert out["decision"] == "deny"
    assert "docket claim" in out["reason"]
    shell = {"tool_name": "run_shell_command", "tool_input": {"command": "sed -i d .docket/ledger.jsonl"}}
    assert json.loads(hook(repo, {**shell, "cwd": str(repo.path)}, "--for", "gemini")[1])["decision"] == "deny"


def test_gemini_edit_of_a_scoped_file_stays_silent(repo: Repo) -> None:
    repo.ok("decision", "Rule", "--choice", "x", "--scope", "src/")
    payload = {
        "session_id": "g",
        "tool_name": "replace",
        "tool_input": {"file_path": "src/a.py"},
        "cwd": str(repo.path),
    }
    assert hook(repo, payload, "--for", "gemini") == (0, "", "")  # BeforeTool cannot carry added context
    assert json.loads(hook(repo, payload)[1])["hookSpecificOutput"]["additionalContext"]  # Claude's can


def test_copilot_camel_case_payloads(repo: Repo) -> None:
    """Copilot's camelCase events send toolName and toolArgs as a JSON string; edit and create take path."""
    for tool, args in [
        ("bash", {"command": "echo x >> .docket/ledger.jsonl"}),
        ("powershell", {"command": "echo x > .docket/ledger.jsonl"}),
        ("edit", {"path": str(repo.ledger)}),
        ("create", {"path": ".docket/ledgers/new.jsonl"}),
    ]:
        payload = {"sessionId": "p", "cwd": str(repo.path), "toolName": tool, "toolArgs": json.dumps(args)}
        out = json.loads(hook(repo, payload, "--for", "copilot")[1])
        assert out["permissionDecision"] == "deny", tool  # fail-closed agent: deny, with the docket way
    view = {"sessionId": "p", "cwd": str(repo.path), "toolName": "view", "toolArgs": '{"path": ".docket/ledger.jsonl"}'}
    assert hook(repo, view, "--for", "copilot") == (0, "", "")
    assert hook(repo, {**view, "toolArgs": "{not json"}, "--for", "copilot") == (0, "", "")


def test_copilot_gets_no_added_context_its_pre_tool_use_does_not_read(repo: Repo) -> None:
    repo.ok("decision", "Payments keep keys", "--choice", "keys", "--scope", "src/pay/")
    payload = {"sessionId": "p1", "cwd": str(repo.path), "toolName": "edit", "toolArgs": {"path": "src/pay/a.py"}}
    assert hook(repo, payload, "--for", "copilot") == (0, "", "")  # only permissionDecision* and modifiedArgs
    claude = {
        "session_id": "p1",
        "cwd": str(repo.path),
        "tool_name": "Edit",
        "tool_input": {"file_path": "src/pay/a.py"},
    }
    assert "Payments keep keys" in hook(repo, claude)[1]


def test_cursor_shell_payload_without_cwd_uses_the_workspace_root(repo: Repo, tmp_path) -> None:
    payload = {
        "conversation_id": "cur",
        "hook_event_name": "beforeShellExecution",
        "command": "echo x >> .docket/ledger.jsonl",
        "workspace_roots": [str(repo.path)],
    }
    result = repo.docket("hook", "pre-tool-use", "--for", "cursor", input=json.dumps(payload), cwd=tmp_path)
    out = json.loads(result.out)
    assert out["permission"] == "ask" and "docket claim" in out["agent_message"]


# -- the decision on any text (docs/hooks.md, "The guard: what counts as a ledger write") ------------

LONG = os.environ.get("DOCKET_FUZZ_PROFILE") == "long"
DECISIONS = settings(max_examples=2000 if LONG else 200, deadline=None, derandomize=not LONG)
LEDGERS = st.sampled_from([".docket/ledger.jsonl", "./.docket/ledger.jsonl", "sub/.docket/ledgers/events.jsonl"])

#: Any argument a shell would pass as one word: arbitrary text (operator characters and `<<X` too), quoted.
ARGUMENT = st.text(max_size=60).map(shlex.quote)
ARGUMENTS = st.lists(ARGUMENT, max_size=3).map(" ".join)
#: The same, but no option: an option may change what a program does to its operands (sed -n ... -i, cp -t).
OPERANDS = st.lists(st.text(max_size=60).filter(lambda t: not t.startswith("-")).map(shlex.quote), max_size=3).map(
    " ".join
)


@st.composite
def spelled(draw: st.DrawFn, path: str) -> str:
    """path as a shell may spell it: cut into pieces, each bare, quoted ('' or "") or backslash-escaped."""
    cuts = sorted(draw(st.sets(st.integers(1, len(path) - 1), max_size=4)))
    pieces = [path[a:b] for a, b in zip([0, *cuts], [*cuts, len(path)], strict=True)]
    styles = draw(st.lists(st.sampled_from(["bare", "single", "double", "escape"]), min_size=len(pieces),
                           max_size=len(pieces)))  # fmt: skip
    quote = {"bare": str, "single": "'{}'".format, "double": '"{}"'.format, "escape": lambda p: "\\" + "\\".join(p)}
    return "".join(quote[style](piece) for style, piece in zip(styles, pieces, strict=True))


#: A ledger path, spelled as a shell may spell it (`.dock"et"/ledger.jsonl` is `.docket/ledger.jsonl`).
SPELLED_LEDGERS = LEDGERS.flatmap(spelled)


@given(st.sampled_from(["cat", "grep", "jq", "tail", "head", "wc", "echo", "python3", "rm", "mytool"]), ARGUMENTS,
       st.sampled_from([">", ">>", ">|", "&>", "&>>", "2>&1 >>"]), SPELLED_LEDGERS)  # fmt: skip
@DECISIONS
def test_any_redirection_onto_a_ledger_is_stopped(program: str, args: str, operator: str, ledger: str) -> None:
    """Whatever the program and its (quoted) arguments, a redirection onto a ledger writes it: stop."""
    command = f"{program} {args} {operator} {ledger}"
    assert command_writes_ledger(command, "/repo") is True, command
    assert ledger_write("Bash", {"command": command}, "/repo") == "the ledger named in this command"


@given(st.sampled_from(["rm -f", "tee -a", "truncate -s 0", "shred", "touch", "vim", "sed -i", "perl -pi -e p",
                        "python3 fix.py", "mytool --fix", "cp /tmp/x", "mv /tmp/x"]), OPERANDS, SPELLED_LEDGERS)  # fmt: skip
@DECISIONS
def test_a_writer_handed_a_ledger_is_stopped(writer: str, args: str, ledger: str) -> None:
    """tee, truncate, rm, editors, sed -i, cp/mv onto one, and any unknown program or script handed a ledger: stop."""
    command = f"{writer} {args} {ledger}"
    assert command_writes_ledger(command, "/repo") is True, command


@given(st.sampled_from(["cat", "grep -n", "jq -c", "tail -n 5", "head", "wc -l", "sed -n 1p", "git log -p --",
                        "git show", "git add", "docket claim"]), OPERANDS, SPELLED_LEDGERS)  # fmt: skip
@DECISIONS
def test_a_reader_handed_a_ledger_stays_silent(reader: str, args: str, ledger: str) -> None:
    """cat, grep, jq, tail, sed -n, git log/show/add and docket read (or record through docket): silent."""
    command = f"{reader} {args} {ledger}"
    assert command_writes_ledger(command, "/repo") is False, command
    assert ledger_write("Bash", {"command": command}, "/repo") is None


@given(
    st.text(max_size=80),
    LEDGERS,
    st.sampled_from([">>", ">", "; rm", "| tee -a"]),
)
@DECISIONS
def test_a_ledger_path_inside_a_quoted_argument_is_text(text: str, ledger: str, operator: str) -> None:
    """A commit message that spells out a write names no target: silent."""
    message = shlex.quote(f"{text} echo x {operator} {ledger}")
    for command in (f"git commit -m {message}", f"echo {message} > notes.txt"):
        assert command_writes_ledger(command, "/repo") is False, command


@pytest.mark.parametrize(
    ("command", "writes"),
    [
        ("rm -f ';' .docket/ledger.jsonl", True),  # a quoted ';' is a word: the rm is one command
        ("rm -f \\; .docket/ledger.jsonl", True),
        ("cat '>' .docket/ledger.jsonl", False),  # a quoted '>' is a word, not a redirection
        ('cat ">>" .docket/ledger.jsonl', False),
        ("echo '<<A\nB' >> .docket/ledger.jsonl", True),  # a quoted <<A opens no heredoc
        ("cat '<<A' x\nrm .docket/ledger.jsonl", True),
        ("cat \\<<A x\nrm .docket/ledger.jsonl", True),
        ("cat <<< A\nrm .docket/ledger.jsonl", True),  # a here-string opens no heredoc either
        ("cat <<'A;B'\nrm .docket/ledger.jsonl\nA;B\nls", False),  # any quoted delimiter: the body is data
        ("rm .docket/ledger.jsonl\necho 'oops", True),  # the lines before an unclosed quote are read as shell
    ],
)
def test_quoted_words_are_words(command: str, writes: bool) -> None:
    """Separators, redirections and heredoc markers count only outside quotes (found by the property tests)."""
    assert command_writes_ledger(command, "/repo") is writes


@pytest.mark.parametrize(
    "command",
    [
        'echo x >> .dock"et"/ledger.jsonl',
        "echo x >> '.docket'/ledger.jsonl",
        "rm .dock\\et/ledger.jsonl",
        "cd .dock''et && echo x >> ledger.js'onl'",
    ],
)
def test_a_path_split_by_quotes_is_the_path(command: str) -> None:
    assert command_writes_ledger(command, "/repo") is True
