"""Timeline subscriptions: network demand per host kind, routing of ``agent_stream``,
restore after reconnects, release (protocol.md 6.6, 6.7, 10.6).

Modes, decided at every handshake:

* ``owned`` (capable hosts): one ``agent.timeline.set_subscription.request`` per handle,
  each acknowledged with its own ``subscriptionId``; frames routed by that ID; release
  with ``subscription.release.request``.
* ``union`` (selective hosts with ``selectiveAgentTimeline``): the sorted union of the
  agents of every live handle is sent as a set-replace whenever it changes (finally
  ``[]``); a handle is ready once an acknowledged union covers its agent; untagged frames
  routed by ``agentId``.
* ``broadcast`` (older hosts): nothing is sent; every frame arrives and is routed by
  ``agentId``; a handle is ready once attached while connected.

Threads: ``subscribe``/``release`` on the caller's thread; acknowledgement hooks,
routing, the restore and disconnect hooks on the reader thread (they only post jobs);
handlers run on the callback thread. The manager's lock is never held while sending.
"""

from __future__ import annotations

import enum
import logging
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import attrs

from daemon_client.dispatch import Dispatcher
from daemon_client.errors import (
    ClientClosed,
    ConnectionLost,
    DaemonClientError,
    NotConnected,
    ProtocolError,
    RequestTimeout,
    SubscriptionReleased,
)
from daemon_client.memo import Memo
from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.models import ServerInfo, SessionMessage
from daemon_client.protocol.timeline import (
    Replacement,
    SubscriptionError,
    SubscriptionRestored,
    TimelineUpdate,
    parse_stream_payload,
)
from daemon_client.registry import RouteTable
from daemon_client.requests import CallbackFuture

_log = logging.getLogger("daemon_client.timeline")
SET_SUBSCRIPTION = "agent.timeline.set_subscription.request"
RELEASE = "subscription.release.request"
CONTROL_TIMEOUT = 15.0
TimelineHandler = Callable[[TimelineUpdate], object]


class Mode(enum.Enum):
    OWNED = "owned"
    UNION = "union"
    BROADCAST = "broadcast"


def mode_for(kind: HostKind, info: ServerInfo | None) -> Mode:
    if kind is HostKind.CAPABLE:
        return Mode.OWNED
    if kind is HostKind.SELECTIVE and info is not None and info.feature("selectiveAgentTimeline"):
        return Mode.UNION
    return Mode.BROADCAST


class State(enum.Enum):
    PENDING = "pending"  # waits for a connection
    ESTABLISHING = "establishing"
    LIVE = "live"
    RELEASED = "released"


@attrs.frozen
class TimelineAck:
    """What ``ready`` resolves to: the acknowledgement of this handle's demand."""

    agent_ids: tuple[str, ...]
    subscription_id: str
    request_id: str | None = None


class TimelineSubscription:
    """One handle's demand for one agent's timeline (``agent.timeline.subscribe(handler)``).

    ``ready`` resolves on this handle's own acknowledgement; ``subscription_id`` changes
    on every re-establishment. Calling the object releases it without waiting;
    ``release()`` waits for the teardown. Also a context manager.
    """

    def __init__(self, manager: TimelineManager, agent_id: str, handler: TimelineHandler) -> None:
        self._manager = manager
        self.agent_id = agent_id
        self._handler = handler
        self.state = State.PENDING
        self._subscription_id: str | None = None
        self.ever_ready = False
        self.ready: Future[TimelineAck] = CallbackFuture(manager.dispatcher.post)
        self._teardown: Future[dict[str, Any]] | None = None

    @property
    def subscription_id(self) -> str | None:
        return self._subscription_id

    @property
    def released(self) -> bool:
        return self.state is State.RELEASED

    def __call__(self) -> None:
        """Release the demand without waiting for the daemon."""
        self._manager.release(self, wait=None)

    def release(self, timeout: float | None = None) -> None:
        """Release and wait for the teardown (capable: the release reply; selective: the
        shrunken union's acknowledgement; broadcast-only: local detach). Harmless twice."""
        self._manager.release(self, wait=CONTROL_TIMEOUT if timeout is None else timeout)

    def __enter__(self) -> TimelineSubscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"<TimelineSubscription {self.agent_id} {self._subscription_id} {self.state.value}>"

    def _deliver(self, update: TimelineUpdate) -> None:
        """Callback thread."""
        if self.state is State.LIVE or isinstance(update.event, SubscriptionError):
            self._manager.dispatcher.invoke(self._handler, update)


