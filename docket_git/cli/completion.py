"""``docket completion bash|zsh|fish``: a shell completion script generated from the command tree.

The script is static: commands, options and the fixed vocabularies (kinds,
states, formats, harnesses, agents) are written into it, so a TAB press
starts no Python. Record IDs are the one live part: the script asks
``docket list --oneline --superseded`` for them when an ID is due.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

import typer

from docket_git.cli.app import app
from docket_git.cli.common import usage

SHELLS = ("bash", "zsh", "fish")
#: Options whose value is a record ID, and positional arguments shown as ID.
ID_OPTIONS = frozenset({"--supports", "--depends-on", "--answers", "--supersedes", "--at", "--since"})
FILE_OPTIONS = frozenset({"--out", "--file", "--map", "--emit-map"})
IDS_COMMAND = "docket list --oneline --superseded 2>/dev/null | cut -d' ' -f1"


@dataclass
class Command:
    """What completion needs to know about one command."""

    name: str
    help: str
    flags: list[str] = field(default_factory=list)
    valued: list[str] = field(default_factory=list)
    ids: bool = False  # positional arguments are record IDs
    files: bool = False  # positional arguments are paths


def _vocabularies() -> dict[str, tuple[str, ...]]:
    from docket_git.agents.table import AGENTS
    from docket_git.context.envelope import HARNESSES
    from docket_git.graph.export import FORMATS
    from docket_git.ledger import model

    return {
        "--kind": model.KINDS,
        "--state": model.ALL_STATES,
        "--format": FORMATS,
        "-f": FORMATS,
        "--for": tuple(HARNESSES),
        "--agents": tuple(AGENTS),
    }


def commands() -> list[Command]:
    """The visible commands of the Typer app, with their options, in registration order."""
    import typer.main

    # Typer may vendor its own copy of click: only the command objects' attributes are relied on.
    group = typer.main.get_command(app)
    out: list[Command] = []
    for name, cmd in group.commands.items():  # type: ignore[attr-defined]
        if cmd.hidden:
            continue
        summary = (cmd.help or "").strip().splitlines()[0] if cmd.help else ""
        entry = Command(name, summary.rstrip("."))
        for param in cmd.params:
            if param.param_type_name == "option":
                names = [*param.opts, *param.secondary_opts]
                (entry.flags if param.is_flag else entry.valued).extend(names)
            elif (param.metavar or "").upper() == "ID":
                entry.ids = True
            elif param.name in ("file", "other"):
                entry.files = True
        entry.flags.append("--help")
        out.append(entry)
    return out


def _words(values: list[str] | tuple[str, ...]) -> str:
    return " ".join(values)


def bash() -> str:
    """A bash completion function for docket (also used by zsh's bashcompinit, if one prefers)."""
    cmds = commands()
    vocab = _vocabularies()
    lines = [
        "# docket completion for bash. Load it with:  source <(docket completion bash)",
        "_docket_ids() { " + IDS_COMMAND + "; }",
        "_docket() {",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" cmd="" i',
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        case "${COMP_WORDS[i]}" in -*) ;; *) cmd="${COMP_WORDS[i]}"; break ;; esac',
        "    done",
        '    case "$prev" in',
    ]
    for option, values in vocab.items():
        lines.append(f'        {option}) COMPREPLY=($(compgen -W "{_words(values)}" -- "$cur")); return ;;')
    lines.append(
        f'        {"|".join(sorted(ID_OPTIONS))}) COMPREPLY=($(compgen -W "$(_docket_ids)" -- "$cur")); return ;;'
    )
    lines.append(f'        {"|".join(sorted(FILE_OPTIONS))}) COMPREPLY=($(compgen -f -- "$cur")); return ;;')
    valued = sorted({o for c in cmds for o in c.valued} - set(vocab) - ID_OPTIONS - FILE_OPTIONS)
    lines.append(f"        {'|'.join(valued)}) return ;;")
    lines += [
        "    esac",
        '    if [[ -z "$cmd" ]]; then',
        f'        COMPREPLY=($(compgen -W "{_words([c.name for c in cmds])} --help --version" -- "$cur"))',
        "        return",
        "    fi",
        '    local opts="" kind=""',
        '    case "$cmd" in',
    ]
    for c in cmds:
        kind = "ids" if c.ids else "files" if c.files else ""
        lines.append(f'        {c.name}) opts="{_words(c.flags + c.valued)}"; kind="{kind}" ;;')
    lines += [
        "    esac",
        '    if [[ "$cur" == -* ]]; then',
        '        COMPREPLY=($(compgen -W "$opts" -- "$cur"))',
        '    elif [[ "$kind" == ids ]]; then',
        '        COMPREPLY=($(compgen -W "$(_docket_ids)" -- "$cur"))',
        '    elif [[ "$kind" == files ]]; then',
        '        COMPREPLY=($(compgen -f -- "$cur"))',
        "    fi",
        "}",
        "complete -F _docket docket",
        "",
    ]
    return "\n".join(lines)


