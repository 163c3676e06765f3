"""What each observation does with a push the callback queue refuses (flow control).

The dispatcher admits skippable pushes against the client's ``FlowControl``
(:mod:`daemon_client.runtime.backlog`). This module owns the per-observation side: every
observation that routes pushes keeps a :class:`Lag`; :meth:`FlowPolicy.offer` posts a push
if it is admitted, and otherwise records it as skipped. Once the backlog is under its
low-water mark, each lagging observation *recovers* exactly once, in order, before its
next live push: a timeline handle gets a local ``lagged`` event, a directory observation
re-reads its snapshot, a coalescing event stream gets its newest skipped push, a
resynchronising one its ``on_restored`` callback. What recovery does is the owner's
``recover(summary)`` hook (see :class:`Lag`).

A WARNING is logged when an observation starts lagging and when it recovers (with counts);
:meth:`FlowPolicy.stats` reports the backlog and the counts per observation.

Threads: :meth:`FlowPolicy.offer` runs on the reader thread; recovery runs there (the next
push of a lagging observation after the backlog drained) or on the thread that ran the job
that drained it (dispatcher thread, user executor or ``process_events()``). A lag's lock
orders the two; it is held while posting (never while sending or running user code).
"""

from __future__ import annotations

import functools
import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from daemon_client._compiled import mypyc_attr
from daemon_client.runtime.dispatch import Dispatcher, call_plain
from daemon_client.runtime.flow_limits import BacklogStats

_log = logging.getLogger("daemon_client.flow")

Action = Callable[[], None]
T = TypeVar("T")
B = TypeVar("B")


@attrs.frozen
class LagSummary:
    """What one lagging period skipped for one observation."""

    dropped: int
    first_seq: int | None
    last_seq: int | None
    epoch: str | None
    skipped_types: tuple[str, ...]
    newest: Any = None
    """The newest skipped push (kept for coalescing streams)."""


@attrs.frozen
class ObservationFlow:
    """One observation's flow-control counters (in ``client.stats().observations``)."""

    name: str
    dropped: int
    """Pushes skipped over the observation's life."""
    lagging: bool
    """True while skipped pushes wait to be announced (or a resync is in flight)."""


@attrs.frozen
class ClientStats:
    """``client.stats()``: the callback backlog and what flow control skipped."""

    backlog: BacklogStats
    observations: tuple[ObservationFlow, ...]

    @property
    def queued_events(self) -> int:
        return self.backlog.queued_events

    @property
    def queued_bytes(self) -> int:
        return self.backlog.queued_bytes

    @property
    def dropped(self) -> int:
        """Pushes skipped by every live observation so far."""
        return sum(item.dropped for item in self.observations)


@mypyc_attr(native_class=False)  # held in a WeakSet: compiled classes take no weak references
class Lag:
    """One observation's skipped run.

    ``recover(summary)`` is the owner's hook, called under the lag's lock when a lagging
    period ends: it posts what must come before the next push (it may call ``hold()`` to keep
    skipping until a resync completes) and may return an action to run after the lock is
    released (e.g. sending a re-read).
    """

    def __init__(self, name: Callable[[], str], recover: Callable[[LagSummary], Action | None]) -> None:
        self.lock = threading.Lock()
        self._name = name
        self._recover = recover
        self.total = 0
        self._pending = False
        self._held = False
        self._reset()

    def _reset(self) -> None:
        self.dropped = 0
        self.first_seq: int | None = None
        self.last_seq: int | None = None
        self.epoch: str | None = None
        self.skipped_types: list[str] = []
        self.newest: object = None

    @property
    def name(self) -> str:
        return self._name()

    @property
    def lagging(self) -> bool:
        """Read without the lock by :meth:`FlowPolicy.offer`: ``pending`` first (cleared last)."""
        return self._pending or self._held

    def hold(self) -> None:
        """Under the lock, from ``recover``: keep skipping until :meth:`release_hold`."""
        self._held = True

    def release_hold(self) -> None:
        """Under the lock: the resync completed; pushes flow again."""
        self._held = False

    def clear(self) -> None:
        """Under the lock: what was skipped is covered otherwise (e.g. a restore's snapshot)."""
        self._pending = False
        self._held = False
        self._reset()

    def record(self, *, seq: int | None = None, epoch: str | None = None, kind: str | None = None) -> None:
        """Under the lock: one push skipped (a row with ``seq``/``epoch``, or a ``kind`` of event)."""
        self.total += 1
        if self._held:
            return  # covered by the resync in flight
        self._pending = True
        self.dropped += 1
        if seq is not None:
            if self.first_seq is None:
                self.first_seq, self.epoch = seq, epoch
            self.last_seq = seq
        elif kind is not None and kind not in self.skipped_types:
            self.skipped_types.append(kind)

    def recover_locked(self) -> Action | None:
        """Under the lock: end the lagging period. ``pending`` is cleared only after ``recover``
        posted what must come first: :meth:`FlowPolicy.offer` reads it without the lock."""
        summary = LagSummary(
            self.dropped, self.first_seq, self.last_seq, self.epoch, tuple(self.skipped_types), self.newest
        )
        self._reset()
        _log.warning(
            "%s recovered after lagging: %d skipped (seq %s..%s); %s",
            self.name,
            summary.dropped,
            summary.first_seq,
            summary.last_seq,
            "resynchronising" if summary.first_seq is None else "announced",
        )
        try:
            return self._recover(summary)
        finally:
            self._pending = False

    @property
    def pending(self) -> bool:
        return self._pending


