"""Timeline subscriptions: the membership family of ``agent.timeline.set_subscription``
(protocol.md 6.6, 6.7), its handle, and the routing of ``agent_stream`` and
``agent.timeline.replacement`` frames, and what flow control does for a lagging handle (a
local ``lagged`` event naming the skipped seq range, before the next live frame).

The generic establishment, restore and release logic lives in
:mod:`daemon_client.subscriptions.membership`. Routing runs on the reader thread; handlers run on the
callback thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from daemon_client.protocol.models import SessionMessage
from daemon_client.protocol.requests import subscriptions as subscriptions_requests
from daemon_client.protocol.stream_payload import parse_stream_payload, restamp
from daemon_client.protocol.timeline import (
    Lagged,
    Replacement,
    SubscriptionError,
    SubscriptionRestored,
    TimelineUpdate,
)
from daemon_client.subscriptions.flow import Lag, LagSummary
from daemon_client.subscriptions.membership import (
    Membership,
    MembershipAck,
    MembershipFamily,
    MembershipManager,
    State,
    deliver,
)

_log = logging.getLogger("daemon_client.api.agents.timeline")
TimelineHandler = Callable[[TimelineUpdate], object]
_LIVE = State.LIVE
TimelineAck = MembershipAck
TIMELINE = MembershipFamily(
    name="timeline",
    request_type=subscriptions_requests.TIMELINE_MEMBERSHIP.type,
    key_field="agentIds",
    union_feature="selectiveAgentTimeline",
    key_in_payload="agentId",
)


class TimelineSubscription(Membership):
    """One handle's demand for one agent's timeline (``agent.timeline.subscribe(handler)``).

    ``ready`` resolves on this handle's own acknowledgement; ``subscription_id`` changes
    on every re-establishment. Calling the object releases it without waiting;
    ``release()`` waits for the teardown. Also a context manager.
    """

    def __init__(self, manager: TimelineManager, agent_id: str, handler: TimelineHandler) -> None:
        super().__init__(manager, agent_id)
        self._handler = handler

    @property
    def agent_id(self) -> str:
        return self.key

    def _emit(self, update: TimelineUpdate) -> None:
        self._manager.dispatcher.errors.call_isolated(self._handler, update)

    def _deliver_one(self, message: SessionMessage, generation: int) -> None:
        """The hot path of a live stream (a frame for this handle alone): parsed here, on the
        callback thread, and handed to the handler (only ``agent_stream`` frames come here:
        replacements are forced through ``_deliver``)."""
        if self.state is not _LIVE or self.generation != generation:
            return
        try:
            update = parse_stream_payload(message.payload, self.subscription_id)
        except Exception as exc:  # noqa: BLE001 - a bad payload, not user code
            _log.warning("unreadable agent_stream frame skipped: %s", exc)
            return
        handler = self._handler
        try:
            handler(update)
        except BaseException as exc:  # noqa: BLE001 - isolation is the point
            self._manager.dispatcher.errors.report(exc, handler)

    def _parse_frame(self, message: SessionMessage) -> TimelineUpdate:
        return parse_stream_payload(message.payload, self.subscription_id)

    def _on_frame(self, message: SessionMessage, parsed: Callable[[], Any]) -> None:
        if message.type == "agent.timeline.replacement":
            epoch = str(message.payload.get("epoch", ""))
            self._emit(TimelineUpdate(self.key, Replacement(epoch), subscription_id=self.subscription_id))
            return
        try:
            update: TimelineUpdate = parsed()
        except Exception as exc:  # noqa: BLE001 - a bad payload, not user code
            _log.warning("unreadable agent_stream frame skipped: %s", exc)
            return
        if update.subscription_id != self.subscription_id:  # shared by several handles of one agent
            update = restamp(update, self.subscription_id)
        self._emit(update)

    def _skipped(self, lag: Lag, message: SessionMessage) -> None:
        """Reader thread: a skipped ``agent_stream`` frame; rows by seq, other events by type."""
        payload = message.payload
        seq, epoch = payload.get("seq"), payload.get("epoch")
        if isinstance(seq, int) and not isinstance(seq, bool) and isinstance(epoch, str):
            lag.record(seq=seq, epoch=epoch)
            return
        event = payload.get("event")
        kind = event.get("type") if isinstance(event, dict) else None
        lag.record(kind=kind if isinstance(kind, str) else message.type)

    def _recover(self, summary: LagSummary) -> None:
        """Under the lag's lock: the ``lagged`` event goes before the next live frame."""
        lagged = Lagged(summary.dropped, summary.first_seq, summary.last_seq, summary.epoch, summary.skipped_types)
        self._manager.dispatcher.post_in_order(lambda: self._on_lagged(lagged))

    def _on_lagged(self, lagged: Lagged) -> None:
        if not self.released:
            self._emit(TimelineUpdate(self.key, lagged, subscription_id=self.subscription_id, epoch=lagged.epoch))

    def _on_restored(self) -> None:
        if self.state is State.LIVE:
            self._emit(TimelineUpdate(self.key, SubscriptionRestored(), subscription_id=self.subscription_id))

    def _on_failed(self, error: BaseException) -> None:
        self._emit(TimelineUpdate(self.key, SubscriptionError(str(error), exception=error)))


class TimelineManager(MembershipManager[TimelineSubscription]):
    """Every timeline subscription of one client."""

    def subscribe(self, agent_id: str, handler: TimelineHandler) -> TimelineSubscription:
        return self.add(TimelineSubscription(self, agent_id, handler))

    def route_replacement(self, message: SessionMessage) -> None:
        """Reader thread: ``agent.timeline.replacement``, by tag when present, else by ``agentId``."""
        payload = message.payload
        targets = self.targets(str(payload.get("agentId", "")), payload.get("subscriptionId"), by_key_if_untagged=True)
        for sub in targets:  # never skipped: a lag is announced before it
            self.post_forced(sub, lambda sub=sub, gen=sub.generation: deliver(sub, message, lambda: None, gen))  # type: ignore[misc]
