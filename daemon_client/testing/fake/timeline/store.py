"""Agent timelines of the fake daemon (``fake.timeline``): history, live streaming, reads.

Owns, per agent, the canonical rows (``seq`` from 1 without gaps under one ``epoch``,
protocol.md 6.1 and 6.9), their live delivery as ``agent_stream`` frames, the server-side
timeline subscriptions of each host kind (protocol.md 6.6), ``agent.timeline.replacement``
and the ``fetch_agent_timeline_request`` handler (6.8, computed by
:mod:`daemon_client.testing.fake.timeline.query`):

- capable hosts: ``agent.timeline.set_subscription.request`` creates an independent
  subscription owned by the socket; its frames are tagged with ``payload.subscriptionId``; a
  ``subscription.release.request`` (through the directory's release hook) or the end of the
  socket releases it;
- selective hosts (``features.selectiveAgentTimeline``): the request replaces the session's
  agent union; untagged frames go to every socket of a session whose union holds the agent;
  the union lives as long as the server-side session;
- broadcast hosts: no membership request (``unknown_schema``); every frame goes to every
  handshaken socket, untagged.

Test threads, run threads (``fake-daemon-run-*``) and connection reader threads call in.
:attr:`FakeTimeline.lock` guards the state; frames are queued in order on an
:class:`~daemon_client.testing.fake.engine.outbox.Outbox` while it is held and written after it is
released: each caller drains the queue until its own frames are written, so a method returns
only once its frames are on the wire, and frames keep queue order. No frame is sent under the lock.
"""

from __future__ import annotations

import copy
import threading
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.requests import agents as agents_requests
from daemon_client.protocol.requests import subscriptions as subscriptions_requests
from daemon_client.testing.fake.directory.query import QueryError
from daemon_client.testing.fake.engine.handlers import iso_now
from daemon_client.testing.fake.engine.outbox import Outbox, SubscriptionFamily, SubscriptionTable, fanout
from daemon_client.testing.fake.timeline.query import (
    Row,
    canonical_entries,
    parse_timeline_query,
    project,
    select_window,
    trailing_assistant_text,
)

if TYPE_CHECKING:
    from daemon_client.testing.fake.directory.observations import FakeDirectory
    from daemon_client.testing.fake.engine.core import DaemonCore
    from daemon_client.testing.fake.engine.handlers import HandlerRegistry, RequestContext
    from daemon_client.testing.fake.engine.peer import Peer, Session

__all__ = ["FakeTimeline", "TimelineSubscription"]

_SUBSCRIPTIONS = SubscriptionFamily(spec=subscriptions_requests.TIMELINE_MEMBERSHIP, field="agentIds", echo=True,
                                    union_key="timeline_union")  # fmt: skip


@attrs.frozen
class TimelineSubscription:
    """A live server-side timeline subscription, as :meth:`FakeTimeline.subscriptions` shows it."""

    id: str | None
    """The daemon-issued id (capable); ``None`` for a selective session's union."""
    agent_ids: tuple[str, ...]
    owner: Peer | Session
    """The owning socket (capable) or server-side session (selective)."""
    host_kind: HostKind


@attrs.define(eq=False)
class _History:
    epoch: str
    rows: list[Row] = attrs.field(factory=list)
    next_seq: int = 1


