"""The repository on disk: git access (``gitio``, pygit2 imported only when needed).

The lowest layer beside ``errors``: it imports nothing else from docket_git.
"""
