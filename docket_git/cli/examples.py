"""One example (or a few) for every command: shown at the end of its ``--help`` and in the man page.

Kept in one table so ``tests/test_help_examples.py`` can prove each command
has one and that each still parses with the command's current options.
"""

from __future__ import annotations

EXAMPLES: dict[str, tuple[str, ...]] = {
    "claim": ('docket claim "POST /pay needs an idempotency key" --state accepted --scope src/pay/',),
    "decision": (
        'docket decision "Keep retry keys in Redis" --choice Redis --alternative Postgres '
        '--depends-on c1 --answers q2 --rationale "TTL expiry is free"',
    ),
    "question": ('docket question "Where do retry keys live?" --scope src/pay/',),
    "record": ("docket record batch.jsonl", "some-tool | docket record -"),
    "context": (
        "docket context",
        "docket context --file src/pay/api.py --query retries",
        "docket context --since d3@7f3a9c21e0b4",
    ),
    "list": ("docket list --kind decision --state adopted", "docket list --find redis --oneline"),
    "show": ("docket show d3", "docket show d3 --json"),
    "check": ("docket check", "docket check --staged"),
    "where": ("docket where",),
    "resolve": ("docket resolve d3 c7",),
    "log": ("docket log d5",),
    "rebase": ("docket rebase /tmp/other-ledger.jsonl --dry-run",),
    "doctor": ("docket doctor",),
    "install-hooks": ("docket install-hooks --agents claude,codex",),
    "init": ("docket init", "docket init --agents claude"),
    "mcp": ("docket mcp", "docket mcp --repo ~/src/shop"),
    "migrate": ("docket migrate --dry-run", "docket migrate"),
    "graph": ("docket graph --open", "docket graph --json"),
    "export": ("docket export --format mermaid --since origin/main",),
    "completion": ("source <(docket completion bash)",),
    "sql": (
        'docket sql "SELECT kind, count(*) FROM records GROUP BY kind"',
        "docket sql --schema",
    ),
    "resolve-conflict": ("docket resolve-conflict --dry-run", "docket resolve-conflict"),
    "repair": ("docket repair --dry-run", "docket repair"),
    "session init": ("docket session init --system agsy --workflow audit --project billing --steps 0,1,2",),
    "session write": (
        'docket session write --step 1 --agent planner --status completed --input "the brief" --output @plan.json',
    ),
    "session show": ("docket session show context-ledger/2026-12-01-10-00-billing.md --step 1",),
    "session read": (
        "docket session read --step-destination 2 --context-map "
        '\'[{"from_step": 1, "mode": "partial", "fields": ["plan"]}]\'',
    ),
    "session check-map": ("docket session check-map --context-map @maps.json",),
    "session load-last": ("docket session load-last --project billing",),
    "session list": ("docket session list --json",),
    "ledger types": ("docket ledger types",),
    "ledger list": ("docket ledger list",),
    "ledger append": ('docket ledger append history \'{"operation": "append", "value": "deployed v2"}\'',),
    "ledger map-put": ("docket ledger map-put repositories repo/x '{\"stars\": 3}'",),
    "ledger map-delete": ("docket ledger map-delete repositories repo/x",),
    "ledger note-add": (
        'docket ledger note-add knowledge --subject "retry policy" --note "payments retry 3 times" '
        '--reason "read in the code" --cite src/pay/retry.py:10-24',
    ),
    "ledger note-vote": ('docket ledger note-vote knowledge ldg-1 up --reason "still true at HEAD"',),
    "ledger query": ('docket ledger query metrics "SELECT name, value FROM state" --json',),
    "ledger path": ("docket ledger path metrics",),
    "ledger check": ("docket ledger check findings",),
    "ledger verify": ("docket ledger verify knowledge",),
    "ledger compact": ("docket ledger compact findings",),
}


def epilog(command: str) -> str | None:
    """The help epilog for a command path such as ``"session write"``; ``\\b`` keeps click from rewrapping."""
    lines = EXAMPLES.get(command)
    if not lines:
        return None
    title = "Example:" if len(lines) == 1 else "Examples:"
    return "\b\n" + title + "\n" + "\n".join(f"  {line}" for line in lines)
