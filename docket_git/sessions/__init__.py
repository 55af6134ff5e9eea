"""Session step logs (the context-ledger workflow): init, write, read with context maps, load-last.

``fmt`` is the file format (frontmatter, blocks, delta re-audits, replay) and
``contextmap`` composes and pre-flights context maps, both pure; ``files``
does the I/O (locked, atomic, no symlinks) and ``check`` is what
``docket check`` runs on ``context-ledger/``. May import ``ledger`` and ``repo``.
"""
