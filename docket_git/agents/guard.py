"""Which agent tool calls write a ledger file directly. Pure: no I/O.

Shell commands are split by a small tokenizer that reads quotes, escapes,
operators and heredocs as a POSIX shell does: an operator character or a
``<<X`` inside quotes is part of a word, never a separator, redirection or
heredoc. The segments are walked one by one, following ``cd`` and
``NAME=value`` so ``cd .docket && echo x >> ledger.jsonl`` and
``L=.docket/ledger.jsonl; echo x >> $L`` are seen. A ledger path inside a
quoted argument (a commit message) is text, not a target. When a command
names a ledger and we cannot tell what it does with it (an unknown program, a
script, an unresolved variable), the guard errs on the side of stopping the
call: the agent is told the docket way instead.
"""

from __future__ import annotations

import posixpath
import re

#: File-writing tools: Claude's and Codex's, Gemini's (write_file, replace), Copilot's (edit, create,
#: str_replace_editor), Cursor's preToolUse (Write, StrReplace, Delete).
EDIT_TOOLS = frozenset(
    {
        "Write",
        "Edit",
        "MultiEdit",
        "NotebookEdit",
        "write_file",
        "replace",
        "edit",
        "create",
        "str_replace_editor",
        "StrReplace",
        "Delete",
    }
)
#: Tools whose input is a patch (``*** Begin Patch``): Codex's and Copilot's apply_patch.
PATCH_TOOLS = frozenset({"apply_patch"})
#: Shell tools: Claude's and Codex's Bash, Gemini's run_shell_command, Copilot's bash and powershell, Cursor's Shell.
SHELL_TOOLS = frozenset({"Bash", "run_shell_command", "shell", "bash", "powershell", "Shell"})
PATH_KEYS = ("file_path", "notebook_path", "path", "absolute_path", "target_file")
PATCH_KEYS = ("command", "input", "patch")

_PATCH_FILE = re.compile(r"^\*\*\* (?:Update File|Add File|Delete File|Move to): *(.+?) *$", re.M)
_OPERATORS = r"&>>|&>|>>|>\||>&|<>|<<<|<<-|<<|>|<|\|\||\|&|&&|;;|\||&|;|\(|\)|\n"
#: One piece of shell text, longest operator first. Quoted pieces and escapes are parts of a word.
_LEX = re.compile(
    r"(?P<space>[ \t\r]+)|(?P<cont>\\\n)|(?P<op>" + _OPERATORS + r")"
    r"|(?P<ansi>\$'(?:[^'\\]|\\.)*')|(?P<plain>(?:[^ \t\r\n'\"\\;&|<>()$]|\$(?!'))+)"
    r"|(?P<single>'[^']*')|(?P<double>\"(?:[^\"\\]|\\.)*\")|(?P<escape>\\.)",
    re.S,
)
_DOUBLE_ESCAPE = re.compile(r"\\([$`\"\\\n])")
_ANSI_ESCAPE = re.compile(r"\\(.)", re.S)
_HEREDOCS = frozenset({"<<", "<<-"})
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_VAR = re.compile(r"\$\{?(\w+)\}?")
_ASSIGN = re.compile(r"^([A-Za-z_]\w*)=(.*)$", re.S)

#: Commands that only write to their last operand (or -t DIR).
_DEST_WRITERS = frozenset({"cp", "install", "ln", "rsync"})
#: Commands that write, move or destroy every file they name.
_WRITERS = frozenset({"tee", "truncate", "rm", "mv", "shred", "unlink", "patch", "touch", "chmod", "vi", "vim", "nano"})
_WRITERS |= frozenset({"emacs", "ed", "ex"})
#: PowerShell cmdlets that write what they name (Copilot's powershell tool); compared lower-case.
_PS_WRITERS = frozenset({"set-content", "add-content", "out-file", "clear-content", "remove-item", "move-item"})
_PS_WRITERS |= frozenset({"new-item", "copy-item", "rename-item", "sc", "ac", "del", "ri", "mi"})
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_SCRIPTERS = frozenset({"python", "python3", "perl", "ruby", "node", "deno", "bun", "php", "pwsh"}) | _SHELLS
#: Programs that only read (or print) the files they name.
_READERS = frozenset(
    {
        "cat", "bat", "less", "more", "head", "tail", "grep", "egrep", "fgrep", "rg", "ag", "jq", "yq", "wc",
        "diff", "cmp", "file", "stat", "ls", "tree", "du", "sha1sum", "sha256sum", "md5sum", "shasum", "b2sum",
        "cut", "tr", "nl", "od", "xxd", "hexdump", "strings", "column", "fold", "fmt", "paste", "join", "comm",
        "echo", "printf", "test", "[", "realpath", "readlink", "basename", "dirname", "cd", "pushd", "popd",
        "true", "false", "export", "declare", "local", "readonly", "set", "unset", "for", "case", "git-docket",
        "docket", "get-content", "gc", "type", "select-string", "awk", "gawk", "sed", "sort", "uniq", "find",
        "dd", "git",
    }
)  # fmt: skip
_GIT_WRITERS = frozenset({"checkout", "restore", "rm", "mv", "apply", "am", "stash", "clean"})
_WRAPPERS = frozenset({"sudo", "command", "env", "nice", "nohup", "time", "xargs", "exec", "builtin", "timeout"})
_KEYWORDS = frozenset({"do", "then", "else", "elif", "if", "while", "until", "!", "{", "}", "done", "fi"})


def is_ledger_path(path: str, cwd: str = "") -> bool:
    """True for a JSONL ledger under a ``.docket`` directory (or the directory itself)."""
    if not path or any(c.isspace() for c in path):
        return False
    full = posixpath.normpath(posixpath.join(cwd, path)) if cwd else posixpath.normpath(path)
    parts = full.split("/")
    if ".docket" not in parts:
        return False
    name = parts[-1]
    if name == ".docket" or any(c in name for c in "*?["):
        return True  # the directory, or a glob inside it: may well match a ledger
    return name.endswith(".jsonl") or ".jsonl.schema" in name


def patch_paths(patch: str) -> list[str]:
    """The files an apply_patch envelope adds, updates, deletes or moves to, in order."""
    return list(dict.fromkeys(_PATCH_FILE.findall(patch)))


# -- shell ----------------------------------------------------------------------------------


def _unquote(kind: str, piece: str) -> str:
    """The text a quoted piece or an escape stands for."""
    if kind == "single":
        return piece[1:-1]
    if kind == "double":
        return _DOUBLE_ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), piece[1:-1])
    if kind == "ansi":
        return _ANSI_ESCAPE.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), piece[2:-1])
    return piece[1:]  # escape


def _tokens(command: str) -> tuple[list[tuple[str, bool]], str]:
    """(text, is_operator) pairs as a POSIX shell splits them, and the heredoc bodies' text (data, not shell).

    Separators, redirections and ``<<X`` count only outside quotes. A heredoc body runs from the end of
    the line that opened it to its delimiter line. From a quote that never closes (no shell would run
    the command as written), the rest is split on whitespace and judged as words.
    """
    out: list[tuple[str, bool]] = []
    bodies: list[str] = []
    pending: list[tuple[str, bool]] = []  # heredocs opened on this line: (delimiter, strip tabs)
    word: list[str] | None = None
    pos, end = 0, len(command)
    while pos < end:
        match = _LEX.match(command, pos)
        if match is None:  # an unclosed quote
            if word is not None:
                out.append(("".join(word), False))
                word = None
            out.extend((w, False) for w in command[pos:].split())
            break
        kind, piece = match.lastgroup, match.group()
        pos = match.end()
        if kind in ("plain", "single", "double", "ansi", "escape"):
            if word is None:
                word = []
            word.append(piece if kind == "plain" else _unquote(kind, piece))  # type: ignore[arg-type]
            continue
        if kind == "cont":
            continue
        if word is not None:
            text = "".join(word)
            if out and out[-1][1] and out[-1][0] in _HEREDOCS:
                pending.append((text, out[-1][0] == "<<-"))
            out.append((text, False))
            word = None
        if kind == "op":
            out.append((piece, True))
            while piece == "\n" and pending:
                delimiter, tabs = pending.pop(0)
                line = re.compile(("^\t*" if tabs else "^") + re.escape(delimiter) + r"[^\S\n]*$", re.M)
                found = line.search(command, pos)
                bodies.append(command[pos : found.start() if found else end].removesuffix("\n"))
                pos = found.end() + 1 if found else end
    if word is not None:
        out.append(("".join(word), False))
    return out, "\n".join(bodies)


