"""Membership subscriptions: demand for one key (an agent's timeline, an event stream) that
the daemon acknowledges, per host kind; routing of their frames; restore; release
(protocol.md 6.6, 6.7, 7.3, 8.1, 10.6).

A :class:`MembershipFamily` names the request (``agent.timeline.set_subscription.request``
with ``agentIds``, or ``session.events.set_subscription.request`` with ``events``) and the
feature flag of its union RPC. Modes, decided at every handshake:

* ``owned`` (capable hosts): one request per handle with its key, each acknowledged with
  its own ``subscriptionId``; frames routed by that ID; release with
  ``subscription.release.request``.
* ``union`` (selective hosts with the family's flag): the sorted union of the keys of every
  live handle, sent as a set-replace whenever it changes (finally ``[]``); a handle is
  ready once an acknowledged union covers its key; untagged frames routed by key.
* ``broadcast`` (other hosts): nothing is sent; frames are routed by key; a handle is
  ready once attached while connected.

Reconnects: a connection's end moves every live or establishing handle back to pending, and
the next handshake's restore establishes each of them again as a new *attempt*. Every reply
is stamped with the attempt (owned) or the connection epoch (union) it was sent for: a reply
or failure that arrives late for an older attempt changes nothing (an owned subscription it
created is released), so a handle can neither be left pending by a stale failure nor be
subscribed twice. A union that reaches the daemon after a newer one (sent for an earlier
epoch) is corrected by sending the current union again.

Threads: ``subscribe``/``release`` on the caller's thread; acknowledgement hooks, routing,
the restore and disconnect hooks on the reader thread (they only post jobs); handlers run
on the callback thread. The manager's lock is never held while sending.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

import attrs

from daemon_client.errors import (
    ClientClosed,
    ConnectionLost,
    ConnectionUnavailable,
    NotConnected,
    ProtocolError,
    SubscriptionReleased,
)
from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.models import ServerInfo, SessionMessage
from daemon_client.runtime.memo import Memo
from daemon_client.runtime.pushes import RouteTable
from daemon_client.runtime.requests import CallbackFuture, settle
from daemon_client.subscriptions.flow import FlowPolicy, Lag, LagSummary
from daemon_client.subscriptions.lifecycle import (
    RELEASE_REQUEST,
    Phase,
    SubscriptionLink,
    control_timeout,
    local_subscription_id,
    move,
    release_message,
)

_log = logging.getLogger("daemon_client.subscriptions.membership")


class Mode(enum.Enum):
    OWNED = "owned"
    UNION = "union"
    BROADCAST = "broadcast"


class State(enum.Enum):
    PENDING = "pending"  # waits for a connection
    ESTABLISHING = "establishing"
    LIVE = "live"
    RELEASED = "released"

    @property
    def phase(self) -> Phase:
        """This state in the one subscription state model."""
        return Phase(self.value)


@attrs.frozen
class MembershipFamily:
    """What differs between timeline and event memberships."""

    name: str
    request_type: str
    key_field: str
    union_feature: str
    key_in_payload: str | None = None
    """The payload field frames are routed by on hosts that do not tag them; ``None``: the
    message type is the key."""

    def mode(self, kind: HostKind, info: ServerInfo | None) -> Mode:
        if kind is HostKind.CAPABLE:
            return Mode.OWNED
        if kind is HostKind.SELECTIVE and info is not None and info.feature(self.union_feature):
            return Mode.UNION
        return Mode.BROADCAST


@attrs.frozen
class MembershipAck:
    """What ``ready`` resolves to: the acknowledgement of this handle's demand.

    ``request_id`` is the acknowledging request's ID; on broadcast-only hosts, which are
    sent nothing, the acknowledgement is local and its ``request_id`` is the local
    ``legacy:<uuid>`` subscription ID (as in the TypeScript SDK).
    """

    keys: tuple[str, ...]
    subscription_id: str
    request_id: str | None = None

    @property
    def agent_ids(self) -> tuple[str, ...]:
        """The keys of a timeline membership are agent IDs."""
        return self.keys


class Membership:
    """One handle's demand for one key. Subclasses say what their handler receives.

    ``ready`` resolves on this handle's own acknowledgement; ``subscription_id`` changes
    on every re-establishment. Calling the object releases it without waiting;
    ``release()`` waits for the teardown. Also a context manager.
    """

    def __init__(self, manager: MembershipManager[Any], key: str) -> None:
        self._manager = manager
        self.key = key
        self.state = State.PENDING
        self._subscription_id: str | None = None
        self.ever_ready = False
        self.generation = 0
        """Counts establishments; jobs posted for an older one are dropped when they run."""
        self.attempt = 0
        """Counts establishment attempts; a reply or failure for an older one is stale."""
        self.ready: Future[MembershipAck] = CallbackFuture(manager.dispatcher.post_or_run_now)
        self._teardown: Future[dict[str, Any]] | None = None
        self._lag: Lag = manager.flow.lag(lambda: repr(self), self._recover)
        """What flow control skipped for this handle (see :mod:`daemon_client.subscriptions.flow`)."""

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
        self._manager.release(self, wait=control_timeout(RELEASE_REQUEST) if timeout is None else timeout)

    def __enter__(self: M) -> M:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.key} {self._subscription_id} {self.state.value}>"

    # Callback-thread hooks, overridden by subclasses.
    def _deliver(self, message: SessionMessage, parsed: Callable[[], Any], generation: int) -> None:
        """A routed frame reaches this handle: handled only if it is still live on the
        connection the frame came from (an older connection's frames are dropped: its
        ``subscription_restored`` tells the handler to catch up from its cursor instead)."""
        if self.state is State.LIVE and self.generation == generation:
            self._on_frame(message, parsed)

    def _deliver_one(self, message: SessionMessage, generation: int) -> None:
        """:meth:`_deliver` of a frame routed to this handle alone, parsed here if it is delivered."""
        self._deliver(message, functools.partial(self._parse_frame, message), generation)

    def _parse_frame(self, message: SessionMessage) -> Any:
        """A routed frame's typed form, for this handle (may raise: the frame is then skipped);
        families override it, the payload as it came otherwise."""
        return message.payload

    def _on_frame(self, message: SessionMessage, parsed: Callable[[], Any]) -> None:
        """A routed frame (only called while live); ``parsed()`` gives its typed form."""

    def _on_restored(self) -> None:
        """Re-established after a reconnect (never on first establishment)."""

    def _on_failed(self, error: BaseException) -> None:
        """Establishment failed (the handle is released), or the client closed."""

    # Reader-thread flow-control hooks (under the lag's lock; they only record and post).
    def _skipped(self, lag: Lag, message: SessionMessage) -> None:
        """Flow control skipped ``message`` for this handle: record it."""
        lag.record(kind=message.type)

    def _recover(self, summary: LagSummary) -> Callable[[], None] | None:
        """The backlog drained after ``summary`` was skipped: post what announces it."""
        return None

    def _restore_covers_lag(self) -> bool:
        """Reader thread: whether the restore after a reconnect also announces what flow control
        skipped (then a pending lag is forgotten instead of announced first)."""
        return False


M = TypeVar("M", bound=Membership)


class MembershipManager(Generic[M]):
    """Every membership of one family made through one client.

    Test seams: callables ``None`` unless a test sets them, called on the thread of their step
    (once per establishment, union change or restore, never per frame) so that a test can force
    an interleaving in either build. ``_before_establish``: an establishment's requests are about
    to be sent. ``_before_send_union``: a changed union is about to be written (under the union
    lock). ``_after_acked_read``: the union did not change; the acknowledged union was read under
    the lock and is not acted on yet. ``_before_retry``: a send failed for want of a connection;
    its handle is not back to pending yet. ``_before_restore``: a handshake's restore begins.
    """

    def __init__(self, family: MembershipFamily, link: SubscriptionLink) -> None:
        self.family = family
        self._link = link
        self._submit = link.submit
        self.dispatcher = link.dispatcher
        self._flow = link.flow
        self._lock = threading.Lock()
        self._subs: list[M] = []
        self._mode: Mode | None = None
        self._acked: frozenset[str] = frozenset()
        self._sent_union: frozenset[str] | None = None
        self._routes: RouteTable[M] = RouteTable()
        self._union_lock = threading.Lock()  # a union is computed and written under it, in order
        self._ever_sent_union = False
        self._by_key: dict[str, tuple[M, ...]] = {}
        self._epoch = 0
        """Bumped at every disconnect and restore: stamps the unions computed in between."""
        self._before_establish: Callable[[], None] | None = None  # test seams (see the class docstring)
        self._before_send_union: Callable[[], None] | None = None
        self._after_acked_read: Callable[[], None] | None = None
        self._before_retry: Callable[[], None] | None = None
        self._before_restore: Callable[[], None] | None = None

    @property
    def flow(self) -> FlowPolicy:
        """The client's flow-control policy (handles register their :class:`Lag` with it)."""
        return self._flow

    @property
    def mode(self) -> Mode | None:
        """The mode of the current connection (``None`` while not connected)."""
        return self._mode

    # -------------------------------------------------------------- caller thread
    def add(self, sub: M) -> M:
        """Register a new handle and establish it now, or at the next handshake."""
        with self._lock:
            self._subs.append(sub)
            mode = self._mode
            if mode is not None:
                attempts = [self._start_attempt_locked(sub)]
        if mode is not None:
            self._establish(attempts, mode, direct=False)
        return sub

    def release(self, sub: Membership, *, wait: float | None) -> None:
        with self._lock:
            previous, teardown = sub.state, sub._teardown
        if previous is State.RELEASED:
            if teardown is not None and wait is not None:  # released without waiting: wait now
                self._await_teardown(sub, teardown, wait)
            return
        with self._lock:
            if sub.state is State.RELEASED:
                return
            move(sub, State.RELEASED)
            if sub in self._subs:
                self._subs.remove(sub)
            self._unroute_locked(sub)
            mode = self._mode
        settle(sub.ready, error=SubscriptionReleased(f"{self.family.name} subscription released before ready"))
        future: Future[dict[str, Any]] | None = None
        try:
            if mode is Mode.OWNED and previous is State.LIVE and sub.subscription_id:
                future = self._link.release_on_server(sub.subscription_id)
            elif mode is Mode.UNION:
                future = self._sync_union(direct=False)
        except ConnectionUnavailable:
            return
        if future is None:
            return
        sub._teardown = future
        if wait is not None:
            self._await_teardown(sub, future, wait)

    def _await_teardown(self, sub: Membership, future: Future[dict[str, Any]], wait: float) -> None:
        self._link.await_release(repr(sub), future, wait)

    # -------------------------------------------------------------- establishment
    def _start_attempt_locked(self, sub: M) -> tuple[M, int]:
        move(sub, State.ESTABLISHING)
        sub.attempt += 1
        return sub, sub.attempt

    def _establish(self, attempts: list[tuple[M, int]], mode: Mode, *, direct: bool) -> None:
        """Send what establishes each ``(handle, attempt)`` (set ESTABLISHING under the lock)."""
        if self._before_establish is not None:
            self._before_establish()
        if mode is Mode.BROADCAST:
            for sub, attempt in attempts:  # acknowledged locally: the request ID is the local subscription ID
                local_id = local_subscription_id()
                self._go_live(sub, attempt, local_id, local_id)
        elif mode is Mode.OWNED:
            for sub, attempt in attempts:
                try:
                    self._submit(
                        {"type": self.family.request_type, self.family.key_field: [sub.key]},
                        control_timeout(self.family.request_type),
                        direct=direct,
                        on_settle=lambda payload, error, s=sub, a=attempt: self._owned_ack(s, a, payload, error),
                    )
                except (ConnectionLost, NotConnected):
                    self._retry_later(sub, attempt)
                except ClientClosed:
                    return
        else:
            try:
                sent = self._sync_union(direct=direct)
            except (ConnectionLost, NotConnected):
                for sub, attempt in attempts:
                    self._retry_later(sub, attempt)
                return
            if sent is None:  # unchanged: those covered by the acknowledged union are ready at once
                self._covered_by_acked_union()

    def _covered_by_acked_union(self) -> None:
        """The union did not change: the handles waiting whose key the last acknowledged union
        covers are live now. Read under one lock with the waiting handles, and never written
        here: an acknowledgement the reader handles meanwhile must not be overwritten with an
        older union (which would leave every later handle of its keys waiting forever)."""
        with self._lock:
            acked = self._acked
            waiting = [(s, s.attempt) for s in self._subs if s.state is State.ESTABLISHING and s.key in acked]
        if self._after_acked_read is not None:
            self._after_acked_read()
        for sub, attempt in waiting:
            self._go_live(sub, attempt, local_subscription_id(), None)

    def _sync_union(self, *, direct: bool) -> Future[dict[str, Any]] | None:
        """Send the current union if it changed; computing and writing happen under one lock so
        that concurrent changes reach the daemon in the order they were computed."""
        with self._union_lock:
            with self._lock:
                union, epoch = self._union_locked(), self._epoch
            if union is None:
                return None
            self._ever_sent_union = True
            try:
                if self._before_send_union is not None:
                    self._before_send_union()
                return self._send_union(union, direct=direct, epoch=epoch)
            except Exception:
                with self._lock:  # not sent: the next attempt must not take it for the current union
                    if self._sent_union == union:
                        self._sent_union = None
                raise

    def _union_locked(self) -> frozenset[str] | None:
        """The union of live demand, or ``None`` if it equals what was last sent."""
        union = frozenset(s.key for s in self._subs if s.state in (State.ESTABLISHING, State.LIVE))
        if union == self._sent_union:
            return None
        self._sent_union = union
        return union

    def _send_union(self, union: frozenset[str], *, direct: bool, epoch: int) -> Future[dict[str, Any]]:
        """Send ``union`` (computed in ``epoch``); its acknowledgement is stamped with the epoch."""
        return self._submit(
            {"type": self.family.request_type, self.family.key_field: sorted(union)},
            control_timeout(self.family.request_type),
            direct=direct,
            on_settle=lambda payload, error: self._union_ack(union, epoch, payload, error),
        )

    def _retry_later(self, sub: Membership, attempt: int) -> None:
        """The connection went away under ``attempt``: the handle waits for the next restore.
        A later attempt (a restore ran meanwhile) is left alone."""
        if self._before_retry is not None:
            self._before_retry()
        with self._lock:
            if sub.state is State.ESTABLISHING and sub.attempt == attempt:
                move(sub, State.PENDING)

    # -------------------------------------------------------------- reader thread
    def _owned_ack(self, sub: M, attempt: int, payload: dict[str, Any] | None, error: BaseException | None) -> None:
        if error is None and payload is not None:
            subscription_id = payload.get("subscriptionId")
            if isinstance(subscription_id, str) and subscription_id:
                self._go_live(sub, attempt, subscription_id, payload.get("requestId"))
                return
            error = ProtocolError(f"the daemon acknowledged the {self.family.name} subscription without an ID")
        self._failed(sub, attempt, error or ProtocolError("no acknowledgement"))

    def _union_ack(
        self, union: frozenset[str], epoch: int, payload: dict[str, Any] | None, error: BaseException | None
    ) -> None:
        """Reader thread (or the thread that failed the request): the daemon answered
        ``union``, computed in ``epoch``. A reply for an earlier epoch changes no handle: after a
        disconnect the restore establishes them again; if it was accepted after this epoch's own
        union, the daemon now holds an outdated one, so the current union is sent again."""
        waiting: list[tuple[M, int]] = []
        with self._lock:
            stale = epoch != self._epoch
            resync = stale and error is None and self._mode is Mode.UNION
            if resync:
                self._sent_union = None
            elif not stale:
                waiting = [(s, s.attempt) for s in self._subs if s.state is State.ESTABLISHING and s.key in union]
                if error is None:
                    self._acked = union
                elif self._sent_union == union:
                    self._sent_union = self._acked  # the daemon kept the last acknowledged union
        if resync:
            with contextlib.suppress(ConnectionUnavailable):
                self._sync_union(direct=True)
        for sub, attempt in waiting:
            if error is None:
                self._go_live(sub, attempt, local_subscription_id(), (payload or {}).get("requestId"))
            else:
                self._failed(sub, attempt, error)

    def _go_live(self, sub: M, attempt: int, subscription_id: str, request_id: Any) -> None:
        with self._lock:
            stale = sub.state is not State.ESTABLISHING or sub.attempt != attempt
            if not stale:
                move(sub, State.LIVE)
                sub._subscription_id = subscription_id
                sub.generation += 1
                generation = sub.generation
                self._route_locked(sub)
            mode = self._mode
        if stale:
            if mode is Mode.OWNED:
                self._link.release_stale(subscription_id)
            return
        if sub.ever_ready:  # after a pending lag notice, as a push would be
            self._flow.restore(
                sub._lag,
                lambda: sub._on_restored() if sub.generation == generation else None,
                covers=sub._restore_covers_lag(),
            )
        else:
            sub.ever_ready = True
            settle(
                sub.ready,
                result=MembershipAck((sub.key,), subscription_id, request_id if isinstance(request_id, str) else None),
            )

    def _failed(self, sub: M, attempt: int, error: BaseException) -> None:
        if isinstance(error, (ConnectionLost, NotConnected)):
            self._retry_later(sub, attempt)  # tried again after the next handshake
            return
        with self._lock:
            if sub.state is not State.ESTABLISHING or sub.attempt != attempt:
                return  # released meanwhile, or a failure of an older attempt
            move(sub, State.RELEASED)
            if sub in self._subs:
                self._subs.remove(sub)
            self._unroute_locked(sub)
            mode = self._mode
        self.dispatcher.post_in_order(lambda: sub._on_failed(error))
        settle(sub.ready, error=error)
        self._link.establishment_failed(
            f"the {self.family.name} subscription for {sub.key}", error, owned=mode is Mode.OWNED
        )

    def _route_locked(self, sub: M) -> None:
        if sub.subscription_id and self._mode is Mode.OWNED:
            self._routes.add(sub.subscription_id, sub)
        current = self._by_key.get(sub.key, ())
        if sub not in current:
            self._by_key = {**self._by_key, sub.key: (*current, sub)}

    def _unroute_locked(self, sub: Membership) -> None:
        self._routes.remove(sub.subscription_id)
        current = tuple(s for s in self._by_key.get(sub.key, ()) if s is not sub)
        table = dict(self._by_key)
        if current:
            table[sub.key] = current
        else:
            table.pop(sub.key, None)
        self._by_key = table

    def targets(self, key: str, tagged: object, *, by_key_if_untagged: bool = False) -> tuple[M, ...]:
        """Reader thread: the live handles a frame belongs to."""
        if self._mode is Mode.OWNED and (tagged is not None or not by_key_if_untagged):
            target = self._routes.get(tagged) if isinstance(tagged, str) else None
            return (target,) if target is not None else ()
        return self._by_key.get(key, ())

    def route(self, message: SessionMessage, key: object = None) -> None:
        """Reader thread: offer a frame to its handles (flow control may skip it for a lagging
        handle). ``key``: the frame's key, by which hosts that do not tag frames route them
        (default: read as :attr:`MembershipFamily.key_in_payload` says, only when needed).
        A frame for one handle is parsed by that handle, on the callback thread, if delivered;
        a frame shared by several is parsed once for all of them (lazily, with the first
        handle's ID: a job runs only while its handle is live under the same ID)."""
        payload = message.payload
        if self._mode is Mode.OWNED:  # the hot path of a capable host: by tag, to one handle
            tagged = payload.get("subscriptionId")
            sub = self._routes.routes.get(tagged) if type(tagged) is str else None
            if sub is not None:
                flow = self._flow
                flow.offer_call(sub._lag, sub._deliver_one, message, sub.generation, flow.cost(), sub._skipped)
            return
        if key is None:
            field = self.family.key_in_payload
            key = message.type if field is None else payload.get(field, "")
        targets = self.targets(key if type(key) is str else str(key), payload.get("subscriptionId"))
        flow, cost = self._flow, self._flow.cost()
        if len(targets) == 1:
            sub = targets[0]
            flow.offer_call(sub._lag, sub._deliver_one, message, sub.generation, cost, sub._skipped)
            return
        if not targets:
            return
        parsed = Memo(functools.partial(targets[0]._parse_frame, message)).get
        generations = tuple(sub.generation for sub in targets)
        if flow.offer_shared([sub._lag for sub in targets], functools.partial(_deliver_all, targets, generations,
                             message, parsed), cost):  # fmt: skip
            return  # one job for every handle of the frame (none was lagging)
        for sub in targets:
            flow.offer(sub._lag, functools.partial(sub._deliver, message, parsed, sub.generation), cost,
                       sub._skipped, message)  # fmt: skip

    def post_forced(self, sub: M, job: Callable[[], None]) -> None:
        """Reader thread: post a frame flow control never skips; a pending lag is announced first."""
        self._flow.force(sub._lag, job)

    def on_disconnect(self) -> None:
        """Reader thread, when a connection ends: everything must be established again."""
        with self._lock:
            self._mode = None
            self._epoch += 1
            self._acked = frozenset()
            self._sent_union = None
            for sub in self._subs:
                if sub.state in (State.LIVE, State.ESTABLISHING):  # what was in flight is stale now
                    move(sub, State.PENDING)
                    self._unroute_locked(sub)

    def restore(self, kind: HostKind, reconnected: bool) -> None:
        """Reader thread, after each handshake: establish pending and restore lost memberships."""
        if self._before_restore is not None:
            self._before_restore()
        mode = self.family.mode(kind, self._link.server_info())
        with self._lock:
            self._mode = mode
            self._epoch += 1  # unions computed before this restore are stale on this connection
            self._sent_union = None
            pending = [self._start_attempt_locked(s) for s in self._subs if s.state is State.PENDING]
        if pending:
            self._establish(pending, mode, direct=True)
        elif mode is Mode.UNION and reconnected and self._ever_sent_union:
            # the resumed server session may still hold an older union: set it to the current one
            with contextlib.suppress(ConnectionUnavailable):
                self._sync_union(direct=True)

    def release_for_close(self, kind: HostKind) -> list[Future[Any]]:
        """``close()`` while connected: drop the daemon-side demand (best effort)."""
        with self._lock:
            mode, live = self._mode, [s for s in self._subs if s.state is State.LIVE]
            union_live = self._sent_union
        if mode is Mode.OWNED:
            return self._link.release_for_close([release_message(s.subscription_id) for s in live if s.subscription_id])
        if mode is Mode.UNION and union_live:
            return self._link.release_for_close([{"type": self.family.request_type, self.family.key_field: []}])
        return []

    def dispose(self) -> None:
        """After ``close()``: fail pending ``ready`` futures and tell every live handle."""
        with self._lock:
            subs, self._subs = self._subs, []
            self._by_key = {}
        closed = ClientClosed()
        for sub in subs:
            move(sub, State.RELEASED)
            settle(sub.ready, error=closed)
            self.dispatcher.post_in_order(lambda sub=sub: sub._on_failed(closed))  # type: ignore[misc]


def _deliver_all(
    subs: tuple[Membership, ...], generations: tuple[int, ...], message: SessionMessage, parsed: Callable[[], Any]
) -> None:
    """Callback thread: one frame shared by several handles (each isolated from the others)."""
    for sub, generation in zip(subs, generations, strict=True):
        try:
            sub._deliver(message, parsed, generation)
        except Exception:  # noqa: BLE001 - an internal defect for one handle must not starve the others
            _log.exception("internal error while delivering %s to %r", message.type, sub)


def deliver(sub: Membership, message: SessionMessage, parsed: Callable[[], Any], generation: int) -> None:
    """Callback thread: :meth:`Membership._deliver`, for the family modules (a frame they post
    themselves: a replacement, a coalesced event)."""
    sub._deliver(message, parsed, generation)
