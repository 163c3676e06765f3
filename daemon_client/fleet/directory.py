"""One agent directory across every host of a fleet: entries tagged by host, events in one stream.

:class:`FleetDirectory` (``fleet.agents.list(subscribe=True)``) holds one agent observation per
host (``client.agents.list(subscribe=True)``) and merges them. Each host's entries carry its
label (:class:`FleetEntry`). Subscribers get :class:`FleetEvent` values on the fleet's callback
thread, in one order across hosts:

* ``snapshot``: a host's entries, after its first read and after every re-establishment (a
  reconnect, a switch of connection, a flow-control resync); they replace that host's entries;
* ``update``: one ``agent_update`` of a host, applied to its entries;
* ``unavailable``: a host's connection ended; its entries stay, marked ``available=False``, until
  its next ``snapshot`` (an event, never a silent disappearance).

Threads: :meth:`FleetDirectory.attach` runs on a short-lived attach thread per host (it waits,
bounded, for the host to connect, then reads and subscribes: a host that is down never delays
the others); the view changes on the fleet's callback thread; any thread may read
:attr:`FleetDirectory.entries`. ``_lock`` guards the view and the subscriber tuple and is never
held while calling user code or the client.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from daemon_client.api.agents.namespace import AGENTS
from daemon_client.errors import DaemonClientError
from daemon_client.protocol.agents import AgentEntry, AgentSnapshot
from daemon_client.protocol.directory import AgentListResult, AgentUpdate, DirectoryMessage
from daemon_client.state import ConnectionState

if TYPE_CHECKING:
    from daemon_client.client.composition import Client
    from daemon_client.subscriptions.directory import DirectoryObservation

_log = logging.getLogger("daemon_client.fleet")
ATTACH_POLL = 0.5
"""Seconds between two checks of a host's state by its attach thread (it is also woken)."""


@attrs.frozen
class FleetEntry:
    """One agent of the fleet: the host it runs on and its directory entry."""

    host: str
    """The host's label."""
    entry: AgentEntry
    available: bool = True
    """False while the host is unreachable: the entry is what was last known."""

    @property
    def agent(self) -> AgentSnapshot:
        return self.entry.agent


@attrs.frozen
class FleetEvent:
    """What changed in a :class:`FleetDirectory`; see the module docstring."""

    kind: str
    """``snapshot``, ``update`` or ``unavailable``."""
    host: str
    entries: tuple[FleetEntry, ...] = ()
    """``snapshot``: the host's entries now; ``unavailable``: those now marked unavailable."""
    update: DirectoryMessage[AgentUpdate] | None = None
    """``update``: the message, as a client's observation delivers it."""
    reason: str = ""
    """``unavailable``: why (the connection state change's reason)."""


FleetListener = Callable[[FleetEvent], object]


class _HostView:
    """One host's part of the directory (callback thread writes, under the directory's lock)."""

    __slots__ = ("available", "entries", "observation", "remove_state", "removers")

    def __init__(self) -> None:
        self.entries: dict[str, AgentEntry] = {}
        self.available = False
        self.observation: DirectoryObservation[AgentListResult] | None = None
        self.removers: list[Callable[[], None]] = []
        self.remove_state: Callable[[], None] | None = None