def _zsh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def zsh() -> str:
    """A zsh completion function for docket (after compinit)."""
    cmds = commands()
    vocab = _vocabularies()
    lines = [
        "#compdef docket",
        "# docket completion for zsh. Load it after compinit with:  source <(docket completion zsh)",
        "_docket() {",
        "    local -a cmds opts",
        "    local cmd kind",
        "    if (( CURRENT == 2 )); then",
        "        cmds=(",
    ]
    for c in cmds:
        lines.append(f"            {_zsh_quote(c.name + ':' + c.help.replace(':', ' '))}")
    lines += [
        "        )",
        "        _describe 'command' cmds",
        "        return",
        "    fi",
        "    cmd=${words[2]}",
        "    case ${words[CURRENT-1]} in",
    ]
    for option, values in vocab.items():
        lines.append(f"        {option}) compadd -- {_words(values)}; return ;;")
    lines.append(f'        {"|".join(sorted(ID_OPTIONS))}) compadd -- ${{(f)"$({IDS_COMMAND})"}}; return ;;')
    lines.append(f"        {'|'.join(sorted(FILE_OPTIONS))}) _files; return ;;")
    lines += ["    esac", "    case $cmd in"]
    for c in cmds:
        kind = "ids" if c.ids else "files" if c.files else ""
        lines.append(f"        {c.name}) opts=({_words(c.flags + c.valued)}); kind={kind or '_'} ;;")
    lines += [
        "    esac",
        "    if [[ ${words[CURRENT]} == -* ]]; then",
        "        compadd -- $opts",
        "    elif [[ $kind == ids ]]; then",
        f'        compadd -- ${{(f)"$({IDS_COMMAND})"}}',
        "    elif [[ $kind == files ]]; then",
        "        _files",
        "    fi",
        "}",
        "compdef _docket docket",
        "",
    ]
    return "\n".join(lines)


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish() -> str:
    """fish completions for docket."""
    cmds = commands()
    vocab = _vocabularies()
    ids = "(" + IDS_COMMAND.replace("2>/dev/null | cut -d' ' -f1", "2>/dev/null | string split -f1 ' '") + ")"
    names = _words([c.name for c in cmds])
    lines = [
        "# docket completion for fish. Load it with:  docket completion fish | source",
        "complete -c docket -f",
    ]
    for c in cmds:
        lines.append(
            f"complete -c docket -n 'not __fish_seen_subcommand_from {names}' -a {c.name} -d {_fish_quote(c.help)}"
        )
    for c in cmds:
        seen = f"-n '__fish_seen_subcommand_from {c.name}'"
        for option in c.flags + c.valued:
            if option == "--help":
                continue
            flag = f"-l {option[2:]}" if option.startswith("--") else f"-s {option[1:]}"
            if option in vocab:
                lines.append(f"complete -c docket {seen} {flag} -xa {_fish_quote(_words(vocab[option]))}")
            elif option in ID_OPTIONS:
                lines.append(f"complete -c docket {seen} {flag} -xa {_fish_quote(ids)}")
            elif option in FILE_OPTIONS:
                lines.append(f"complete -c docket {seen} {flag} -rF")
            elif option in c.valued:
                lines.append(f"complete -c docket {seen} {flag} -x")
            else:
                lines.append(f"complete -c docket {seen} {flag}")
        if c.ids:
            lines.append(f"complete -c docket {seen} -a {_fish_quote(ids)}")
        elif c.files:
            lines.append(f"complete -c docket {seen} -F")
    return "\n".join(lines) + "\n"


@app.command("completion", rich_help_panel="Maintain")
def completion(
    shell: Annotated[str, typer.Argument(metavar="SHELL", help="bash, zsh or fish.")],
) -> None:
    """Print a shell completion script: source <(docket completion bash)."""
    if shell not in SHELLS:
        usage(f"completion: SHELL must be one of {', '.join(SHELLS)}; got {shell!r}")
    text = {"bash": bash, "zsh": zsh, "fish": fish}[shell]()
    typer.echo(text, nl=False)
