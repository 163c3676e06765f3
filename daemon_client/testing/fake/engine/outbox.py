"""Ordered delivery of the fake daemon: the outbox every push family writes through, and the
server-side subscriptions of the families that route pushes per host kind.

Owns two mechanisms that several parts of the fake share:

- :class:`Outbox`: an ordered queue of send actions. An owner (``fake.directory``,
  ``fake.timeline``, ``fake.events``) queues actions while holding its own lock, so frames follow
  its state changes in order, and writes them after releasing it: no frame is sent under a lock.
  Tickets number the actions from 1 in queue order; :meth:`Outbox.drain` writes until a ticket
  is written, :meth:`Outbox.flush` writes what is queued unless another thread already does.
  Exactly one thread writes at a time, so actions run in queue order; one that fails is logged
  and does not stop the others.
- :class:`SubscriptionTable`: the subscriptions of one push family (timelines by agent id,
  session events by event name) per host kind (protocol.md 6.6 and 3.2): independent
  subscriptions owned by a socket and tagged with a daemon-issued id (capable hosts), one set per
  server-side session (selective hosts with the family's feature), or none (every handshaken
  socket gets every push); its ``set_subscription`` handler and release and disconnect hooks.

Test threads (store mutations), run threads (``fake-daemon-run-*``) and connection reader
threads (handlers, hooks) call in. The owner's lock guards an outbox's queue and counters and a
table's subscriptions; actions run on whichever calling thread drains, without any lock.
"""

from __future__ import annotations

import collections
import logging
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

import attrs

from daemon_client.protocol.hosts import HostKind

if TYPE_CHECKING:
    from daemon_client.protocol.requests import RequestSpec
    from daemon_client.testing.fake.engine.core import DaemonCore
    from daemon_client.testing.fake.engine.handlers import HandlerRegistry, RequestContext
    from daemon_client.testing.fake.engine.peer import Peer, Session

__all__ = [
    "Mode",
    "Outbox",
    "ReleaseHooks",
    "SubscriptionFamily",
    "SubscriptionTable",
    "Target",
    "fanout",
    "string_list",
]

_log = logging.getLogger("daemon_client.testing.fake.daemon")

Action = Callable[[], None]
Mode = Literal["owned", "union", "broadcast"]
"""How a family routes pushes: socket-owned subscriptions, per-session sets, or to everyone."""
Target = tuple["Peer", "str | None"]
"""A socket and the subscription id its copy is tagged with (``None``: untagged)."""
Listing = tuple["str | None", tuple[str, ...], "Peer | Session"]
"""A live subscription: its id (``None`` for a session's set), its keys (sorted) and its owner."""


class ReleaseHooks(Protocol):
    """Where a subscription family hears of capable releases (the fake's directory fits as is)."""

    def add_release_hook(self, hook: Callable[[Peer, str], None]) -> None: ...


class Outbox:
    """Send actions queued under the owner's lock and written in queue order, one writer at a time."""

    def __init__(self, lock: threading.Lock, name: str, *, drain_timeout: float = 10.0) -> None:
        """``name`` (``"event"``, say) words the failure log and the ``TimeoutError`` messages;
        :meth:`drain` gives up after ``drain_timeout`` seconds of another thread writing."""
        self._written = threading.Condition(lock)
        self._name = name
        self._drain_timeout = drain_timeout
        self._actions: collections.deque[Action] = collections.deque()
        self._queued = 0
        self._sent = 0
        self._draining = False

    def enqueue_locked(self, action: Action) -> int:
        """Queue ``action`` behind what is queued; call with the owner's lock held. Returns its
        ticket, to :meth:`drain` after releasing the lock."""
        self._actions.append(action)
        self._queued += 1
        return self._queued

    def last_ticket_locked(self) -> int:
        """The ticket of the latest queued action (0 before any); call with the lock held."""
        return self._queued

    def drain(self, ticket: int) -> None:
        """Write queued actions in order until action ``ticket`` has run; one writer at a time
        (a caller waits while another writes). Call without the lock."""
        while True:
            with self._written:
                if self._sent >= ticket:
                    return
                if self._draining:
                    if not self._written.wait_for(lambda: self._sent >= ticket or not self._draining,
                                                  self._drain_timeout):  # fmt: skip
                        raise TimeoutError(f"{self._name} frames still queued")
                    continue
                self._draining = True
                action = self._actions.popleft()
            self._run(action, stop_draining=True)

    def flush(self) -> None:
        """Write every queued action, including those queued meanwhile, unless another thread is
        writing: then return at once (that thread writes them). Call without the lock."""
        with self._written:
            if self._draining:
                return
            self._draining = True
        while True:
            with self._written:
                if not self._actions:
                    self._draining = False
                    self._written.notify_all()
                    return
                action = self._actions.popleft()
            self._run(action, stop_draining=False)

    def wait_idle(self, timeout: float = 5.0) -> None:
        """Block until every action queued so far has run; ``TimeoutError`` after ``timeout`` s."""
        with self._written:
            ticket = self._queued
            if not self._written.wait_for(lambda: self._sent >= ticket, timeout):
                raise TimeoutError(f"{self._name} frames still queued after {timeout:g} s")

    def _run(self, action: Action, *, stop_draining: bool) -> None:
        try:
            action()
        except Exception:  # noqa: BLE001 - one failed delivery must not stop the others
            _log.exception("fake daemon: %s delivery failed", self._name)
        finally:
            with self._written:
                self._sent += 1
                if stop_draining:
                    self._draining = False
                self._written.notify_all()


