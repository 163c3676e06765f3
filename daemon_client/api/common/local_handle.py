"""``LocalHandle``: the shared part of agent and workspace handles.

A handle mirrors the last snapshot this client saw of one item and fans the item's
updates out to its own listeners. Its state is changed on the callback thread (from
updates routed to live observations) or by the caller's thread in ``refresh()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from daemon_client.runtime.registrations import Registrations

T = TypeVar("T")


class LocalHandle(Generic[T]):
    """A local reference to one item of a directory; creating it fetches nothing."""

    def __init__(self, item_id: str, snapshot: T | None = None) -> None:
        self.id = item_id
        self._snapshot = snapshot
        self.removed = False
        """True after the daemon reported the item removed; the last snapshot is kept."""
        self._listeners: Registrations[Callable[[Any], object]] = Registrations()

    def current(self) -> T | None:
        """The last snapshot seen (kept after a removal); ``None`` before any."""
        return self._snapshot

    def subscribe(self, handler: Callable[[Any], object]) -> Callable[[], None]:
        """Call ``handler(message)`` on the callback thread for updates of this item only.

        A local listener: it sends nothing and hears only what this client's live
        observations of the directory receive. On ``upsert`` ``current()`` is replaced
        before ``handler`` runs; on ``remove`` the last snapshot is kept and ``removed`` set.
        """
        return self._listeners.add(handler)

    def apply_update(self, snapshot: T | None, message: Any, invoke: Callable[..., None]) -> None:
        """Callback thread: apply one routed update (``snapshot`` None means removed) and run
        this handle's listeners through ``invoke``. Called by the client."""
        if snapshot is not None:
            self._snapshot = snapshot
            self.removed = False
        else:
            self.removed = True
        for listener in self._listeners.values():
            invoke(listener, message)

    def note_snapshot(self, snapshot: T) -> None:
        """Record a snapshot of the item received in a reply; called by the client (any thread)."""
        self._snapshot = snapshot
        self.removed = False
