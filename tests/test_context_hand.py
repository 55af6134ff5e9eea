"""Briefings checked against expectations worked out by hand from the seed's rules, not from the code.

Scores follow docs/context.md and the seed: ``score = scope + text + recency + degree + pinned``;
recency is ``200 * position // (records - 1)``; degree is 50 per record pointing at this one
(supports, depends_on, answers, resolved_by); an exact path scope is 1000, a glob 700, a directory
500. Order is score descending. An index line's text is clipped to
``40 + score * (140 - 40) // top_score`` characters. Every expected briefing below is written out
in full, so a change in any line the renderer prints, or in any score, fails here.
"""

from __future__ import annotations

import hashlib

from docket_git.ledger import canonical

from .conftest import rec
from .ctx import brief

LEGEND = (
    "# Context: decisions are commitments, claims are premises, questions are inquiries; "
    "states are not truth and authors are recorders."
)
PROVENANCE = "provenance: author=tester, ts=2026-01-01T00:00:00+00:00, session=, branch="
TAIL = "# Declared grounds; evidence not freshly verified.\n# Retrieve full record: docket show RECORD_ID --json\n"


def first_line(records: list[dict]) -> str:
    """The header's first line: the revision is the SHA-256 of the ledger's bytes (12 hex)."""
    rev = hashlib.sha256(b"".join(canonical.line(r) for r in records)).hexdigest()[:12]
    return f"# docket: repo | revision: {rev} | latest: {records[-1]['id']}@{rev}\n"


def test_unscoped_briefing_with_relations_by_hand() -> None:
    records = [
        rec("c1", "Payments need idempotency keys", state="accepted", scope=["src/pay.py"]),
        rec("q2", "Where do the keys live?"),
        rec(
            "d3", "Keep the keys in Redis", choice="Redis", alternatives=["Postgres"], supports=[["c1"]], answers=["q2"]
        ),
    ]
    # 3 records, so recency = 200 * position // 2: c1 0, q2 100, d3 200.
    # Degree, 50 per record pointing here: c1 <- d3 (supports); q2 <- d3 (answers); d3 <- q2 (resolved_by,
    # since the applicable adopted d3 answers q2, which is therefore resolved).
    # Totals: d3 250, q2 150, c1 50. Everything fits the 8000 target: three blocks, no index.
    expected = (
        first_line(records)
        + LEGEND
        + "\n# selection: scored by recency and relations; no task scope given\n"
        + "\n### d3 | decision | adopted [selected]\nrole: commitment\ntext: Keep the keys in Redis\n"
        + 'choice: Redis\nalternatives: ["Postgres"]\napplicable: true\nsupports: [["c1"]]\nanswers: ["q2"]\n'
        + f"{PROVENANCE}\nselection: score 250 | recency=200, degree=50\n"
        + "\n### q2 | question | resolved [selected]\nrole: inquiry\ntext: Where do the keys live?\n"
        + f"recorded state: open\n{PROVENANCE}\n"
        + "warning: effective state is resolved; treat this record as unavailable current support.\n"
        + 'resolved by: ["d3"]\nselection: score 150 | recency=100, degree=50\n'
        + "\n### c1 | claim | accepted [selected]\nrole: premise\ntext: Payments need idempotency keys\n"
        + f'scope: ["src/pay.py"]\n{PROVENANCE}\nselection: score 50 | degree=50\n'
        + "\n# full text: 3; index: 0; retired: 0.\n"
        + "# Coverage: every current record in full text. Selected ledger data only.\n"
        + TAIL
    )
    assert brief(records) == expected


def test_task_briefing_scope_strengths_and_a_clipped_index_line_by_hand() -> None:
    docs = "Docs are built with mkdocs and published from the main branch every night"
    records = [
        rec("c1", "Retries use exponential backoff", state="accepted", scope=["src/net/"]),
        rec("c2", "Client timeouts are 30 seconds", state="accepted", scope=["src/net/client.py"]),
        rec("c3", "Modules log to stderr", state="accepted", scope=["src/**"]),
        rec("c4", docs, scope=["docs/"]),
    ]
    # --file src/net/client.py. 4 records: recency = 200 * position // 3: 0, 66, 133, 200.
    # c2 exact 1000 + 66 = 1066; c3 glob 700 + 133 = 833; c1 directory 500 + 0 = 500; c4 no match, 200.
    # The three matches are in full, best first; c4 goes to the index, its text clipped to
    # 40 + 200 * 100 // 1066 = 58 characters: "Docs are built with mkdocs and published from the main bra".
    assert len("Docs are built with mkdocs and published from the main bra") == 58
    expected = (
        first_line(records)
        + LEGEND
        + "\n# files: src/net/client.py\n# selection: scored by task scope and query, with related records\n"
        + "\n### c2 | claim | accepted [selected]\nrole: premise\ntext: Client timeouts are 30 seconds\n"
        + f'scope: ["src/net/client.py"]\n{PROVENANCE}\nselection: score 1066 | scope=1000, recency=66\n'
        + "\n### c3 | claim | accepted [selected]\nrole: premise\ntext: Modules log to stderr\n"
        + f'scope: ["src/**"]\n{PROVENANCE}\nselection: score 833 | scope=700, recency=133\n'
        + "\n### c1 | claim | accepted [selected]\nrole: premise\ntext: Retries use exponential backoff\n"
        + f'scope: ["src/net/"]\n{PROVENANCE}\nselection: score 500 | scope=500\n'
        + "\n# index: 1 more current records\n"
        + "c4 claim unassessed  Docs are built with mkdocs and published from the main bra...\n"
        + "\n# full text: 3; index: 1; retired: 0.\n"
        + "# Coverage: task matches and their prerequisites covered. Selected ledger data only.\n"
        + TAIL
    )
    assert brief(records, files=["src/net/client.py"]) == expected


def test_tight_ceiling_keeps_the_top_record_in_full_by_hand() -> None:
    records = [rec(f"c{i}", f"Claim number {i}", state="accepted") for i in range(1, 5)]
    # Unscoped, 4 records: recency 0, 66, 133, 200, so c4 ranks first, then c3, c2, c1.
    # The ceiling is exactly this briefing's length: c4 in full, the rest named by bare ID. Index
    # lines (longer than names) or a second block (longer than the names it would save) cannot fit.
    expected = (
        first_line(records)
        + LEGEND
        + "\n# selection: scored by recency and relations; no task scope given\n"
        + "\n### c4 | claim | accepted [selected]\nrole: premise\ntext: Claim number 4\n"
        + f"{PROVENANCE}\nselection: score 200 | recency=200\n"
        + "\n# index: c3, c2, c1\n"
        + "\n# full text: 1; index: 3; retired: 0.\n"
        + "# Coverage: partial, 3 in the index only. Selected ledger data only.\n"
        + TAIL
    )
    assert brief(records, max_chars=len(expected)) == expected
