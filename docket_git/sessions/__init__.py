"""Session step logs (the context-ledger workflow): not built yet.

Will hold init, write, read with context maps and load-last. May import
``ledger``, ``repo`` and ``errors``.
"""