class FlowPolicy:
    """The per-observation side of flow control for one client (shared by its managers)."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self._dispatcher = dispatcher
        self._backlog = dispatcher.backlog
        self._lock = threading.Lock()
        self._lags: weakref.WeakSet[Lag] = weakref.WeakSet()  # guarded by _lock
        self._backlog.on_recovered(self._recovered)

    def cost(self) -> int:
        """Reader thread: the wire size of the push being routed (its frame's text length)."""
        return self._backlog.frame_size

    def lag(self, name: Callable[[], str], recover: Callable[[LagSummary], Action | None]) -> Lag:
        """A new observation's :class:`Lag` (counted in :meth:`stats` while it lives)."""
        lag = Lag(name, recover)
        with self._lock:
            self._lags.add(lag)
        return lag

    def offer(self, lag: Lag, job: Action, cost: int, skipped: Callable[[Lag, T], None], item: T) -> None:
        """Reader thread: post ``job`` if admitted; otherwise ``skipped(lag, item)`` records it
        (under the lag's lock). A lagging observation recovers first once the backlog drained."""
        if not lag.lagging and self._dispatcher.post_if_admitted(call_plain, job, None, cost):
            return  # the common case, without the lag's lock: nothing to announce first, admitted
        action: Action | None = None
        started = False
        with lag.lock:
            if lag.pending and not self._backlog.lagging:
                action = lag.recover_locked()
            if (
                lag.lagging or not self._dispatcher.post_if_admitted(call_plain, job, None, cost)
            ) and not self._dispatcher.stopped:
                started = not lag.lagging
                skipped(lag, item)
                started = started and lag.pending
        if started:
            _log.warning("%s is lagging: the callback queue is over its limit; skipping its pushes", lag.name)
        if action is not None:
            action()

    def offer_call(  # noqa: PLR0917 - the stream's hot path: positional arguments are the cheapest
        self, lag: Lag, fn: Callable[[T, B], None], first: T, second: B, cost: int, skipped: Callable[[Lag, T], None]
    ) -> None:
        """:meth:`offer` of the job ``fn(first, second)``, posted without a closure when admitted
        (the stream's hot path: one call from the router to the dispatcher's queue);
        ``skipped(lag, first)`` records it when it is not."""
        if not (lag._pending or lag._held) and self._dispatcher.post_if_admitted(fn, first, second, cost):
            return
        self.offer(lag, functools.partial(fn, first, second), cost, skipped, first)

    def offer_shared(self, lags: list[Lag], job: Action, cost: int) -> bool:
        """Reader thread: post one ``job`` serving several observations of one push, counted
        once, if none of them is lagging and it is admitted; ``False`` otherwise (nothing was
        posted or recorded: the caller offers the push to each observation on its own)."""
        return not any(lag.lagging for lag in lags) and self._dispatcher.post_if_admitted(call_plain, job, None, cost)

    def force(self, lag: Lag, job: Action) -> None:
        """Post ``job`` (never skipped); a pending lag is announced before it."""
        action: Action | None = None
        with lag.lock:
            if lag.pending:
                action = lag.recover_locked()
            self._dispatcher.post_in_order(job)
        if action is not None:
            action()

    def restore(self, lag: Lag, job: Action, *, covers: bool = False) -> None:
        """Post what a restore after a reconnect delivers (``subscription_restored``, a new
        snapshot, ``on_restored``), on the same ordered path as pushes: a pending lag is announced
        before it, or, with ``covers`` (the restore itself covers what was skipped: a snapshot),
        forgotten. Never skipped."""
        if covers:
            with lag.lock:
                lag.clear()
                self._dispatcher.post_in_order(job)
            return
        self.force(lag, job)

    def _recovered(self) -> None:
        """The backlog fell under the low-water mark: every lagging observation recovers."""
        with self._lock:
            lags = list(self._lags)
        actions: list[Action] = []
        for lag in lags:
            with lag.lock:
                if lag.pending and not self._backlog.lagging:
                    action = lag.recover_locked()
                    if action is not None:
                        actions.append(action)
        for action in actions:
            action()

    def stats(self) -> ClientStats:
        with self._lock:
            lags = list(self._lags)
        observations = tuple(ObservationFlow(lag.name, lag.total, lag.lagging) for lag in lags)
        return ClientStats(self._backlog.stats(), observations)
