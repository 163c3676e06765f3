"""Plain value classes for the client's internal records, without attrs.

An attrs class costs close to a millisecond to create (attrs compiles its methods), which the
import of the package pays once per class. The client's internal records (connect parameters,
handshake answers, resolver steps, reply matchers ...) are slotted classes with a hand-written
``__init__`` instead. A record declares its fields as annotations, in order, as an attrs class
does, and lists the same names in ``__slots__``; these mixins add what can be read from them,
without generating code and without touching construction:

* :class:`Record`: the attrs-style repr, ``ClassName(field=value, ...)`` in declaration order,
  leaving out the fields named in ``_unshown`` (credentials, as ``attrs.field(repr=False)``);
* :class:`Value`: also attrs equality (same class, all fields equal) and a hash of the fields;
* :class:`FrozenValue`: also refuses attribute assignment once built (its ``__init__`` sets the
  fields with ``object.__setattr__``), raising ``attrs.exceptions.FrozenInstanceError`` as a
  frozen attrs class does, and is copied and pickled through its ``__init__`` (which must take
  the fields in declaration order). For records that leave the client's own code; not for hot
  paths.

A record derives from one of these mixins only (not from another record). Defining one whose
annotations and ``__slots__`` differ raises ``TypeError``. Pure code; any thread.
"""

from __future__ import annotations

from typing import Any, ClassVar

from attrs.exceptions import FrozenInstanceError


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


class Value(Record):
    """Mixin: :class:`Record` with attrs equality and a hash of the fields."""

    __slots__ = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._field_names)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Value)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash((self.__class__, *self._values()))


class FrozenValue(Value):
    """Mixin: an immutable :class:`Value`; ``__init__`` sets the fields with ``object.__setattr__``."""

    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError

    def __reduce__(self) -> tuple[type[FrozenValue], tuple[object, ...]]:
        """Copied and pickled through ``__init__``, which takes the fields in declaration order
        (the default would set the slots one by one, which a frozen record refuses)."""
        return self.__class__, self._values()

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError
