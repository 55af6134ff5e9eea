"""Check, and on request rewrite, the golden briefings in tests/golden/context/ (cases in cases.py).

A golden is the code's own output, so rewriting it proves nothing by itself. Each golden therefore
has a hand-written statement in statements.toml of what it must show (which records, in which tier,
why), reasoned from docs/context.md, and the test checks both the bytes and the statement.

Workflow, from the repository root:

    python -m tests.golden.regenerate
        Check only: lists each golden whose output changed and whether the new output still keeps
        its statement. Writes nothing; exits 1 when anything changed.

    python -m tests.golden.regenerate NAME [NAME ...]
        Rewrite the named goldens. Refused (nothing written) when a named golden's new output
        breaks its statement, or when its statement is the same as in HEAD: a changed briefing
        means a person first edits statements.toml to say what the briefing must now show and why.

    python -m tests.golden.regenerate NAME [NAME ...] --statement-holds
        The same, for a change that leaves what the briefing shows as it was (a wording or layout
        change): you say the statement, unchanged, still holds, and it is checked.

    python -m tests.golden.regenerate --prune
        Remove golden files whose case is gone from cases.py.

A new case needs a statement before its golden can be written. Review `git diff tests/golden/`
before committing.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from .cases import CASES
from .statements import PATH, broken, load

OUT = Path(__file__).resolve().parent / "context"


def committed_statements() -> dict[str, dict]:
    """statements.toml as HEAD has it ({} when HEAD has none)."""
    rel = PATH.relative_to(PATH.parents[2]).as_posix()
    done = subprocess.run(
        ["git", "show", f"HEAD:{rel}"], cwd=PATH.parents[2], capture_output=True, text=True, check=False
    )
    return tomllib.loads(done.stdout) if done.returncode == 0 else {}


def _changed(goldens: Path) -> dict[str, str]:
    """name -> new output, for each case whose golden file is missing or differs."""
    out = {}
    for name, make in CASES.items():
        path = goldens / f"{name}.txt"
        text = make()
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            out[name] = text
    return out


def main(
    argv: list[str],
    *,
    goldens: Path = OUT,
    statements: dict[str, dict] | None = None,
    committed: dict[str, dict] | None = None,
) -> int:
    """The command line above; the keywords let a test point it at copies (defaults: the real files, HEAD)."""
    statements = load() if statements is None else statements
    flags = {a for a in argv if a.startswith("--")}
    names = [a for a in argv if not a.startswith("--")]
    unknown_flags = flags - {"--statement-holds", "--prune"}
    if unknown_flags:
        print(f"regenerate: unknown option {sorted(unknown_flags)[0]}; see the top of {__file__}", file=sys.stderr)
        return 2
    unknown = [n for n in names if n not in CASES]
    if unknown:
        print(f"regenerate: no case named {unknown[0]} in tests/golden/cases.py", file=sys.stderr)
        return 2
    missing = sorted(set(CASES) - set(statements))
    if missing:
        print(f"regenerate: {missing[0]} has no statement: add [{missing[0]}] to {PATH.name}", file=sys.stderr)
        return 1
    if "--prune" in flags:
        for stale in goldens.glob("*.txt"):
            if stale.stem not in CASES:
                stale.unlink()
                print(f"removed {stale.name}")
    changed = _changed(goldens)
    if not names:
        for name, text in changed.items():
            problems = broken(statements[name], text)
            verdict = "keeps its statement" if not problems else "BREAKS its statement: " + "; ".join(problems)
            print(f"{name}: output changed; it {verdict}")
        if changed:
            print("rewrite a golden by naming it, after its statement says what it must now show")
        return 1 if changed else 0
    committed = committed_statements() if committed is None else committed
    refusals = []
    for name in names:
        if name not in changed:
            continue
        problems = broken(statements[name], changed[name])
        if problems:
            refusals.append(f"{name}: the new output breaks its statement: " + "; ".join(problems))
        elif committed.get(name) == statements[name] and "--statement-holds" not in flags:
            refusals.append(
                f"{name}: its statement is unchanged since HEAD; edit it in {PATH.name} to say what the "
                "briefing must now show, or pass --statement-holds if it still says exactly that"
            )
    if refusals:
        for line in refusals:
            print(f"regenerate: {line}", file=sys.stderr)
        print("regenerate: nothing written", file=sys.stderr)
        return 1
    for name in names:
        if name in changed:
            (goldens / f"{name}.txt").write_text(changed[name], encoding="utf-8")
            print(f"wrote {name}.txt")
        else:
            print(f"{name}.txt unchanged")
    left = sorted(set(changed) - set(names))
    if left:
        print(f"still changed, not named: {', '.join(left)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
