"""Typed ledgers (log, set, map, table, counter, notes) in ``.docket/ledgers/<name>.jsonl``.

``canonical`` (the byte form), ``declare`` (``[ledgers.*]`` in config.toml),
``envelope`` (hashed records, replay order), ``ops`` (operations per type),
``replay`` (the SQLite projection, placed, proved current and queried through
``ledger.db``, the layer the ledger index shares),
``cite`` (pinned, verifiable citations), ``merge`` (union merge for git),
``staged`` (the pre-commit check) and ``api`` (what the CLI calls).
May import ``ledger`` and ``repo``.
"""