class _Segment:
    """One simple command: its words and the files its redirections write."""

    def __init__(self) -> None:
        self.words: list[str] = []
        self.targets: list[str] = []
        self.heredoc = False


def _segments(tokens: list[tuple[str, bool]]) -> list[_Segment]:
    segments = [_Segment()]
    i = 0
    while i < len(tokens):
        text, is_op = tokens[i]
        current = segments[-1]
        if not is_op:
            current.words.append(text)
        elif text in _WRITE_REDIRECTS or text in ("<", "<<", "<<-", "<<<", ">&"):
            if current.words and current.words[-1].isdigit():
                current.words.pop()  # the fd of 2>x
            target = tokens[i + 1][0] if i + 1 < len(tokens) and not tokens[i + 1][1] else ""
            i += 1 if target else 0
            if text in _WRITE_REDIRECTS or (text == ">&" and target and not target.isdigit() and target != "-"):
                current.targets.append(target)
            current.heredoc |= text in ("<<", "<<-")
        else:
            segments.append(_Segment())
        i += 1
    return [s for s in segments if s.words or s.targets]


class _Walk:
    """The state a shell carries from one segment to the next: directory and variables."""

    def __init__(self, cwd: str, bodies: str, names_ledger: bool) -> None:
        self.cwd = cwd
        self.vars: dict[str, str] = {}
        self.bodies = bodies
        self.names_ledger = names_ledger

    def expand(self, word: str) -> str:
        return _VAR.sub(lambda m: self.vars.get(m.group(1), m.group(0)), word) if "$" in word else word

    def ledger(self, word: str) -> bool:
        """word names a ledger; an unresolved variable or substitution counts when the command names one."""
        if is_ledger_path(word, self.cwd):
            return True
        if "=" in word and is_ledger_path(word.split("=", 1)[1], self.cwd):
            return True  # --output=PATH, of=PATH
        return self.names_ledger and ("$" in word or "`" in word)


def _strip_wrappers(words: list[str]) -> tuple[list[str], bool]:
    via_xargs = False
    while words and (words[0] in _WRAPPERS or words[0] in _KEYWORDS or _ASSIGN.match(words[0])):
        via_xargs |= words[0] == "xargs"
        is_timeout = words[0] == "timeout"
        words = words[1:]
        while words and words[0].startswith("-") and words[0] != "--":
            words = words[1:]
        if is_timeout and words:
            words = words[1:]  # the duration
    return words, via_xargs


def _short_flag(args: list[str], letter: str) -> bool:
    return any(a.startswith("-") and not a.startswith("--") and letter in a[1:] for a in args)


