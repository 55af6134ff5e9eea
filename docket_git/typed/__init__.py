"""Typed ledgers (log, set, map, table, counter, notes): not built yet.

Will hold the envelope and hash, the operations per type, replay and the SQLite
projection. May import ``ledger``, ``repo`` and ``errors``.
"""
