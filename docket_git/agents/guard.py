"""Which agent tool calls write a ledger file directly. Pure: no I/O.

Docket's guard asked on any ``>`` in a command naming the ledger and on any
unlisted reader; this one parses each command segment and asks only when the
ledger is a write target, so reading the ledger never interrupts an agent.
"""

from __future__ import annotations

import posixpath
import re
import shlex

#: File-writing tools: Claude's and Codex's, Gemini's (write_file, replace), Copilot's (edit, create).
EDIT_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "write_file", "replace", "edit", "create"})
#: Shell tools: Claude's and Codex's Bash, Gemini's run_shell_command, Copilot's bash and powershell.
SHELL_TOOLS = frozenset({"Bash", "run_shell_command", "shell", "bash", "powershell"})
PATH_KEYS = ("file_path", "notebook_path", "path", "absolute_path")

_LEDGER_WORD = re.compile(r"(?:^|[\s'\"=:(/])(?:[^\s'\";|&<>()]*/)?\.docket(?:/[^\s'\";|&<>()]*)?")
_SEGMENT_SPLIT = re.compile(r"\|\||&&|[;|&\n]")
_REDIRECT = re.compile(r"(?:\d|&)?>>?\|?\s*(['\"]?)([^\s'\";|&<>]+)\1")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1.*?\n\2\s*$", re.S | re.M)

#: Commands that only write to their arguments' last operand.
_DEST_WRITERS = frozenset({"cp", "install", "ln", "rsync"})
#: Commands that write, move or destroy every file they name.
_WRITERS = frozenset({"tee", "truncate", "rm", "mv", "shred", "unlink", "patch"})
_SCRIPTERS = frozenset(
    {"python", "python3", "perl", "ruby", "node", "deno", "bun", "php", "awk", "gawk", "bash", "sh", "zsh"}
)
_GIT_WRITERS = frozenset({"checkout", "restore", "rm", "mv", "apply", "am", "stash", "clean"})
_WRAPPERS = frozenset({"sudo", "command", "env", "nice", "nohup", "time", "xargs", "exec", "builtin"})


def is_ledger_path(path: str, cwd: str = "") -> bool:
    """True for a JSONL ledger under a ``.docket`` directory (or the directory itself)."""
    if not path:
        return False
    full = posixpath.normpath(posixpath.join(cwd, path)) if cwd else posixpath.normpath(path)
    parts = full.split("/")
    if ".docket" not in parts:
        return False
    if parts[-1] == ".docket":
        return True
    name = parts[-1]
    return name.endswith(".jsonl") or ".jsonl.schema" in name


def _words(segment: str) -> list[str]:
    try:
        return shlex.split(segment, comments=False, posix=True)
    except ValueError:
        return segment.split()


def _strip_wrappers(words: list[str]) -> list[str]:
    while words and (words[0] in _WRAPPERS or re.match(r"^\w+=", words[0])):
        words = words[1:]
        while words and words[0].startswith("-") and words[0] != "--":
            words = words[1:]
    return words


def _names_ledger(word: str, cwd: str) -> bool:
    # Also the --flag=PATH and of=PATH forms.
    return is_ledger_path(word, cwd) or ("=" in word and is_ledger_path(word.split("=", 1)[1], cwd))


def _segment_writes(segment: str, cwd: str) -> bool:
    for _, target in _REDIRECT.findall(segment):
        if is_ledger_path(target, cwd):
            return True
    words = _strip_wrappers(_words(_REDIRECT.sub(" ", segment)))
    if not words:
        return False
    command = posixpath.basename(words[0])
    args = words[1:]
    named = [a for a in args if _names_ledger(a, cwd)]
    if command in ("docket", "git-docket"):
        return False
    if command in _SCRIPTERS:
        # An inline program that names the ledger may write it; we cannot tell.
        return any(a in ("-c", "-e", "-i", "--eval") or a.startswith("-i") for a in args) and (
            bool(named) or ".docket" in segment
        )
    if not named:
        return False
    if command in ("sed", "perl", "gawk"):
        return any(a.startswith("-i") or a.startswith("--in-place") for a in args)
    if command in _WRITERS:
        return True
    if command in _DEST_WRITERS:
        operands = [a for a in args if not a.startswith("-")]
        return bool(operands) and _names_ledger(operands[-1], cwd)
    if command == "dd":
        return any(a.startswith("of=") and is_ledger_path(a[3:], cwd) for a in args)
    if command == "sort":
        return any(a in ("-o", "--output") or a.startswith(("-o", "--output=")) or re.match(r"^-\w*o", a) for a in args)
    if command == "uniq":
        operands = [a for a in args if not a.startswith("-")]
        return len(operands) >= 2 and _names_ledger(operands[1], cwd)
    if command == "find":
        return any(a in ("-delete", "-exec", "-execdir", "-ok", "-okdir") or a.startswith("-fprint") for a in args)
    if command == "git":
        sub = _git_subcommand(args)
        return sub in _GIT_WRITERS
    return False


def _git_subcommand(args: list[str]) -> str:
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg in ("-C", "-c", "--git-dir", "--work-tree", "--namespace"):
            skip = True
            continue
        if arg.startswith("-"):
            continue
        return arg
    return ""


def command_writes_ledger(command: str, cwd: str = "") -> bool:
    """True when a shell command writes, moves or deletes a ledger file."""
    if ".docket" not in command:
        return False
    text = _HEREDOC.sub("", command) if "<<" in command else command
    if ".docket" not in text:
        return False
    return any(_segment_writes(seg, cwd) for seg in _SEGMENT_SPLIT.split(text) if seg.strip())


def edited_path(tool_name: str, tool_input: dict) -> str | None:
    """The file an edit tool call writes, or None for other tools."""
    if tool_name not in EDIT_TOOLS:
        return None
    for key in PATH_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return value
    return None


ASK_REASON = (
    "This writes {target} directly. The ledger is append-only and validated on every read, "
    "so an edit made around docket can break every command (and the next session's briefing). "
    "Record with `docket claim`, `docket decision` or `docket question`; join another branch's "
    "ledger with `docket rebase OTHER`; find faults with `docket check`. "
    "Approve only if you mean to edit the file itself."
)


def ask_reason(tool_name: str, tool_input: dict, cwd: str = "") -> str | None:
    """The reason to ask before this tool call, or None when it leaves ledgers alone."""
    path = edited_path(tool_name, tool_input)
    if path is not None:
        return ASK_REASON.format(target=path) if is_ledger_path(path, cwd) else None
    if tool_name in SHELL_TOOLS:
        command = tool_input.get("command")
        if isinstance(command, list):
            command = " ".join(str(c) for c in command)
        if isinstance(command, str) and command_writes_ledger(command, cwd):
            return ASK_REASON.format(target="the ledger named in this command")
    return None
