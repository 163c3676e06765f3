"""Session event subscriptions of the fake daemon (``fake.events``): who receives which push.

Owns the server-side event subscriptions of each host kind (protocol.md 3.2, 7.3 and 8.1),
the ``session.events.set_subscription.request`` handler, and the one ordered outbox through
which the providers and projects stores send their pushes and replies:

- capable hosts: every request creates an independent subscription owned by the socket, with a
  daemon-issued id (uuid4) returned in ``session.events.set_subscription.response``; each push
  of one of its events goes to that socket as its own copy tagged with ``payload.subscriptionId``
  (two subscriptions of one socket: two copies); a ``subscription.release.request`` (through the
  directory's release hook) or the end of the socket releases it;
- selective hosts with ``features.explicitEventSubscriptions``: the request replaces the
  session's event set and is answered with ``{requestId}`` only; a push of an event in the set
  goes untagged to every socket of that session; the set lives as long as the server-side session;
- every other host (0.1.65): no request (``unknown_schema``); every push goes untagged to every
  handshaken socket of every session, except ``project.update``, which does not exist there.

Test threads (store mutations) and connection reader threads (handlers, release and
disconnect hooks) call in. :attr:`FakeEvents.lock` guards the subscriptions and the outbox;
stores that must publish atomically with their own change queue while holding their own lock
(lock order: store lock, then this lock, then the core's). A frame is queued while the lock
is held and written after it is released: each caller drains the outbox until its own entry
is written, so a method returns once its frames are on the wire, and frames keep queue order.
No frame is sent under any lock.
"""

from __future__ import annotations

import collections
import copy
import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from daemon_client.protocol.hosts import HostKind

if TYPE_CHECKING:
    from daemon_client.testing.fake_connection import FakeConnection
    from daemon_client.testing.fake_core import DaemonCore, Session
    from daemon_client.testing.fake_directory import FakeDirectory
    from daemon_client.testing.fake_handlers import HandlerRegistry, RequestContext

__all__ = ["SET_EVENTS_REQUEST", "EventSubscription", "FakeEvents", "string_list"]

_log = logging.getLogger("daemon_client.testing.fake_daemon")

SET_EVENTS_REQUEST = "session.events.set_subscription.request"
_UNION_KEY = "event_union"
"""``Session.data`` key of a selective session's event set (a ``frozenset``)."""
_NOT_BROADCAST = frozenset({"project.update"})
"""Events a host without event subscriptions never sends (protocol.md 8.2)."""
_DRAIN_TIMEOUT = 10.0


@attrs.frozen
class EventSubscription:
    """A live server-side event subscription, as :meth:`FakeEvents.subscriptions` shows it."""

    id: str | None
    """The daemon-issued id (capable); ``None`` for a selective session's event set."""
    events: tuple[str, ...]
    owner: FakeConnection | Session
    """The owning socket (capable) or server-side session (selective)."""
    host_kind: HostKind


@attrs.define(eq=False)
class _Owned:
    id: str
    events: frozenset[str]
    owner: FakeConnection


