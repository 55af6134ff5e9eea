"""Merging ledgers: the pure merge, git's driver, the pre-commit check, the wiring.

``rebase`` is the pure merge of two ledger histories (prefix, renumbered tail,
rewritten references); ``driver`` is git's ``merge-driver %O %A %B %P``
adapter around it; ``staged`` is what ``check --staged`` (the pre-commit hook)
enforces; ``wiring`` writes the attributes, driver and git hooks ``init`` puts
into a clone.

May import ``ledger``, ``repo``, ``migrate`` and ``errors``.
"""
