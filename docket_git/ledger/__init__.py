"""The ledger core: what a record is, how it is written down and read back.

Vocabulary (``model``: kinds, states, fields, the ID grammar), canonical JSON and
digests (``canonical``), schema-2 validation with Docket's messages
(``validate``), the file store: find, lock, append, read (``store``), derived
state: retired, resolved, applicable (``project``), and building new records
(``recording``).

Imports nothing from docket_git but ``errors`` and ``repo``; every other package
may import it.
"""
