"""Drawing the ledger for people: the graph projection, exports, and the HTML page.

``projection`` turns validated records into the version-2 graph payload
(``{"version": 2, "entries": [...]}``) the seed names: each projected record
plus the legacy renderer keys ``question``, ``answer``, ``cost``, ``sets`` and
the de-duplicated ``supports`` union, and the edge list every drawing shares.
``export`` writes that graph as JSON, JSONL, CSV, Mermaid and Graphviz DOT;
``page`` fills the self-contained HTML viewer (``page.html``, package data).

Pure functions over lists of dicts; the CLI (``cli/graph.py``) does the I/O.
Imports only ``ledger``.
"""
