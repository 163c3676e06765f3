"""Frozen, slotted attrs models built by assigning their slots: one assignable subclass per model.

A frozen attrs class refuses attribute assignment, so its generated ``__init__`` sets each slot
through ``object.__setattr__``, a call per field. The readers of the wire (the generated
per-model readers of :mod:`daemon_client.protocol.reader_codegen`, the live stream's one-step
parser of :mod:`daemon_client.protocol.stream_payload`) build many instances per second, so
they build each one as an instance of :func:`assignable`'s subclass of the model instead: it
adds no slot and no field, takes plain assignment (and ``object.__init__``, so that calling it
with no argument makes an empty instance), and the finished object becomes the model's own by
one ``__class__`` assignment, which Python allows between classes of the same layout. The
object is then an ordinary instance of the model: equal, hashed, printed, copied and pickled
like one built by ``__init__``. The model lists the subclass in ``__subclasses__()``.

Any thread may call :func:`assignable`; each model gets one subclass, made once under this
module's lock (:data:`_lock`), which guards :data:`_made` and is never held while user code runs.
"""

from __future__ import annotations

import threading
from typing import Any

import attrs

__all__ = ["assignable"]

_lock = threading.Lock()
_made: dict[type[Any], type[Any] | None] = {}
"""Each model asked for, with its subclass (``None``: the model cannot be built so)."""


def assignable(cls: type[Any]) -> type[Any] | None:
    """The subclass of the frozen, slotted attrs class ``cls`` whose instances take plain
    assignment and become ``cls`` instances by ``obj.__class__ = cls``; ``None`` when ``cls``
    has a metaclass or a subclass hook, or when Python refuses the ``__class__`` assignment
    (a layout the subclass cannot share). The same subclass on every call for one ``cls``."""
    with _lock:
        if cls in _made:
            return _made[cls]
        made = _made[cls] = _subclass(cls)
        return made


def _subclass(cls: type[Any]) -> type[Any] | None:
    if type(cls) is not type or any("__init_subclass__" in vars(klass) for klass in cls.__mro__[:-1]):
        return None
    namespace = {
        "__slots__": (),
        "__init__": object.__init__,
        "__setattr__": object.__setattr__,
        "__delattr__": object.__delattr__,
        "__module__": cls.__module__,
        "__qualname__": f"{cls.__qualname__}.<being read>",
        "__doc__": f"A {cls.__name__} while its reader sets its fields.",
    }
    subclass = type(cls.__name__, (cls,), namespace)
    probe: Any = subclass()
    try:
        for field in attrs.fields(cls):
            setattr(probe, field.name, None)
        probe.__class__ = cls
    except (TypeError, AttributeError):
        return None
    return subclass
