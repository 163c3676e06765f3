"""Directory observations: establish, route, restore after reconnects, release.

One :class:`DirectoryManager` per directory family (agents, workspaces) owns every
:class:`DirectoryObservation` made through one client.

Threads:

* the caller's thread runs ``list()``, ``subscribe()`` and ``release()``;
* the reader thread runs :meth:`DirectoryManager.route` (an update arrives), the settle
  hooks of establishment requests, and :meth:`DirectoryManager.restore` (after a
  reconnect). None of them runs user code or parses large payloads: they decide where a
  message goes and post jobs;
* the callback thread runs the posted jobs, in order: they parse (once per message,
  shared), keep each observation's current view, and call user callbacks.

Host kinds (protocol.md 3, 4.4-4.6): on capable hosts every observation is a server
observation with a daemon-issued ID, routed by ``subscriptionId`` and released with
``subscription.release.request``. On selective and broadcast-only hosts the daemon keeps
one slot per family: observations get local ``legacy:`` IDs, untagged updates fan out to
every live observation of the family, and release only detaches callbacks.

Reconnects: every live observation re-sends its subscribing read, in creation order, and
stays ``RESTORING`` until its own reply (the new snapshot) arrives; it is then live again
and receives every later update. An observation skips only the updates that arrive while it
is restoring, which its new snapshot covers; others of the family that are live already
keep receiving them. Every snapshot an observation receives is also handed to the
manager's snapshot listeners (handles refresh the items it contains).

Flow control (:mod:`daemon_client.subscriptions.flow`): while the callback queue is over its
limit, updates are skipped; once it drained, the observation re-reads its snapshot (a plain
read), skips updates until that reply, delivers it through ``snapshot`` and continues.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

import attrs

from daemon_client.errors import (
    ClientClosed,
    ConnectionLost,
    ConnectionUnavailable,
    DaemonClientError,
    ProtocolError,
    SubscriptionReleased,
)
from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.models import SessionMessage
from daemon_client.runtime.memo import Memo
from daemon_client.runtime.pushes import RouteTable
from daemon_client.runtime.registrations import Registration, Registrations
from daemon_client.runtime.requests import CallbackFuture, settle
from daemon_client.subscriptions.flow import Lag, LagSummary
from daemon_client.subscriptions.lifecycle import (
    RELEASE_REQUEST,
    Phase,
    SubscriptionLink,
    control_timeout,
    local_subscription_id,
    move,
    release_message,
)

S = TypeVar("S")  # a list result (snapshot)
U = TypeVar("U")  # a typed update message
E = TypeVar("E")  # one entry of a list result

_log = logging.getLogger("daemon_client.subscriptions.directory")


class ObservationState(enum.Enum):
    """Where a :class:`DirectoryObservation` stands (``observation.state``)."""

    ESTABLISHING = "establishing"
    """The first subscribing read is in flight."""
    LIVE = "live"
    """Established: updates are delivered."""
    RESTORING = "restoring"
    """The connection dropped: waiting for (or receiving) the snapshot of the re-sent read."""
    FAILED = "failed"
    """Establishing or re-establishing failed (``error`` says why): released, nothing is retried."""
    RELEASED = "released"
    """Released by ``release()`` or by ``close()``."""

    @property
    def phase(self) -> Phase:
        """This state in the one subscription state model."""
        return Phase(self.value)


@attrs.frozen
class DirectoryFamily(Generic[S, U, E]):
    """What differs between the agent and the workspace directory."""

    name: str
    update_type: str
    parse_list: Callable[[Mapping[str, Any]], S]
    parse_update: Callable[[Mapping[str, Any]], Any]
    entries: Callable[[S], Iterable[E]]
    entry_key: Callable[[E], str]
    apply_update: Callable[[dict[str, E], Any], None]
    with_entries: Callable[[S, tuple[E, ...], str | None, Any], S]


class Callbacks:
    """The callbacks of one ``subscribe(snapshot=, update=, error=)`` registration."""

    __slots__ = ("error", "snapshot", "update")

    def __init__(
        self,
        snapshot: Callable[[Any], object] | None,
        update: Callable[[Any], object] | None,
        error: Callable[[BaseException], object] | None,
    ) -> None:
        self.snapshot = snapshot
        self.update = update
        self.error = error


class DirectoryObservation(Generic[S]):
    """A live view of a directory, owned by this client (returned by ``list(subscribe=True)``).

    ``subscription_id`` is issued by the daemon on capable hosts and is local
    (``legacy:<uuid>``) on older ones; it changes on every re-establishment after a
    reconnect. Independent filters need a capable (updated) daemon: on older daemons the
    family has a single server slot, the most recent observation's filter wins, and every
    live observation of the family sees the updates of that filter.
    """

    def __init__(self, manager: DirectoryManager[S, Any, Any], message: Mapping[str, Any]) -> None:
        self._manager = manager
        self._message = dict(message)
        self.state = ObservationState.ESTABLISHING
        """``establishing``, ``live``, ``restoring`` (after a reconnect, until its new snapshot),
        ``failed`` (released: see ``error``) or ``released``."""
        self._subscription_id: str | None = None
        self.capable = False
        self.ready: Future[S] = CallbackFuture(manager.dispatcher.post_or_run_now)
        """Resolves to the first snapshot; fails if establishment fails or the client closes."""
        self.error: BaseException | None = None
        """Why (re-)establishing failed (``state`` is then ``FAILED``); ``None`` otherwise."""
        self._callbacks: Registrations[Callbacks] = Registrations()
        """Changed under its lock by ``subscribe()``'s remover (any thread), the callback thread
        (activations) and releases; read without it by the callback thread's deliveries."""
        # Written by the callback thread (snapshots, updates); the first snapshot may be set by
        # the observing caller first (prime), so the assignments take _view_lock.
        self._view: dict[str, Any] | None = None
        self._base: Any = None
        self._view_lock = threading.Lock()
        self._first_snapshot: Memo[S] | None = None
        self._lag: Lag = manager.flow.lag(lambda: repr(self), self._recover)
        """What flow control skipped for this observation (see :mod:`daemon_client.subscriptions.flow`)."""

    @property
    def subscription_id(self) -> str | None:
        """The current ID of this observation (``None`` until established)."""
        return self._subscription_id

    @property
    def released(self) -> bool:
        """True once the observation delivers nothing more and holds nothing on the daemon:
        after ``release()``, after a failed (re-)establishment (``state`` ``FAILED``, see
        ``error``) and after ``close()``. A released observation is never restored: observe
        again to follow the directory. False while it is live or restoring after a reconnect."""
        return self.state in (ObservationState.RELEASED, ObservationState.FAILED)

    def current(self) -> S | None:
        """The current snapshot: the last one received with every later update applied.

        Read it from callbacks (the callback thread keeps it); elsewhere it may lag.
        """
        view, base = self._view, self._base
        if view is None or base is None:
            return None
        return self._manager.family.with_entries(base, tuple(view.values()), self._subscription_id, self)

    def subscribe(
        self,
        snapshot: Callable[[S], object] | None = None,
        update: Callable[[Any], object] | None = None,
        error: Callable[[BaseException], object] | None = None,
    ) -> Callable[[], None]:
        """Register callbacks (run on the callback thread); returns a function that removes them.

        ``snapshot`` gets the current snapshot first, then again after every
        re-establishment; ``update`` gets every later update message in wire order;
        ``error`` gets a failed re-establishment (the observation is then released).
        """
        registration = Registration(Callbacks(snapshot, update, error))
        self._manager.dispatcher.post_in_order(lambda: self._activate(registration))
        callbacks = self._callbacks
        return lambda: callbacks.remove(registration)

    def release(self, timeout: float | None = None) -> None:
        """End this observation only; blocks until the daemon confirms (capable hosts).

        Callbacks are detached at once. Releasing twice, or after a disconnect, is harmless.
        """
        self._manager.release(self, control_timeout(RELEASE_REQUEST) if timeout is None else timeout)

    def __enter__(self) -> DirectoryObservation[S]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"<{self._manager.family.name} observation {self._subscription_id} {self.state.value}>"

    def _recover(self, _summary: LagSummary) -> Callable[[], None] | None:
        """Under the lag's lock: updates were skipped. Keep skipping and re-read the snapshot;
        its reply (ordered after every skipped update) becomes the new snapshot."""
        subscription_id = self._subscription_id
        if self.state is not ObservationState.LIVE or subscription_id is None:
            return None  # a restore's snapshot covers what was skipped
        self._lag.hold()
        return lambda: self._manager.resync(self, subscription_id)

    # -------------------------------------------------------------- callback-thread jobs
    def _activate(self, registration: Registration[Callbacks]) -> None:
        if not registration.active or self.state is ObservationState.RELEASED:
            return
        callbacks = registration.value
        invoke = self._manager.dispatcher.errors.call_isolated
        if self.state is ObservationState.FAILED:
            if callbacks.error is not None and self.error is not None:
                invoke(callbacks.error, self.error)
            return
        current = self.current()
        if current is not None and callbacks.snapshot is not None:
            invoke(callbacks.snapshot, current)
        if not self._callbacks.admit(registration) or self.released:
            self._callbacks.remove(registration)  # removed, or released meanwhile (a release clears)

    def _reset(self, subscription_id: str, snapshot: Memo[S]) -> None:
        if self._subscription_id != subscription_id or self.state is not ObservationState.LIVE:
            return
        try:
            result = snapshot.get()
        except Exception as exc:  # noqa: BLE001 - a bad payload, not user code
            _log.warning("%r: unreadable snapshot skipped: %s", self, exc)
            return
        family = self._manager.family
        view = {family.entry_key(entry): entry for entry in family.entries(result)}
        with self._view_lock:
            self._base, self._view = result, view
        current = self.current()
        invoke = self._manager.dispatcher.errors.call_isolated
        for listener in self._manager.snapshot_listeners.values():
            invoke(listener, result)
        for entry in self._callbacks.entries:
            if entry.active and entry.value.snapshot is not None:
                invoke(entry.value.snapshot, current)

    def prime(self, subscription_id: str | None, result: S) -> None:
        """Observing caller, once the subscribing read returned: ``current()`` reads the first
        snapshot at once, before the callback thread's own copy of it (set then, or earlier)."""
        family = self._manager.family
        view = {family.entry_key(entry): entry for entry in family.entries(result)}
        with self._view_lock:
            if self._view is None and self._subscription_id == subscription_id:
                self._base, self._view = result, view

    def _update(self, subscription_id: str | None, message: Memo[Any]) -> None:
        if self.state is not ObservationState.LIVE or self._subscription_id != subscription_id:
            return
        try:
            typed = message.get()
        except Exception as exc:  # noqa: BLE001 - a bad payload, not user code
            _log.warning("%r: unreadable update skipped: %s", self, exc)
            return
        if self._view is not None:
            self._manager.family.apply_update(self._view, typed)
        invoke = self._manager.dispatcher.errors.call_isolated
        for entry in self._callbacks.entries:
            if entry.active and entry.value.update is not None:
                invoke(entry.value.update, typed)

    def _fail(self, error: BaseException) -> None:
        invoke = self._manager.dispatcher.errors.call_isolated
        for entry in self._callbacks.clear():
            if entry.value.error is not None:
                invoke(entry.value.error, error)


