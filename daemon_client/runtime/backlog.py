"""Bounded admission to the callback queue: :class:`FlowControl` (the user's limits) and
:class:`Backlog` (the counters the dispatcher keeps against them).

Only pushes that may be skipped are *admitted* (``Dispatcher.post_admitted``): each one
costs one event and the wire size of its frame (the length of its JSON text, noted by the
reader in :attr:`Backlog.frame_size` before the frame is routed). Once the
queued cost reaches a limit, admission is refused until the backlog drains under the
low-water mark (half of each limit); what to do with a refused push is decided by the
subscription that owns it (:mod:`daemon_client.subscriptions.flow`). Replies, state
changes and local events are posted without admission and never refused.

Threads: :meth:`Backlog.admit` runs on the reader thread, :meth:`Backlog.done` on the
thread that ran the admitted job (dispatcher thread, the user's executor or the
``process_events()`` caller). Recovery listeners run on that same thread, after the
counters are updated and outside the lock; they must not run user code.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import attrs

DEFAULT_MAX_EVENTS = 100_000
DEFAULT_MAX_BYTES = 256 * 2**20


def _limit(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise ValueError(f"FlowControl.{attribute.name} must be None or an integer of at least 2, got {value!r}")


@attrs.frozen
class FlowControl:
    """How much the callback queue may hold before pushes are skipped (``Client(flow_control=)``).

    ``max_events`` counts queued pushes; ``max_bytes`` their wire size (the length of each
    frame's JSON text, as received). ``None`` lifts a limit; ``FlowControl(None, None)``
    queues without bound. Once a limit is reached, new pushes are not queued until the
    backlog falls under half of each limit; every observation that skipped something is
    then told exactly what (see ``docs/threading.md``). Replies, connection state
    changes, ``subscription_restored`` and ``error`` events are never skipped.
    """

    max_events: int | None = attrs.field(default=DEFAULT_MAX_EVENTS, validator=_limit)
    max_bytes: int | None = attrs.field(default=DEFAULT_MAX_BYTES, validator=_limit)

    @property
    def bounded(self) -> bool:
        return self.max_events is not None or self.max_bytes is not None


@attrs.frozen
class BacklogStats:
    """The callback queue's admitted backlog right now (part of ``client.stats()``)."""

    queued_events: int
    queued_bytes: int
    lagging: bool
    """True from the moment a push was refused until the backlog fell under the low-water mark."""
    max_events: int | None
    max_bytes: int | None


class Backlog:
    """Counters of admitted, not yet run jobs against a :class:`FlowControl`."""

    def __init__(self, limits: FlowControl | None = None) -> None:
        self.limits = limits or FlowControl()
        self._lock = threading.Lock()
        self._events = 0  # guarded by _lock
        self._bytes = 0  # guarded by _lock
        self._lagging = False  # guarded by _lock (read without it as a hint)
        self._listeners: tuple[Callable[[], None], ...] = ()  # copy-on-write under _lock
        self.frame_size = 0
        """Reader thread only: the wire size of the frame being routed (its admission cost)."""

    @property
    def lagging(self) -> bool:
        """True while admission is refused (until the backlog is under the low-water mark)."""
        return self._lagging

    def admit(self, cost: int) -> bool:
        """Count one job of ``cost`` bytes, or refuse it (``False``) while over a limit."""
        limits = self.limits
        with self._lock:
            if self._lagging:
                return False
            if (limits.max_events is not None and self._events >= limits.max_events) or (
                limits.max_bytes is not None and self._bytes >= limits.max_bytes
            ):
                self._lagging = True
                return False
            self._events += 1
            self._bytes += cost
            return True

    def done(self, cost: int) -> None:
        """An admitted job ran (or was discarded); may end the lagging period."""
        limits = self.limits
        with self._lock:
            self._events -= 1
            self._bytes -= cost
            recovered = (
                self._lagging
                and (limits.max_events is None or self._events <= limits.max_events // 2)
                and (limits.max_bytes is None or self._bytes <= limits.max_bytes // 2)
            )
            if recovered:
                self._lagging = False
            listeners = self._listeners if recovered else ()
        for listener in listeners:
            listener()

    def on_recovered(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` each time a lagging period ends (on the thread that ran the job)."""
        with self._lock:
            self._listeners = (*self._listeners, listener)

    def stats(self) -> BacklogStats:
        with self._lock:
            return BacklogStats(self._events, self._bytes, self._lagging, self.limits.max_events, self.limits.max_bytes)
