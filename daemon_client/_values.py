"""Plain slotted classes for the client's internal records, without attrs.

An attrs class costs close to a millisecond to create (attrs compiles its methods), which the
import of the package pays once per class. The client's internal records (handshake limits,
targets and answers, credential plans, ``server_info`` readings, reply matchers, handshake
failures, link hooks, connection options, upgrade results) are slotted classes with a
hand-written ``__init__`` instead; nothing compares, hashes or copies them by value, and nothing
changes them once built. A record declares its fields as annotations, in order, as an attrs
class does, and lists the same names in ``__slots__``; :class:`Record` adds the attrs-style repr,
``ClassName(field=value, ...)`` in declaration order, leaving out the fields named in
``_unshown`` (credentials, as ``attrs.field(repr=False)``), without generating code and without
touching construction. Defining a record whose annotations and ``__slots__`` differ raises
``TypeError``. Public models and values (and ``ConnectParams``, which custom transports get)
stay attrs classes. Pure code; any thread.
"""

from __future__ import annotations

from typing import Any, ClassVar


class Record:
    """Mixin: the attrs-style ``__repr__`` of a slotted class (see the module docstring)."""

    __slots__ = ()
    _unshown: ClassVar[frozenset[str]] = frozenset()
    """Fields left out of the repr (as ``attrs.field(repr=False)``)."""
    _field_names: ClassVar[tuple[str, ...]] = ()
    """The fields, in declaration order (set when the class is created)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        slots = cls.__dict__.get("__slots__", ())
        names = tuple(cls.__annotations__)
        if sorted(names) != sorted(slots):
            raise TypeError(f"{cls.__qualname__}: the annotated fields {names} are not the __slots__ {slots}")
        cls._field_names = names

    def __repr__(self) -> str:
        cls = type(self)
        hidden = cls._unshown
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in cls._field_names if name not in hidden)
        return f"{cls.__qualname__}({shown})"
