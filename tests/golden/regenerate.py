"""Rewrite the golden briefings in tests/golden/context/ from tests/golden/cases.py.

Run from the repository root after an intended change to the briefing, then
review the diff:  python -m tests.golden.regenerate
"""

from __future__ import annotations

from pathlib import Path

from .cases import CASES

OUT = Path(__file__).resolve().parent / "context"


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for stale in OUT.glob("*.txt"):
        if stale.stem not in CASES:
            stale.unlink()
    for name, make in CASES.items():
        (OUT / f"{name}.txt").write_text(make(), encoding="utf-8")
    print(f"wrote {len(CASES)} golden briefings to {OUT}")


if __name__ == "__main__":
    main()
