"""Typed ledgers (log, set, map, table, counter, notes) in ``.docket/ledgers/<name>.jsonl``.

``canonical`` (the byte form), ``declare`` (``[ledgers.*]`` in config.toml),
``envelope`` (hashed records, replay order), ``ops`` (operations per type),
``replay`` (the SQLite projection), ``db`` (open, prove current, rebuild and
query a disposable SQLite projection: the layer the core index can share),
``cite`` (pinned, verifiable citations), ``merge`` (union merge for git),
``staged`` (the pre-commit check) and ``api`` (what the CLI calls).
May import ``ledger`` and ``repo``.
"""