class FleetDirectory:
    """The fleet's agent directory; see the module docstring. Made by ``fleet.agents.list()``."""

    def __init__(
        self,
        clients: Mapping[str, Client],
        list_options: Mapping[str, Any],
        request_timeout: float,
        post: Callable[[Callable[[], None]], object],
    ) -> None:
        self._clients = dict(clients)
        self._post = post
        self._options = dict(list_options)
        self._timeout = request_timeout
        self._lock = threading.Lock()
        self._views = {label: _HostView() for label in self._clients}
        self._listeners: tuple[_Listener, ...] = ()
        self._released = threading.Event()
        self._wakes = {label: threading.Event() for label in self._clients}
        self._attached = {label: threading.Event() for label in self._clients}
        self._threads: list[threading.Thread] = []
        self.errors: dict[str, BaseException] = {}
        """Per host, why its last read failed (cleared when one succeeds)."""

    # ------------------------------------------------------------------ any thread
    @property
    def entries(self) -> list[FleetEntry]:
        """Every host's entries, in the fleet's host order."""
        with self._lock:
            return [
                FleetEntry(label, entry, view.available)
                for label, view in self._views.items()
                for entry in view.entries.values()
            ]

    @property
    def unavailable(self) -> list[str]:
        """The hosts whose entries are not current (unreachable, or not read yet)."""
        with self._lock:
            return [label for label, view in self._views.items() if not view.available]

    def observation(self, host: str) -> DirectoryObservation[AgentListResult] | None:
        """The client observation behind ``host``'s entries (``None`` until it is read)."""
        with self._lock:
            return self._views[host].observation

    def subscribe(self, listener: FleetListener) -> Callable[[], None]:
        """Call ``listener(FleetEvent)`` on the fleet's callback thread: first a ``snapshot`` of
        every host read so far (``unavailable`` for those known but down), then every change.
        Returns a function that removes it."""
        if not callable(listener):
            raise TypeError("the listener must be callable")
        token = _Listener(listener)
        with self._lock:
            self._listeners = (*self._listeners, token)
        self._post(lambda: self._prime(token))

        def remove() -> None:
            token.active = False
            with self._lock:
                self._listeners = tuple(t for t in self._listeners if t is not token)

        return remove

    def wait_attached(self, timeout: float) -> list[str]:
        """Wait (bounded) until every host that is connected has been read; return the hosts
        not read yet."""
        deadline = time.monotonic() + max(0.0, timeout)
        for label, event in self._attached.items():
            if self._clients[label].state is ConnectionState.CONNECTED:
                event.wait(max(0.0, deadline - time.monotonic()))
        return [label for label, event in self._attached.items() if not event.is_set()]

    def release(self, timeout: float = 5.0) -> None:
        """End every host's observation and the attach threads (bounded). Idempotent."""
        deadline = time.monotonic() + max(0.0, timeout)
        self._released.set()
        for wake in self._wakes.values():
            wake.set()
        with self._lock:
            views = list(self._views.values())
            self._listeners = ()
            threads = list(self._threads)
        for view in views:
            if view.remove_state is not None:
                view.remove_state()
            for remove in view.removers:
                remove()
            if view.observation is not None:
                with contextlib.suppress(DaemonClientError):  # a host that is down releases on disconnect
                    view.observation.release(max(0.1, min(2.0, deadline - time.monotonic())))
        current = threading.current_thread()
        for thread in threads:
            if thread is not current:
                thread.join(max(0.0, deadline - time.monotonic()))

    # ------------------------------------------------------------------ setup
    def start(self) -> None:
        """Start one attach thread per host (the caller's thread)."""
        for label, client in self._clients.items():
            wake = self._wakes[label]
            remove = client.on_state_change(functools.partial(self._on_state, label))
            with self._lock:
                self._views[label].remove_state = remove
            thread = threading.Thread(target=self._attach, args=(label,), name=f"fleet-attach-{label}", daemon=True)
            with self._lock:
                self._threads.append(thread)
            thread.start()
            wake.set()

    def _attach(self, label: str) -> None:
        """Attach thread: once ``label`` is connected, read and subscribe (retried at its next
        connection after a failure); then end."""
        client, wake = self._clients[label], self._wakes[label]
        while not self._released.is_set():
            wake.wait(ATTACH_POLL)
            wake.clear()
            if self._released.is_set() or client.state is ConnectionState.DISPOSED:
                return
            if client.state is not ConnectionState.CONNECTED:
                continue
            try:
                result = client.agents.list(subscribe=True, timeout=self._timeout, **self._options)
            except DaemonClientError as exc:
                self.errors[label] = exc
                _log.info("fleet: reading the agents of %s failed (%s); retried at its next connection", label, exc)
                continue
            self.errors.pop(label, None)
            observation = result.subscription
            assert observation is not None
            removers = [
                observation.subscribe(
                    snapshot=lambda snapshot, label=label: self._on_snapshot(label, snapshot),
                    update=lambda message, label=label: self._on_update(label, message),
                    error=lambda error, label=label: self._on_error(label, error),
                )
            ]
            with self._lock:
                view = self._views[label]
                view.observation, view.removers = observation, removers
                if not view.available:  # until its snapshot callback runs, the read's entries stand
                    view.entries = {entry.agent.id: entry for entry in result.entries}
                    view.available = client.state is ConnectionState.CONNECTED
                released = self._released.is_set()
            self._attached[label].set()
            if released:  # released while reading: undo
                for remove in removers:
                    remove()
                with contextlib.suppress(DaemonClientError):
                    observation.release(2.0)
            return

    # ------------------------------------------------------------------ callback thread
    def _on_snapshot(self, label: str, snapshot: AgentListResult) -> None:
        with self._lock:
            view = self._views[label]
            view.entries = {entry.agent.id: entry for entry in snapshot.entries}
            view.available = True
            event = self._state_event(label, view)
            listeners = self._listeners
        self._deliver(listeners, event)

    def _on_update(self, label: str, message: DirectoryMessage[AgentUpdate]) -> None:
        with self._lock:
            AGENTS.apply_update(self._views[label].entries, message)  # the agent directory's own rule
            listeners = self._listeners
        self._deliver(listeners, FleetEvent("update", label, update=message))

    def _on_error(self, label: str, error: BaseException) -> None:
        """The host's observation failed to re-establish (it is released): read it again."""
        self.errors[label] = error
        self._mark_unavailable(label, f"its directory could not be restored: {error}")
        with self._lock:
            view = self._views[label]
            view.observation, view.removers = None, []
            released = self._released.is_set()
        if not released:
            self._attached[label].clear()
            thread = threading.Thread(target=self._attach, args=(label,), name=f"fleet-attach-{label}", daemon=True)
            with self._lock:
                self._threads = [t for t in self._threads if t.is_alive()] + [thread]
            thread.start()
            self._wakes[label].set()

    def _on_state(self, label: str, old: ConnectionState, new: ConnectionState, reason: str) -> None:
        if new is ConnectionState.CONNECTED:
            self._wakes[label].set()  # an attach thread waiting for it reads now
        elif old is ConnectionState.CONNECTED or new is ConnectionState.DISPOSED:
            self._mark_unavailable(label, reason)

    def _mark_unavailable(self, label: str, reason: str) -> None:
        with self._lock:
            view = self._views[label]
            if not view.available:
                return
            view.available = False
            marked = tuple(FleetEntry(label, entry, False) for entry in view.entries.values())
            listeners = self._listeners
        self._deliver(listeners, FleetEvent("unavailable", label, entries=marked, reason=reason))

    def _state_event(self, label: str, view: _HostView) -> FleetEvent:
        """Under ``_lock``: the event that tells a new subscriber where ``label`` stands."""
        entries = tuple(FleetEntry(label, entry, view.available) for entry in view.entries.values())
        if view.available:
            return FleetEvent("snapshot", label, entries=entries)
        return FleetEvent("unavailable", label, entries=entries, reason="not connected")

    def _deliver(self, listeners: tuple[_Listener, ...], event: FleetEvent) -> None:
        for listener in listeners:
            listener.deliver(event)

    def _prime(self, token: _Listener) -> None:
        """Callback thread: tell a new subscriber where every host stands, then go live (the
        events it was passed before are in this state already)."""
        with self._lock:
            backlog = [self._state_event(label, view) for label, view in self._views.items() if view.observation]
        token.primed = True
        for event in backlog:
            token.deliver(event)

    def __repr__(self) -> str:
        return f"<FleetDirectory {len(self._clients)} hosts, {len(self.entries)} agents>"


class _Listener:
    """One subscriber; delivers only while subscribed (errors are logged, never propagated)."""

    __slots__ = ("active", "fn", "primed")

    def __init__(self, fn: FleetListener) -> None:
        self.fn = fn
        self.active = True
        self.primed = False  # set on the callback thread once the current state was delivered

    def deliver(self, event: FleetEvent) -> None:
        if not (self.active and self.primed):
            return
        try:
            self.fn(event)
        except Exception:  # noqa: BLE001 - one listener's error never stops the others
            _log.exception("a fleet directory listener raised")
