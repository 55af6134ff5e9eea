"""Schema 1 -> 2 migration: detection, the classification map, conversion, the file swap.

May import ``ledger``, ``repo`` and ``errors``.
"""
