"""docket-git: a git-native ledger of claims, decisions and questions."""

__version__ = "0.1.0"
#: What ``docket --version`` prints: ``docket `` first, as Docket prints it (scripts and hooks read the first word).
VERSION_LINE = f"docket {__version__} (docket-git)"
