"""docket-git: a git-native ledger of claims, decisions and questions."""

__version__ = "0.1.0"
