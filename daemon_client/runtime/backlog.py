"""Bounded admission to the callback queue: :class:`Backlog`, the counters the dispatcher keeps
against the user's :class:`~daemon_client.runtime.flow_limits.FlowControl`.

Only pushes that may be skipped are *admitted* (``Dispatcher.post_if_admitted``): each one
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
from typing import Final

from daemon_client.runtime.flow_limits import BacklogStats, FlowControl

_UNLIMITED: Final = 2**60
"""A limit never reached (small enough for a compiled build's unboxed integers)."""


class Backlog:
    """Counters of admitted, not yet run jobs against a :class:`FlowControl`.

    Lock-free on the hot path: each counter has one writer. The admitting thread (the
    reader: :meth:`admit`, :meth:`cancel`) writes the ``_in_`` counters; the thread running
    admitted jobs, one at a time (:meth:`done`), writes the ``_out_`` counters, or any thread
    under ``_lock`` when jobs may run concurrently (:meth:`done_locked`, a user executor).
    The backlog is ``in - out``. ``_lagging`` changes under ``_lock`` only: :meth:`admit`
    raises it *before* it reads the ``out`` counters again, and :meth:`done` writes its
    counter *before* it reads the flag, so either the refusal sees the last job done or that
    job's ``done`` sees the flag and ends the lagging period (nothing waits for a drained queue).
    """

    def __init__(self, limits: FlowControl | None = None) -> None:
        self.limits = limits = limits or FlowControl()
        self._max_events = limits.max_events if limits.max_events is not None else _UNLIMITED
        self._max_bytes = limits.max_bytes if limits.max_bytes is not None else _UNLIMITED
        self._lock = threading.Lock()
        self._in_events = 0  # written by the admitting thread only
        self._in_bytes = 0  # written by the admitting thread only
        self._out_events = 0  # written by the job-running thread (or under _lock: done_locked)
        self._out_bytes = 0  # written by the job-running thread (or under _lock: done_locked)
        self._lagging = False  # written under _lock, read without it
        self._listeners: tuple[Callable[[], None], ...] = ()  # copy-on-write under _lock
        self.frame_size = 0
        """Reader thread only: the wire size of the frame being routed (its admission cost)."""

    @property
    def lagging(self) -> bool:
        """True while admission is refused (until the backlog is under the low-water mark)."""
        return self._lagging

    def _over(self) -> bool:
        return (
            self._in_events - self._out_events >= self._max_events
            or self._in_bytes - self._out_bytes >= self._max_bytes
        )

    def _drained(self) -> bool:
        return (
            self._in_events - self._out_events <= self._max_events // 2
            and self._in_bytes - self._out_bytes <= self._max_bytes // 2
        )

    def admit(self, cost: int) -> bool:
        """Admitting thread: count one job of ``cost`` bytes, or refuse it (``False``) while
        over a limit."""
        if self._lagging:
            return False
        if (  # _over(), inline: once per push
            self._in_events - self._out_events >= self._max_events
            or self._in_bytes - self._out_bytes >= self._max_bytes
        ):
            with self._lock:
                self._lagging = True  # first: a done() from now on looks at the flag
                if self._over():
                    return False
                self._lagging = False  # drained meanwhile
        self._in_events += 1
        self._in_bytes += cost
        return True

    def cancel(self, cost: int) -> None:
        """Admitting thread: a job it admitted was not queued after all."""
        self._in_events -= 1
        self._in_bytes -= cost

    def done(self, cost: int, events: int = 1) -> None:
        """The job-running thread (one at a time): an admitted job (or a job delivering
        ``events`` admitted items of ``cost`` bytes in all) ran or was discarded; may end the
        lagging period."""
        self._out_events += events
        self._out_bytes += cost
        if self._lagging:
            self._recover_if_drained()

    def done_locked(self, cost: int, events: int = 1) -> None:
        """:meth:`done` for jobs that may run on several threads at once (a user executor)."""
        with self._lock:
            self._out_events += events
            self._out_bytes += cost
        if self._lagging:
            self._recover_if_drained()

    def _recover_if_drained(self) -> None:
        with self._lock:
            recovered = self._lagging and self._drained()
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
        """A snapshot (the counters are read without stopping the threads that move them)."""
        out_events, out_bytes = self._out_events, self._out_bytes
        return BacklogStats(
            self._in_events - out_events,
            self._in_bytes - out_bytes,
            self._lagging,
            self.limits.max_events,
            self.limits.max_bytes,
        )