class FakeEvents:
    """Event subscriptions and ordered event delivery of one fake daemon (``fake.events``)."""

    def __init__(self, core: DaemonCore, directory: FakeDirectory) -> None:
        self.core = core
        self.directory = directory
        self.host_kind: HostKind = core.config.host_kind
        features = core.config.effective_features
        if self.host_kind is HostKind.CAPABLE:
            self.mode = "owned"
        elif self.host_kind is HostKind.SELECTIVE and features.get("explicitEventSubscriptions"):
            self.mode = "union"
        else:
            self.mode = "broadcast"
        self.lock = threading.Lock()
        self._written = threading.Condition(self.lock)
        self._owned: list[_Owned] = []
        self._outbox: collections.deque[Callable[[], None]] = collections.deque()
        self._queued = 0
        self._sent = 0
        self._draining = False

    # -- wiring --------------------------------------------------------------------------------

    def install(self, registry: HandlerRegistry) -> None:
        """Register the subscription handler (unless broadcast) and, on capable hosts, the
        release and disconnect hooks."""
        if self.mode != "broadcast":
            registry.register(SET_EVENTS_REQUEST, self._handle_set_subscription)
        if self.mode == "owned":
            self.directory.add_release_hook(self._on_release)
            registry.add_disconnect_hook(self._on_disconnect)

    # -- publishing ----------------------------------------------------------------------------

    def publish(self, event_type: str, payload: Mapping[str, Any]) -> int:
        """Deliver a push of ``event_type`` per the host kind's rules (module docstring) and
        return once it is written; returns how many copies were sent."""
        with self.lock:
            ticket, count = self.queue_event_locked(event_type, payload)
        self.drain(ticket)
        return count

    def queue_event_locked(self, event_type: str, payload: Mapping[str, Any]) -> tuple[int, int]:
        """Queue a push (call with :attr:`lock` held, then :meth:`drain` the ticket without it);
        returns (ticket, number of copies). Targets are the subscriptions live right now."""
        body = copy.deepcopy(dict(payload))
        targets = self._targets_locked(event_type)

        def deliver() -> None:
            for connection, subscription_id in targets:
                tagged = body if subscription_id is None else {"subscriptionId": subscription_id, **body}
                connection.send_frame({"type": "session", "message": {"type": event_type, "payload": tagged}})

        return self.queue_locked(deliver), len(targets)

    def queue_locked(self, action: Callable[[], None]) -> int:
        """Queue any send (a reply, say) behind what is queued; call with :attr:`lock` held.
        Returns the ticket to :meth:`drain`."""
        self._outbox.append(action)
        self._queued += 1
        return self._queued

    def send_after(self, action: Callable[[], None]) -> None:
        """Run ``action`` (a reply, say) after every frame queued so far; returns once it ran."""
        with self.lock:
            ticket = self.queue_locked(action)
        self.drain(ticket)

    def drain(self, ticket: int) -> None:
        """Write queued frames in order until entry ``ticket`` is written; one writer at a time.
        Call without any lock."""
        while True:
            with self._written:
                if self._sent >= ticket:
                    return
                if self._draining:
                    if not self._written.wait_for(lambda: self._sent >= ticket or not self._draining,
                                                  _DRAIN_TIMEOUT):  # fmt: skip
                        raise TimeoutError("event frames still queued")
                    continue
                self._draining = True
                action = self._outbox.popleft()
            try:
                action()
            except Exception:  # noqa: BLE001 - one failed delivery must not stop the others
                _log.exception("fake daemon: event delivery failed")
            finally:
                with self._written:
                    self._sent += 1
                    self._draining = False
                    self._written.notify_all()

    def wait_idle(self, timeout: float = 5.0) -> None:
        """Block until every queued event frame and reply has been written."""
        with self._written:
            ticket = self._queued
            if not self._written.wait_for(lambda: self._sent >= ticket, timeout):
                raise TimeoutError(f"event frames still queued after {timeout:g} s")

    # -- subscriptions ---------------------------------------------------------------------------

    def subscriptions(self) -> list[EventSubscription]:
        """Live server-side event subscriptions: capable ones in creation order, then each live
        selective session with a non-empty event set. Broadcast hosts have none."""
        sessions = self.core.sessions() if self.mode == "union" else {}
        with self.lock:
            found = [EventSubscription(o.id, tuple(sorted(o.events)), o.owner, self.host_kind) for o in self._owned]
            for session in sessions.values():
                union: frozenset[str] = session.data.get(_UNION_KEY, frozenset())
                if union:
                    found.append(EventSubscription(None, tuple(sorted(union)), session, self.host_kind))
        return found

    def _targets_locked(self, event_type: str) -> list[tuple[FakeConnection, str | None]]:
        if self.mode == "owned":
            return [(o.owner, o.id) for o in self._owned if event_type in o.events]
        if self.mode == "union":
            targets: list[tuple[FakeConnection, str | None]] = []
            for session in self.core.sessions().values():  # the core lock is a leaf below this one
                if event_type in session.data.get(_UNION_KEY, frozenset()):
                    targets.extend((c, None) for c in self.core.session_connections(session) if c.handshaken)
            return targets
        if event_type in _NOT_BROADCAST:
            return []
        return [(c, None) for c in self.core.connections(handshaken_only=True)]

    def _on_release(self, connection: FakeConnection, subscription_id: str) -> None:
        """Directory release hook (capable): drop the subscription, then write what was queued
        for it, so the release response comes after its last frame."""
        with self.lock:
            self._owned = [o for o in self._owned if not (o.id == subscription_id and o.owner is connection)]
            ticket = self._queued
        self.drain(ticket)

    def _on_disconnect(self, connection: FakeConnection) -> None:
        with self.lock:
            self._owned = [o for o in self._owned if o.owner is not connection]

    # -- handler -------------------------------------------------------------------------------

    def _handle_set_subscription(self, ctx: RequestContext) -> None:
        events = ctx.message["events"]
        if string_list(events) is None:
            ctx.rpc_error("Invalid events: expected an array of strings", "invalid_message")
            return
        body: dict[str, Any] = {}
        with self.lock:
            if self.mode == "owned" or ctx.session is None:
                owned = _Owned(str(uuid.uuid4()), frozenset(events), ctx.connection)
                self._owned.append(owned)
                body["subscriptionId"] = owned.id
            else:
                ctx.session.data[_UNION_KEY] = frozenset(events)
            ticket = self.queue_locked(lambda: ctx.reply(body))
        self.drain(ticket)


def string_list(value: object) -> list[str] | None:
    """``value`` if it is a list of strings, else ``None`` (for request validation)."""
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    return None
