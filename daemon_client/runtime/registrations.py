"""Registrations: the one copy-on-write structure every callback registry of the client uses.

A :class:`Registrations` holds the callbacks (or registration records) registered on one
thing: a directory observation's ``subscribe()`` callbacks, a handle's listeners, a
directory's local listeners. It is changed only under its own lock, from any thread (a
user's, the reader, the callback thread), and read without one: :attr:`Registrations.entries`
is an immutable tuple, replaced on every change, so a delivery loop iterates a consistent
snapshot while other threads add and remove.

Each registration is its own :class:`Registration` record: removing one registration of a
callback registered twice leaves the other, and a removed registration is marked inactive
under the lock, so a delivery loop that took its snapshot before the removal can skip it
(``entry.active``). No user code runs under the lock: the structure only stores values.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class Registration(Generic[T]):
    """One registration of ``value``; ``active`` turns false (under the owner's lock) when removed."""

    __slots__ = ("active", "value")

    def __init__(self, value: T) -> None:
        self.value = value
        self.active = True


class Registrations(Generic[T]):
    """A copy-on-write tuple of registrations; see the module docstring."""

    __slots__ = ("_lock", "entries")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.entries: tuple[Registration[T], ...] = ()
        """Read without a lock; replaced (never changed in place) under the lock."""

    def add(self, value: T) -> Callable[[], None]:
        """Register ``value`` now; returns what removes this registration (harmless twice)."""
        registration = Registration(value)
        self.admit(registration)
        return lambda: self.remove(registration)

    def admit(self, registration: Registration[T]) -> bool:
        """Add a registration made earlier, unless it was removed meanwhile (``False`` then).
        The check and the addition happen under one lock: a concurrent :meth:`remove` either
        comes first (nothing is added) or finds the registration to remove."""
        with self._lock:
            if not registration.active:
                return False
            self.entries = (*self.entries, registration)
            return True

    def remove(self, registration: Registration[T]) -> None:
        """Remove one registration (or mark a not yet admitted one so it never is)."""
        with self._lock:
            registration.active = False
            if registration in self.entries:  # identity: Registration keeps object equality
                self.entries = tuple(entry for entry in self.entries if entry is not registration)

    def clear(self) -> tuple[Registration[T], ...]:
        """Remove every registration; returns them (each marked inactive)."""
        with self._lock:
            entries, self.entries = self.entries, ()
            for entry in entries:
                entry.active = False
        return entries

    def values(self) -> Iterator[T]:
        """The values of the active registrations, from one snapshot (no lock)."""
        return (entry.value for entry in self.entries if entry.active)

    def __bool__(self) -> bool:
        return bool(self.entries)

    def __len__(self) -> int:
        return len(self.entries)
