"""Value classes for the start-up path, without the dataclasses module.

Every session hook, guard and briefing imports a dozen small record-like
classes. As dataclasses they cost ~15 ms of each start: ``dataclasses``
imports ``inspect`` (with ``ast``, ``dis`` and ``tokenize``), and each
decorated class compiles its generated methods at import. A class here
declares ``__slots__`` and an explicit ``__init__``; ``Plain`` adds what the
dataclasses gave them: equality, a repr, and ``replace``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself costs ~3 ms of every start
if TYPE_CHECKING:
    from typing import Any, Self


class Plain:
    """Equality, repr, hashing and ``replace`` over a subclass's ``__slots__``."""

    __slots__ = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"

    def replace(self, **changes: Any) -> Self:
        """A copy with the given fields changed (``dataclasses.replace``)."""
        unknown = changes.keys() - set(self.__slots__)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {sorted(unknown)[0]!r}")
        new = object.__new__(type(self))
        for name in self.__slots__:
            object.__setattr__(new, name, changes[name] if name in changes else getattr(self, name))
        return new
