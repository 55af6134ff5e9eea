"""Every command: its Typer definition and, for the hot ones, the light parser beside it.

No logic beyond parsing and printing lives here. Importing this package is free:
Typer is imported only by ``cli.app`` and the modules that register commands on
it, so ``entry`` can run the hot commands through their light parsers without it.
May import every other package; nothing imports ``cli`` except ``entry``.
"""