class FakeTimeline:
    """Timelines, timeline subscriptions and their handlers of one fake daemon (``fake.timeline``)."""

    def __init__(self, core: DaemonCore, directory: FakeDirectory) -> None:
        self.core = core
        self.directory = directory
        self.host_kind: HostKind = core.config.host_kind
        self.lock = threading.Lock()
        self._histories: dict[str, _History] = {}
        self._outbox = Outbox(self.lock, "timeline")
        self._subscriptions = SubscriptionTable(core, self.lock, self._outbox, _SUBSCRIPTIONS)

    # -- wiring --------------------------------------------------------------------------------

    def install(self, registry: HandlerRegistry) -> None:
        """Register the read handler and, unless broadcast, the membership handler and hooks."""
        kind, features = self.core.config.host_kind, self.core.config.effective_features
        registry.serve(agents_requests.FETCH_TIMELINE, self._handle_fetch, host_kind=kind, features=features)
        self._subscriptions.install(registry, self.directory)

    # -- history -------------------------------------------------------------------------------

    def append(self, agent_id: str, item: Mapping[str, Any], *, provider: str = "mock",
               turn_id: str | None = None) -> int:  # fmt: skip
        """Record a canonical row and stream it as a ``timeline`` event; returns its ``seq``.

        ``turn_id`` adds ``turnId`` to the row and the event (current daemons only).
        """
        with self.lock:
            history = self._history_locked(agent_id)
            seq = history.next_seq
            history.next_seq += 1
            row: Row = {"provider": provider, "item": copy.deepcopy(dict(item)), "timestamp": iso_now(),
                        "seq": seq, "epoch": history.epoch}  # fmt: skip
            if turn_id is not None:
                row["turnId"] = turn_id
            history.rows.append(row)
            event: dict[str, Any] = {"type": "timeline", "provider": provider}
            if turn_id is not None:
                event["turnId"] = turn_id
            event["item"] = copy.deepcopy(row["item"])
            payload = {"agentId": agent_id, "event": event, "timestamp": row["timestamp"], "seq": seq,
                       "epoch": history.epoch}  # fmt: skip
            ticket = self._queue_stream_locked(agent_id, payload)
        self._outbox.drain(ticket)
        return seq

    def emit(self, agent_id: str, event: Mapping[str, Any], *, provider: str = "mock") -> None:
        """Stream a non-timeline event (``turn_*``, ``attention_required``, ``permission_*``)
        without ``seq``/``epoch``; ``provider`` is added to the event unless it has one."""
        body = dict(event)
        full: dict[str, Any] = {"type": body.pop("type"), "provider": body.pop("provider", provider), **body}
        with self.lock:
            payload = {"agentId": agent_id, "event": copy.deepcopy(full), "timestamp": iso_now()}
            ticket = self._queue_stream_locked(agent_id, payload)
        self._outbox.drain(ticket)

    def rows(self, agent_id: str) -> list[Row]:
        """Copies of the agent's canonical rows held in memory, oldest first."""
        with self.lock:
            history = self._histories.get(agent_id)
            return copy.deepcopy(history.rows) if history is not None else []

    def epoch(self, agent_id: str) -> str:
        """The agent's current epoch (a new timeline starts empty under a fresh uuid4)."""
        with self.lock:
            return self._history_locked(agent_id).epoch

    def last_message(self, agent_id: str) -> str | None:
        """The trailing ``assistant_message`` chunks joined without separator, or ``None``."""
        with self.lock:
            history = self._histories.get(agent_id)
            return trailing_assistant_text(history.rows) if history is not None else None

    def trim(self, agent_id: str, keep_last: int) -> None:
        """Forget all but the newest ``keep_last`` rows (``window.minSeq`` moves; seq is kept)."""
        with self.lock:
            history = self._history_locked(agent_id)
            history.rows = history.rows[-keep_last:] if keep_last > 0 else []

    def replace_history(self, agent_id: str, items: Iterable[Mapping[str, Any]] | None = None, *,
                        provider: str = "mock") -> str:  # fmt: skip
        """Start a new epoch (uuid4) whose rows are ``items`` (default: the current rows'
        items), numbered from 1; returns the epoch. Capable hosts send
        ``agent.timeline.replacement`` to each subscription of the agent; other hosts send nothing.
        """
        with self.lock:
            history = self._history_locked(agent_id)
            epoch = str(uuid.uuid4())
            if items is None:
                rows = [{**row, "seq": n, "epoch": epoch} for n, row in enumerate(history.rows, 1)]
            else:
                now = iso_now()
                rows = [{"provider": provider, "item": copy.deepcopy(dict(item)), "timestamp": now, "seq": n,
                         "epoch": epoch} for n, item in enumerate(items, 1)]  # fmt: skip
            history.epoch, history.rows, history.next_seq = epoch, rows, len(rows) + 1
            ticket = 0
            owned = self._subscriptions.mode == "owned"
            for target in self._subscriptions.targets_locked(agent_id) if owned else []:
                body = {"agentId": agent_id, "epoch": epoch}
                ticket = self._outbox.enqueue_locked(fanout([target], "agent.timeline.replacement", body))
        self._outbox.drain(ticket)
        return epoch

    def _history_locked(self, agent_id: str) -> _History:
        history = self._histories.get(agent_id)
        if history is None:
            history = self._histories[agent_id] = _History(str(uuid.uuid4()))
        return history

    # -- subscriptions ---------------------------------------------------------------------------

    def subscriptions(self) -> list[TimelineSubscription]:
        """Live server-side timeline subscriptions: capable ones in creation order, then each
        live selective session with a non-empty union. Broadcast hosts have none."""
        return [TimelineSubscription(*listed, self.host_kind) for listed in self._subscriptions.listing()]

    # -- ordered delivery ------------------------------------------------------------------------

    def _queue_stream_locked(self, agent_id: str, payload: dict[str, Any]) -> int:
        targets = self._subscriptions.targets_locked(agent_id)
        return self._outbox.enqueue_locked(fanout(targets, "agent_stream", payload))

    def wait_idle(self, timeout: float = 5.0) -> None:
        """Block until every queued timeline frame has been written."""
        self._outbox.wait_idle(timeout)

    # -- handlers ------------------------------------------------------------------------------

    def _handle_fetch(self, ctx: RequestContext) -> None:
        message = ctx.message
        try:
            query = parse_timeline_query(message)
        except QueryError as error:
            ctx.rpc_error(error.message, error.code)
            return
        agent_id = message["agentId"]
        agent = self.directory.agents.get(agent_id) if isinstance(agent_id, str) else None
        head: dict[str, Any] = {"agentId": agent_id}
        if agent is None:
            ctx.reply({**head, "agent": None, "direction": query.direction, "projection": query.projection,
                       "epoch": "", "reset": False, "staleCursor": False, "gap": False,
                       "window": {"minSeq": 0, "maxSeq": 0, "nextSeq": 0}, "startCursor": None, "endCursor": None,
                       "hasOlder": False, "hasNewer": False, "entries": [],
                       "error": f"Agent not found: {agent_id}"})  # fmt: skip
            return
        with self.lock:
            history = self._history_locked(agent_id)
            rows, epoch, next_seq = list(history.rows), history.epoch, history.next_seq
        window = select_window(rows, epoch, next_seq, query)
        if query.projection == "canonical":
            entries = canonical_entries(window.rows)
        else:
            capabilities = (ctx.connection.hello or {}).get("capabilities") or {}
            entries = project(window.rows, reasoning_merge_enum=capabilities.get("reasoning_merge_enum") is True)
        chosen = window.rows
        ctx.reply({**head, "agent": agent, "direction": query.direction, "projection": query.projection,
                   "epoch": epoch, "reset": window.reset, "staleCursor": window.stale_cursor, "gap": window.gap,
                   "window": {"minSeq": rows[0]["seq"] if rows else 0, "maxSeq": rows[-1]["seq"] if rows else 0,
                              "nextSeq": next_seq},
                   "startCursor": {"epoch": epoch, "seq": chosen[0]["seq"]} if chosen else None,
                   "endCursor": {"epoch": epoch, "seq": chosen[-1]["seq"]} if chosen else None,
                   "hasOlder": window.has_older, "hasNewer": window.has_newer, "entries": entries,
                   "error": None})  # fmt: skip
