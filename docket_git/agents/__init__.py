"""Coding agents: the supported agents, their hooks, the edit guard, per-session state.

``table`` lists each agent's hook events and writes its settings files;
``hooks`` runs ``docket hook session-start`` and ``docket hook pre-tool-use``;
``guard`` decides (purely) which tool calls write a ledger by hand; ``state``
remembers per session what an agent was already told.

May import ``context``, ``history``, ``merging``, ``ledger``, ``repo`` and
``errors``.
"""