class TimelineManager:
    """Every timeline subscription of one client."""

    def __init__(
        self,
        *,
        submit: Callable[..., Future[dict[str, Any]]],
        server_info: Callable[[], ServerInfo | None],
        reset_transport: Callable[[str], None],
        dispatcher: Dispatcher,
    ) -> None:
        self._submit = submit
        self._server_info = server_info
        self._reset_transport = reset_transport
        self.dispatcher = dispatcher
        self._lock = threading.Lock()
        self._subs: list[TimelineSubscription] = []
        self._mode: Mode | None = None
        self._acked: frozenset[str] = frozenset()
        self._sent_union: frozenset[str] | None = None
        self._routes: RouteTable[TimelineSubscription] = RouteTable()
        self._by_agent: dict[str, tuple[TimelineSubscription, ...]] = {}

    # -------------------------------------------------------------- caller thread
    def subscribe(self, agent_id: str, handler: TimelineHandler) -> TimelineSubscription:
        sub = TimelineSubscription(self, agent_id, handler)
        with self._lock:
            self._subs.append(sub)
            mode = self._mode
            if mode is not None:
                sub.state = State.ESTABLISHING
        if mode is not None:
            self._establish([sub], mode, direct=False)
        return sub

    def release(self, sub: TimelineSubscription, *, wait: float | None) -> None:
        with self._lock:
            previous = sub.state
            teardown = sub._teardown
        if previous is State.RELEASED:
            if teardown is not None and wait is not None:  # released without waiting: wait now
                self._await_teardown(sub, teardown, wait)
            return
        with self._lock:
            if sub.state is State.RELEASED:
                return
            sub.state = State.RELEASED
            if sub in self._subs:
                self._subs.remove(sub)
            self._unroute_locked(sub)
            mode = self._mode
            union = self._union_locked() if mode is Mode.UNION else None
        if not sub.ready.done():
            sub.ready.set_exception(SubscriptionReleased("Timeline subscription released before it was ready"))
        future: Future[dict[str, Any]] | None = None
        try:
            if mode is Mode.OWNED and previous is State.LIVE and sub.subscription_id:
                future = self._submit({"type": RELEASE, "subscriptionId": sub.subscription_id}, CONTROL_TIMEOUT)
            elif mode is Mode.UNION and union is not None:
                future = self._send_union(union, direct=False)
        except (ConnectionLost, NotConnected, ClientClosed):
            return
        if future is None:
            return
        sub._teardown = future
        if wait is not None:
            self._await_teardown(sub, future, wait)

    def _await_teardown(self, sub: TimelineSubscription, future: Future[dict[str, Any]], wait: float) -> None:
        try:
            future.result(wait + 1.0)
        except (ConnectionLost, NotConnected, ClientClosed):
            pass
        except (DaemonClientError, TimeoutError) as exc:
            _log.warning("releasing %r failed (%s); resetting the connection", sub, exc)
            self._reset_transport(f"Subscription release failed: {exc}")

    # -------------------------------------------------------------- establishment
    def _establish(self, subs: list[TimelineSubscription], mode: Mode, *, direct: bool) -> None:
        if mode is Mode.BROADCAST:
            for sub in subs:
                self._go_live(sub, f"legacy:{uuid.uuid4()}", None)
        elif mode is Mode.OWNED:
            for sub in subs:
                try:
                    self._submit(
                        {"type": SET_SUBSCRIPTION, "agentIds": [sub.agent_id]},
                        CONTROL_TIMEOUT,
                        direct=direct,
                        on_settle=lambda payload, error, sub=sub: self._owned_ack(sub, payload, error),
                    )
                except (ConnectionLost, NotConnected):
                    self._back_to_pending(sub)
                except ClientClosed:
                    return
        else:
            with self._lock:
                union = self._union_locked()
            if union is None:  # already acknowledged: ready at once
                self._union_ack(self._acked, {}, None)
            else:
                try:
                    self._send_union(union, direct=direct)
                except (ConnectionLost, NotConnected):
                    for sub in subs:
                        self._back_to_pending(sub)

    def _union_locked(self) -> frozenset[str] | None:
        """The union of live demand, or ``None`` if it equals what was last sent."""
        union = frozenset(s.agent_id for s in self._subs if s.state in (State.ESTABLISHING, State.LIVE))
        if union == self._sent_union:
            return None
        self._sent_union = union
        return union

    def _send_union(self, union: frozenset[str], *, direct: bool) -> Future[dict[str, Any]]:
        return self._submit(
            {"type": SET_SUBSCRIPTION, "agentIds": sorted(union)},
            CONTROL_TIMEOUT,
            direct=direct,
            on_settle=lambda payload, error: self._union_ack(union, payload, error),
        )

    def _back_to_pending(self, sub: TimelineSubscription) -> None:
        with self._lock:
            if sub.state is State.ESTABLISHING:
                sub.state = State.PENDING

    # -------------------------------------------------------------- reader thread
    def _owned_ack(
        self, sub: TimelineSubscription, payload: dict[str, Any] | None, error: BaseException | None
    ) -> None:
        if error is None and payload is not None:
            subscription_id = payload.get("subscriptionId")
            if isinstance(subscription_id, str) and subscription_id:
                self._go_live(sub, subscription_id, payload.get("requestId"))
                return
            error = ProtocolError("the daemon acknowledged the timeline subscription without a subscriptionId")
        self._failed(sub, error or ProtocolError("no acknowledgement"))

    def _union_ack(self, union: frozenset[str], payload: dict[str, Any] | None, error: BaseException | None) -> None:
        with self._lock:
            waiting = [s for s in self._subs if s.state is State.ESTABLISHING and s.agent_id in union]
            if error is None:
                self._acked = union
            elif self._sent_union == union:
                self._sent_union = self._acked  # the daemon kept the last acknowledged union
        for sub in waiting:
            if error is None:
                self._go_live(sub, f"legacy:{uuid.uuid4()}", (payload or {}).get("requestId"))
            else:
                self._failed(sub, error)

    def _go_live(self, sub: TimelineSubscription, subscription_id: str, request_id: Any) -> None:
        with self._lock:
            if sub.state is State.RELEASED:
                stale = True
            else:
                stale = False
                sub.state = State.LIVE
                sub._subscription_id = subscription_id
                self._route_locked(sub)
            mode = self._mode
        if stale:
            if mode is Mode.OWNED:
                self._submit({"type": RELEASE, "subscriptionId": subscription_id}, CONTROL_TIMEOUT)
            return
        if sub.ever_ready:
            restored = TimelineUpdate(sub.agent_id, SubscriptionRestored(), subscription_id=subscription_id)
            self.dispatcher.post(lambda: sub._deliver(restored))
        else:
            sub.ever_ready = True
            ack = TimelineAck((sub.agent_id,), subscription_id, request_id if isinstance(request_id, str) else None)
            sub.ready.set_result(ack)

    def _failed(self, sub: TimelineSubscription, error: BaseException) -> None:
        if isinstance(error, ConnectionLost):
            self._back_to_pending(sub)  # tried again after the next handshake
            return
        with self._lock:
            if sub.state is State.RELEASED:
                return
            sub.state = State.RELEASED
            if sub in self._subs:
                self._subs.remove(sub)
            self._unroute_locked(sub)
            mode = self._mode
        _log.warning("timeline subscription for %s failed: %s", sub.agent_id, error)
        event = TimelineUpdate(sub.agent_id, SubscriptionError(str(error)))
        self.dispatcher.post(lambda: sub._deliver(event))
        if not sub.ready.done():
            sub.ready.set_exception(error)
        if mode is Mode.OWNED and isinstance(error, RequestTimeout):
            self._reset_transport("Timeline subscription establishment timed out")

    def _route_locked(self, sub: TimelineSubscription) -> None:
        if sub.subscription_id and self._mode is Mode.OWNED:
            self._routes.add(sub.subscription_id, sub)
        current = self._by_agent.get(sub.agent_id, ())
        if sub not in current:
            self._by_agent = {**self._by_agent, sub.agent_id: (*current, sub)}

    def _unroute_locked(self, sub: TimelineSubscription) -> None:
        self._routes.remove(sub.subscription_id)
        current = tuple(s for s in self._by_agent.get(sub.agent_id, ()) if s is not sub)
        table = dict(self._by_agent)
        if current:
            table[sub.agent_id] = current
        else:
            table.pop(sub.agent_id, None)
        self._by_agent = table

    def route_stream(self, message: SessionMessage) -> None:
        """Reader thread: an ``agent_stream`` frame."""
        payload = message.payload
        targets = self._targets(payload)
        if not targets:
            return
        memo: Memo[TimelineUpdate] = Memo(lambda: parse_stream_payload(payload, None))
        post = self.dispatcher.post
        for sub in targets:
            post(lambda sub=sub: _deliver_parsed(sub, memo))  # type: ignore[misc]

    def route_replacement(self, message: SessionMessage) -> None:
        """Reader thread: ``agent.timeline.replacement``."""
        payload = message.payload
        epoch = str(payload.get("epoch", ""))
        for sub in self._targets(payload, by_agent_if_untagged=True):
            update = TimelineUpdate(sub.agent_id, Replacement(epoch), subscription_id=sub.subscription_id)
            self.dispatcher.post(lambda sub=sub, update=update: sub._deliver(update))  # type: ignore[misc]

    def _targets(self, payload: dict[str, Any], *, by_agent_if_untagged: bool = False) -> tuple[Any, ...]:
        tagged = payload.get("subscriptionId")
        if self._mode is Mode.OWNED and (tagged is not None or not by_agent_if_untagged):
            target = self._routes.get(tagged) if isinstance(tagged, str) else None
            return (target,) if target is not None else ()
        return self._by_agent.get(str(payload.get("agentId", "")), ())

    def on_disconnect(self) -> None:
        """Reader thread, when a connection ends: everything must be established again."""
        with self._lock:
            self._mode = None
            self._acked = frozenset()
            self._sent_union = None
            for sub in self._subs:
                if sub.state is State.LIVE:
                    sub.state = State.PENDING
                    self._unroute_locked(sub)

    def restore(self, kind: HostKind, reconnected: bool) -> None:
        """Reader thread, after each handshake: establish pending and restore lost subscriptions."""
        mode = mode_for(kind, self._server_info())
        with self._lock:
            self._mode = mode
            pending = [s for s in self._subs if s.state is State.PENDING]
            for sub in pending:
                sub.state = State.ESTABLISHING
        if pending:
            self._establish(pending, mode, direct=True)

    def release_for_close(self, kind: HostKind) -> list[Future[Any]]:
        """``close()`` while connected: drop the daemon-side demand (best effort)."""
        with self._lock:
            mode, live = self._mode, [s for s in self._subs if s.state is State.LIVE]
            union_live = self._sent_union
        futures: list[Future[Any]] = []
        try:
            if mode is Mode.OWNED:
                for sub in live:
                    futures.append(self._submit({"type": RELEASE, "subscriptionId": sub.subscription_id}, 2.0))
            elif mode is Mode.UNION and union_live:
                futures.append(self._submit({"type": SET_SUBSCRIPTION, "agentIds": []}, 2.0))
        except DaemonClientError:
            pass
        return futures

    def dispose(self) -> None:
        """After ``close()``: fail pending ``ready`` futures and tell every live handler."""
        with self._lock:
            subs, self._subs = self._subs, []
            self._by_agent = {}
        for sub in subs:
            sub.state = State.RELEASED
            if not sub.ready.done():
                sub.ready.set_exception(ClientClosed("Daemon client closed"))
            event = TimelineUpdate(sub.agent_id, SubscriptionError("Daemon client closed"))
            self.dispatcher.post(lambda sub=sub, event=event: sub._deliver(event))  # type: ignore[misc]


def _deliver_parsed(sub: TimelineSubscription, memo: Memo[TimelineUpdate]) -> None:
    """Callback thread: parse once (shared), stamp with this handle's ID, deliver."""
    if sub.state is not State.LIVE:
        return
    try:
        update = memo.get()
    except DaemonClientError as exc:
        _log.warning("unreadable agent_stream frame skipped: %s", exc)
        return
    sub._deliver(attrs.evolve(update, subscription_id=sub.subscription_id))
