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
disconnect hooks) call in. :attr:`FakeEvents.lock` guards the subscriptions and the outbox (a
:class:`~daemon_client.testing.fake.engine.outbox.Outbox`); stores that publish atomically with their
own changes take it while holding their own lock (lock order: store lock, then this lock, then
the core's). A frame is queued while the lock is held and written after it is released: each
caller drains the outbox until its own entry is written, so a method returns once its frames
are on the wire, and frames keep queue order. No frame is sent under any lock.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.requests import subscriptions as subscriptions_requests
from daemon_client.testing.fake.engine.outbox import Outbox, SubscriptionFamily, SubscriptionTable, fanout, string_list

if TYPE_CHECKING:
    from daemon_client.testing.fake.directory.observations import FakeDirectory
    from daemon_client.testing.fake.engine.core import DaemonCore
    from daemon_client.testing.fake.engine.handlers import HandlerRegistry
    from daemon_client.testing.fake.engine.peer import Peer, Session

__all__ = ["SET_EVENTS_REQUEST", "EventSubscription", "FakeEvents", "string_list"]

SET_EVENTS_REQUEST = subscriptions_requests.SESSION_EVENTS.type
_SUBSCRIPTIONS = SubscriptionFamily(spec=subscriptions_requests.SESSION_EVENTS, field="events", echo=False,
                                    union_key="event_union")  # fmt: skip
_NOT_BROADCAST = frozenset({"project.update"})
"""Events a host without event subscriptions never sends (protocol.md 8.2)."""


@attrs.frozen
class EventSubscription:
    """A live server-side event subscription, as :meth:`FakeEvents.subscriptions` shows it."""

    id: str | None
    """The daemon-issued id (capable); ``None`` for a selective session's event set."""
    events: tuple[str, ...]
    owner: Peer | Session
    """The owning socket (capable) or server-side session (selective)."""
    host_kind: HostKind


class FakeEvents:
    """Event subscriptions and ordered event delivery of one fake daemon (``fake.events``)."""

    def __init__(self, core: DaemonCore, directory: FakeDirectory) -> None:
        self.core = core
        self.directory = directory
        self.host_kind: HostKind = core.config.host_kind
        self.lock = threading.Lock()
        self._outbox = Outbox(self.lock, "event")
        self._subscriptions = SubscriptionTable(core, self.lock, self._outbox, _SUBSCRIPTIONS)

    # -- wiring --------------------------------------------------------------------------------

    def install(self, registry: HandlerRegistry) -> None:
        """Register the subscription handler (unless broadcast) and, on capable hosts, the
        release and disconnect hooks."""
        self._subscriptions.install(registry, self.directory)

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
        broadcast = self._subscriptions.mode == "broadcast"
        targets = [] if broadcast and event_type in _NOT_BROADCAST else self._subscriptions.targets_locked(event_type)
        return self.queue_locked(fanout(targets, event_type, body)), len(targets)

    def queue_locked(self, action: Callable[[], None]) -> int:
        """Queue any send (a reply, say) behind what is queued; call with :attr:`lock` held.
        Returns the ticket to :meth:`drain`."""
        return self._outbox.enqueue_locked(action)

    def send_after(self, action: Callable[[], None]) -> None:
        """Run ``action`` (a reply, say) after every frame queued so far; returns once it ran."""
        with self.lock:
            ticket = self.queue_locked(action)
        self.drain(ticket)

    def drain(self, ticket: int) -> None:
        """Write queued frames in order until entry ``ticket`` is written; one writer at a time.
        Call without any lock."""
        self._outbox.drain(ticket)

    def wait_idle(self, timeout: float = 5.0) -> None:
        """Block until every queued event frame and reply has been written."""
        self._outbox.wait_idle(timeout)

    # -- subscriptions ---------------------------------------------------------------------------

    def subscriptions(self) -> list[EventSubscription]:
        """Live server-side event subscriptions: capable ones in creation order, then each live
        selective session with a non-empty event set. Broadcast hosts have none."""
        return [EventSubscription(*listed, self.host_kind) for listed in self._subscriptions.listing()]