def fanout(targets: Sequence[Target], message_type: str, payload: Mapping[str, Any]) -> Action:
    """An action sending ``message_type`` to each target, tagged with its subscription id if any."""

    def send() -> None:
        for connection, subscription_id in targets:
            body = payload if subscription_id is None else {"subscriptionId": subscription_id, **payload}
            connection.send_frame({"type": "session", "message": {"type": message_type, "payload": body}})

    return send


def string_list(value: object) -> list[str] | None:
    """``value`` if it is a list of strings, else ``None`` (for request validation)."""
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    return None


@attrs.frozen
class SubscriptionFamily:
    """What distinguishes one push family's subscriptions (timelines, session events)."""

    spec: RequestSpec
    """The membership request's declaration (``agent.timeline.set_subscription.request``, say):
    which hosts have it, and (its flag) which selective hosts keep per-session sets."""
    field: str
    """The request field holding the keys (``agentIds``, say)."""
    echo: bool
    """Whether the reply echoes the keys under ``field``."""
    union_key: str
    """The ``Session.data`` key of a session's set (a ``frozenset``)."""


@attrs.define(eq=False)
class _Owned:
    id: str
    keys: frozenset[str]
    owner: Peer


class SubscriptionTable:
    """The server-side subscriptions of one push family; see the module docstring. Replies
    and frames go through ``outbox``, whose lock (``lock``) guards the table too."""

    def __init__(self, core: DaemonCore, lock: threading.Lock, outbox: Outbox, family: SubscriptionFamily) -> None:
        self.core = core
        self.family = family
        self.mode: Mode = "broadcast"
        kind, features = core.config.host_kind, core.config.effective_features
        if family.spec.exists_on(kind, features):
            self.mode = "owned" if kind is HostKind.CAPABLE else "union"
        self._lock = lock
        self._outbox = outbox
        self._owned: list[_Owned] = []

    def install(self, registry: HandlerRegistry, directory: ReleaseHooks) -> None:
        """Register the request handler (unless broadcast) and, on capable hosts, the release
        and disconnect hooks."""
        kind, features = self.core.config.host_kind, self.core.config.effective_features
        registry.serve(self.family.spec, self._handle_set_subscription, host_kind=kind, features=features)
        if self.mode == "owned":
            directory.add_release_hook(self._on_release)
            registry.add_disconnect_hook(self._on_disconnect)

    def listing(self) -> list[Listing]:
        """Live subscriptions: socket-owned ones in creation order, then each live session with a
        non-empty set. Takes the lock."""
        sessions = self.core.sessions() if self.mode == "union" else {}
        with self._lock:
            found: list[Listing] = [(o.id, tuple(sorted(o.keys)), o.owner) for o in self._owned]
            for session in sessions.values():
                union: frozenset[str] = session.data.get(self.family.union_key, frozenset())
                if union:
                    found.append((None, tuple(sorted(union)), session))
        return found

    def targets_locked(self, key: str) -> list[Target]:
        """Where a push for ``key`` goes right now; call with the lock held."""
        if self.mode == "owned":
            return [(o.owner, o.id) for o in self._owned if key in o.keys]
        if self.mode == "union":
            targets: list[Target] = []
            for session in self.core.sessions().values():  # the core lock is a leaf below this one
                if key in session.data.get(self.family.union_key, frozenset()):
                    targets.extend((c, None) for c in self.core.session_connections(session) if c.handshaken)
            return targets
        return [(c, None) for c in self.core.connections(handshaken_only=True)]

    def _on_release(self, connection: Peer, subscription_id: str) -> None:
        """Directory release hook (capable): drop the subscription, then write what was queued
        for it, so the release response comes after its last frame."""
        with self._lock:
            self._owned = [o for o in self._owned if not (o.id == subscription_id and o.owner is connection)]
            ticket = self._outbox.last_ticket_locked()
        self._outbox.drain(ticket)

    def _on_disconnect(self, connection: Peer) -> None:
        with self._lock:
            self._owned = [o for o in self._owned if o.owner is not connection]

    def _handle_set_subscription(self, ctx: RequestContext) -> None:
        field = self.family.field
        keys = ctx.message[field]
        if string_list(keys) is None:
            ctx.rpc_error(f"Invalid {field}: expected an array of strings", "invalid_message")
            return
        body: dict[str, Any] = {field: list(keys)} if self.family.echo else {}
        with self._lock:
            if self.mode == "owned" or ctx.session is None:
                owned = _Owned(str(uuid.uuid4()), frozenset(keys), ctx.connection)
                self._owned.append(owned)
                body["subscriptionId"] = owned.id
            else:
                ctx.session.data[self.family.union_key] = frozenset(keys)
            ticket = self._outbox.enqueue_locked(lambda: ctx.reply(body))
        self._outbox.drain(ticket)