class DirectoryManager(Generic[S, U, E]):
    """Every observation of one directory family made through one client."""

    def __init__(
        self,
        family: DirectoryFamily[S, U, E],
        link: SubscriptionLink,
    ) -> None:
        self.family = family
        self.dispatcher = link.dispatcher
        self._link = link
        self._submit = link.submit
        self._host_kind = link.host_kind
        self.flow = link.flow
        self._lock = threading.Lock()
        self._observations: list[DirectoryObservation[S]] = []
        self._routes: RouteTable[DirectoryObservation[S]] = RouteTable()
        self._listeners: Registrations[Callable[[Any], object]] = Registrations()
        self.snapshot_listeners: Registrations[Callable[[S], object]] = Registrations()
        """Called on the callback thread with every snapshot an observation receives (see
        :meth:`add_snapshot_listener`)."""

    # -------------------------------------------------------------- caller thread
    def observe(self, message: Mapping[str, Any], timeout: float) -> tuple[DirectoryObservation[S], S]:
        """Send a subscribing read and wait for the observation it establishes."""
        observation = DirectoryObservation(self, message)
        with self._lock:
            self._observations.append(observation)
        try:
            future = self._submit(
                {**message, "subscribe": {}},
                timeout,
                on_settle=lambda payload, error: self._established(observation, payload, error, restored=False),
            )
            payload = future.result(timeout + 1.0)
            snapshot = observation._first_snapshot or Memo(lambda: self.family.parse_list(payload))
            result = snapshot.get()  # parsed once, shared with the callback thread's first job
        except BaseException as exc:
            self._forget(observation, exc)
            raise
        finally:
            observation._first_snapshot = None
        observation.prime(observation.subscription_id, result)
        settle(observation.ready, result=result)
        return observation, result

    def _forget(self, observation: DirectoryObservation[S], error: BaseException) -> None:
        with self._lock:
            if observation in self._observations:
                self._observations.remove(observation)
            if observation.state is not ObservationState.RELEASED:
                move(observation, ObservationState.FAILED)
            observation.error = error
        self._routes.remove(observation.subscription_id)
        settle(observation.ready, error=error)

    def find(self, key: str) -> E | None:
        """The entry ``key`` in a live observation's current view, if any holds it."""
        with self._lock:
            observations = list(self._observations)
        for observation in observations:
            view = observation._view
            if observation.state is ObservationState.LIVE and view is not None and key in view:
                entry: E = view[key]
                return entry
        return None

    def entries(self) -> list[E]:
        """Every entry in the current views of the live observations (a copy; may repeat)."""
        with self._lock:
            observations = list(self._observations)
        found: list[E] = []
        for observation in observations:
            view = observation._view
            if observation.state is ObservationState.LIVE and view is not None:
                found.extend(list(view.values()))
        return found

    def add_listener(self, listener: Callable[[Any], object]) -> Callable[[], None]:
        """A local listener: every update routed to a live observation, once per message."""
        return self._listeners.add(listener)

    def add_snapshot_listener(self, listener: Callable[[S], object]) -> Callable[[], None]:
        """A local listener: every snapshot an observation receives (the first one and each one
        after a reconnect), on the callback thread, after the observation's view is replaced
        and before its own ``snapshot`` callbacks run. Returns a function that removes it."""
        return self.snapshot_listeners.add(listener)

    def release(self, observation: DirectoryObservation[S], timeout: float) -> None:
        with self._lock:
            previous = observation.state
            if previous in (ObservationState.RELEASED, ObservationState.FAILED):
                return
            move(observation, ObservationState.RELEASED)
            if observation in self._observations:
                self._observations.remove(observation)
            subscription_id = observation.subscription_id
        observation._callbacks.clear()
        self._routes.remove(subscription_id)
        settle(observation.ready, error=SubscriptionReleased("the observation was released before it was ready"))
        if not observation.capable or subscription_id is None or previous is not ObservationState.LIVE:
            return
        try:
            future = self._link.release_on_server(subscription_id, timeout)
        except ConnectionUnavailable:
            return  # the daemon releases what a socket owned when it goes away
        self._link.await_release(subscription_id, future, timeout)

    # -------------------------------------------------------------- reader thread
    def _established(
        self,
        observation: DirectoryObservation[S],
        payload: dict[str, Any] | None,
        error: BaseException | None,
        *,
        restored: bool,
    ) -> None:
        kind = self._host_kind()
        capable = kind is HostKind.CAPABLE
        if error is not None or payload is None:
            self._establishment_failed(observation, error or ProtocolError("no reply"), restored, capable)
            return
        if capable:
            subscription_id = payload.get("subscriptionId")
            if not isinstance(subscription_id, str) or not subscription_id:
                self._establishment_failed(
                    observation, ProtocolError("the daemon's reply carries no subscriptionId"), restored, capable
                )
                return
        else:
            subscription_id = local_subscription_id()
        with self._lock:
            if observation.state in (ObservationState.RELEASED, ObservationState.FAILED):
                stale = True
            else:
                stale = False
                move(observation, ObservationState.LIVE)
                observation.capable = capable
                observation._subscription_id = subscription_id
        if stale:
            if capable:  # released while establishing: free the server side too
                self._link.release_stale(subscription_id)
            return
        if capable:
            self._routes.add(subscription_id, observation)
        memo: Memo[S] = Memo(lambda: self.family.parse_list(payload))
        if restored:  # the restore's snapshot covers what flow control skipped; ordered as pushes are
            self.flow.restore(observation._lag, lambda: observation._reset(subscription_id, memo), covers=True)
            return
        observation._first_snapshot = memo
        self.dispatcher.post_in_order(lambda: observation._reset(subscription_id, memo))

    def _establishment_failed(
        self, observation: DirectoryObservation[S], error: BaseException, restored: bool, capable: bool
    ) -> None:
        if restored and isinstance(error, ConnectionLost):
            return  # stays RESTORING: the next reconnect tries again
        if not restored:
            return  # observe() raises it to the caller and forgets the observation
        self._forget(observation, error)
        self.dispatcher.post_in_order(lambda: observation._fail(error))
        self._link.establishment_failed(repr(observation), error, owned=capable)

    def route(self, message: SessionMessage) -> None:
        """Reader thread: send an update to the observation(s) it belongs to."""
        payload = message.payload
        tagged = payload.get("subscriptionId")
        memo: Memo[Any] = Memo(lambda: self.family.parse_update(payload))
        if self._host_kind() is HostKind.CAPABLE:
            target = self._routes.get(tagged) if isinstance(tagged, str) else None
            if target is None:
                _log.debug("%s for unknown or released subscription %r dropped", message.type, tagged)
                return
            targets: list[DirectoryObservation[S]] = [target]
            subscription_id: str | None = tagged
        else:  # every live observation; one still restoring skips it: its coming snapshot covers it
            with self._lock:
                targets = [o for o in self._observations if o.state is ObservationState.LIVE]
            subscription_id = None
        if not targets:
            _log.debug("%s with no live observation dropped", message.type)
            return
        cost = self.flow.cost()
        for target in targets:
            # stamped with the ID it is routed under: a job that runs after a re-establishment is dropped
            self.flow.offer(
                target._lag,
                lambda target=target, sid=subscription_id or target.subscription_id: target._update(sid, memo),  # type: ignore[misc]
                cost,
                _record_kind,
                message.type,
            )
        listeners = self._listeners.entries
        if listeners and not self.dispatcher.backlog.lagging:  # skipped with the updates: resyncs refresh handles
            self.dispatcher.post_in_order(lambda: self._notify_listeners(listeners, memo))

    def resync(self, observation: DirectoryObservation[S], subscription_id: str) -> None:
        """Re-read a lagging observation's snapshot (a plain read: no new observation). Updates
        stay skipped until the reply, which the reader thread handles in wire order."""
        try:
            self._submit(
                dict(observation._message),
                control_timeout(str(observation._message.get("type", ""))),
                on_settle=lambda payload, error: self._resynced(observation, subscription_id, payload, error),
            )
        except DaemonClientError as exc:  # not sent: the next connection's restore brings a snapshot
            self._resynced(observation, subscription_id, None, exc)

    def _resynced(
        self,
        observation: DirectoryObservation[S],
        subscription_id: str,
        payload: dict[str, Any] | None,
        error: BaseException | None,
    ) -> None:
        """Reader thread: the re-read answered; its snapshot goes before any later update."""
        with observation._lag.lock:
            observation._lag.release_hold()
            if error is None and payload is not None:
                memo: Memo[S] = Memo(lambda: self.family.parse_list(payload))
                self.dispatcher.post_in_order(lambda: observation._reset(subscription_id, memo))
                return
        if isinstance(error, ConnectionUnavailable):
            return  # the observation restores with a fresh snapshot after the reconnect
        _log.warning("%r: re-reading the snapshot after lagging failed (%s); reconnecting", observation, error)
        self._link.reset_transport(f"Resynchronising {observation!r} failed: {error}")

    def _notify_listeners(self, listeners: tuple[Registration[Callable[[Any], object]], ...], memo: Memo[Any]) -> None:
        try:
            typed = memo.get()
        except Exception:  # noqa: BLE001 - a bad payload, not user code
            return
        for entry in listeners:
            if entry.active:  # removed since the update was routed: it hears nothing more
                self.dispatcher.errors.call_isolated(entry.value, typed)

    def restore(self, kind: HostKind, reconnected: bool) -> None:
        """Reader thread, after every handshake: re-establish live observations in creation order."""
        if not reconnected:
            return
        with self._lock:
            live = [o for o in self._observations if o.state in (ObservationState.LIVE, ObservationState.RESTORING)]
            for observation in live:
                move(observation, ObservationState.RESTORING)
        for observation in live:
            self._routes.remove(observation.subscription_id)
            try:
                self._submit(
                    {**observation._message, "subscribe": {}},
                    control_timeout(str(observation._message.get("type", ""))),
                    direct=True,
                    on_settle=lambda payload, error, o=observation: self._established(o, payload, error, restored=True),
                )
            except DaemonClientError as exc:  # not even queued: it stays RESTORING for the next reconnect
                _log.debug("re-establishing %r not sent: %s", observation, exc)

    def on_disconnect(self) -> None:
        """Reader thread, when a connection ends: live observations wait for re-establishment
        (a release meanwhile is local: the daemon released what the socket owned)."""
        with self._lock:
            for observation in self._observations:
                if observation.state is ObservationState.LIVE:
                    move(observation, ObservationState.RESTORING)

    def release_for_close(self, kind: HostKind) -> list[Future[Any]]:
        """``close()`` while connected: release every capable observation (futures to await)."""
        with self._lock:
            live = [o for o in self._observations if o.state is ObservationState.LIVE and o.capable]
        return self._link.release_for_close([release_message(o.subscription_id) for o in live if o.subscription_id])

    def dispose(self) -> None:
        """After ``close()``: fail pending ``ready`` futures and detach every callback."""
        with self._lock:
            observations, self._observations = self._observations, []
        self._listeners.clear()
        self.snapshot_listeners.clear()
        for observation in observations:
            move(observation, ObservationState.RELEASED)
            observation._callbacks.clear()
            settle(observation.ready, error=ClientClosed())


def _record_kind(lag: Lag, kind: str) -> None:
    """Reader thread, under the lag's lock: a skipped directory update."""
    lag.record(kind=kind)
