"""What commit history knows: renumberings, old IDs, baselines for ``--since``.

``renumbering`` walks the commits that changed the ledger and recovers which
IDs a merge renumbered (``docket resolve``, ``docket log``, ``show --at``) and
the baselines a briefing's ``--since ID@DIGEST`` names.

May import ``ledger``, ``merging`` (the pure merge's matching), ``repo`` and
``errors``.
"""