def _segment_writes(segment: _Segment, walk: _Walk) -> bool:
    words = [walk.expand(w) for w in segment.words]
    if any(walk.ledger(walk.expand(t)) for t in segment.targets):
        return True
    if words and all(_ASSIGN.match(w) for w in words):
        for word in words:
            name, value = _ASSIGN.match(word).groups()  # type: ignore[union-attr]
            walk.vars[name] = value
        return False
    words, via_xargs = _strip_wrappers(words)
    if not words:
        return False
    command = posixpath.basename(words[0])
    lowered = command.lower()
    args = words[1:]
    if command in ("export", "declare", "local", "readonly"):
        for word in args:
            if _ASSIGN.match(word):
                name, value = _ASSIGN.match(word).groups()  # type: ignore[union-attr]
                walk.vars[name] = value
        return False
    if command in ("cd", "pushd"):
        target = next((a for a in args if not a.startswith("-")), "")
        if target and "$" not in target and not target.startswith("~"):
            walk.cwd = posixpath.normpath(posixpath.join(walk.cwd, target)) if walk.cwd else target
        return False
    if command == "for" and len(args) >= 3 and args[1] == "in":
        hit = next((v for v in args[2:] if is_ledger_path(v, walk.cwd)), args[2])
        walk.vars[args[0]] = hit
        return False
    if command in ("docket", "git-docket"):
        return False
    named = [a for a in args if walk.ledger(a)]
    if via_xargs and command in _WRITERS | _DEST_WRITERS | {"sed", "perl"} and walk.names_ledger:
        return True  # the ledger arrives on stdin: `ls .docket/*.jsonl | xargs rm`
    flag = next((i for i, a in enumerate(args) if a[:1] == "-" and a[:2] != "--" and "c" in a), None)
    if command in _SHELLS and flag is not None:  # bash -c, bash -lc: the program is shell too
        program = args[flag + 1] if flag + 1 < len(args) else ""
        return command_writes_ledger(program, walk.cwd)
    if command == "eval":
        return command_writes_ledger(" ".join(args), walk.cwd)
    if command in _SCRIPTERS:
        # A program naming the ledger (inline, as an argument, or on a heredoc) may write it: we cannot tell.
        inline = any(".docket" in a for a in args)
        return bool(named) or inline or (segment.heredoc and ".docket" in walk.bodies)
    if lowered in _PS_WRITERS:
        return bool(named)
    if not named:
        return False
    if command in ("sed", "perl"):
        return _short_flag(args, "i") or any(a.startswith("--in-place") for a in args)
    if command in ("awk", "gawk"):
        return ("-i" in args and "inplace" in args) or any(">" in a and ".docket" in a for a in args)
    if command in _WRITERS:
        return True
    if command in _DEST_WRITERS:
        for i, arg in enumerate(args):
            if arg in ("-t", "--target-directory") and i + 1 < len(args):
                return walk.ledger(args[i + 1])
            if arg.startswith("--target-directory="):
                return walk.ledger(arg.split("=", 1)[1])
        operands = [a for a in args if not a.startswith("-")]
        return bool(operands) and walk.ledger(operands[-1])
    if command == "dd":
        return any(a.startswith("of=") and walk.ledger(a[3:]) for a in args)
    if command == "sort":
        return any(a in ("-o", "--output") or a.startswith("--output=") for a in args) or _short_flag(args, "o")
    if command == "uniq":
        operands = [a for a in args if not a.startswith("-")]
        return len(operands) >= 2 and walk.ledger(operands[1])
    if command == "find":
        return any(a in ("-delete", "-exec", "-execdir", "-ok", "-okdir") or a.startswith("-fprint") for a in args)
    if command == "git":
        return _git_subcommand(args) in _GIT_WRITERS
    # A program we do not know, handed a ledger path: it may write it.
    return command not in _READERS and lowered not in _READERS


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
    """True when a shell command writes, moves or deletes a ledger file (or may, and names one)."""
    if ".docket" not in command:  # the cheap look first: most commands never name a ledger
        text = command.replace("'", "").replace('"', "").replace("\\", "")  # `.dock"et"` is `.docket`
        if ".docket" not in text and not ("cd" in text and ".jsonl" in text):
            return False
    if "*** Begin Patch" in command and any(is_ledger_path(p, cwd) for p in patch_paths(command)):
        return True  # `apply_patch <<'EOF'` run through the shell
    tokens, bodies = _tokens(command)
    segments = _segments(tokens)
    walk = _Walk(cwd, bodies, names_ledger=False)
    walk.names_ledger = any(walk.ledger(w) for s in segments for w in [*s.words, *s.targets])
    return any(_segment_writes(s, walk) for s in segments)


# -- tool calls --------------------------------------------------------------------------------


def _patch_text(tool_input: dict) -> str:
    for key in PATCH_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and "*** " in value:
            return value
    return ""


def edited_paths(tool_name: str, tool_input: dict) -> list[str] | None:
    """The files an edit or patch tool call writes ([] for a read-only call), or None for other tools."""
    if tool_name in PATCH_TOOLS:
        return patch_paths(_patch_text(tool_input))
    if tool_name not in EDIT_TOOLS:
        return None
    if tool_name == "str_replace_editor" and tool_input.get("command") == "view":
        return []
    for key in PATH_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return [value]
    return []


def edited_path(tool_name: str, tool_input: dict) -> str | None:
    """The first file an edit tool call writes, or None for other tools."""
    paths = edited_paths(tool_name, tool_input)
    return paths[0] if paths else None


def ledger_write(tool_name: str, tool_input: dict, cwd: str = "") -> str | None:
    """What this tool call would write by hand (a ledger path, or "the ledger named in this command"), or None."""
    paths = edited_paths(tool_name, tool_input)
    if paths is not None:
        return next((p for p in paths if is_ledger_path(p, cwd)), None)
    if tool_name in SHELL_TOOLS:
        command = tool_input.get("command")
        if isinstance(command, list):
            import shlex  # only for an argv list; most calls never need it

            command = " ".join(shlex.quote(str(c)) for c in command)
        if isinstance(command, str) and command_writes_ledger(command, cwd):
            return "the ledger named in this command"
    return None
