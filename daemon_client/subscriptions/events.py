"""Event subscriptions: the membership family of ``session.events.set_subscription``
(protocol.md 7.3, 8.1) and its handle.

Providers and projects observe their pushes through it. Under flow control a lagging
subscription either coalesces (the newest skipped push is delivered: provider catalogs) or
resynchronises through ``on_restored`` (projects re-list). Establishment, restore and
release follow :mod:`daemon_client.subscriptions.membership`; routing runs on the reader thread and
handlers on the callback thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from daemon_client.protocol.models import SessionMessage
from daemon_client.protocol.requests import subscriptions as subscriptions_requests
from daemon_client.subscriptions.flow import Lag, LagSummary
from daemon_client.subscriptions.lifecycle import SubscriptionLink
from daemon_client.subscriptions.membership import Membership, MembershipFamily, MembershipManager, deliver

_log = logging.getLogger("daemon_client.subscriptions.events")
EVENTS = MembershipFamily(
    name="event",
    request_type=subscriptions_requests.SESSION_EVENTS.type,
    key_field="events",
    union_feature="explicitEventSubscriptions",
)


class EventSubscription(Membership):
    """A subscription to one daemon event stream (e.g. ``providers_snapshot_update``).

    ``handler(value)`` gets each event, parsed, on the callback thread. ``on_restored()``
    runs after each re-establishment following a reconnect (events sent while
    disconnected are lost: re-read what you need); ``on_error(exc)`` when establishment
    fails (the subscription is then released) or the client closes.
    """

    def __init__(
        self,
        manager: EventManager,
        event: str,
        handler: Callable[[Any], object],
        *,
        on_restored: Callable[[], object] | None = None,
        on_error: Callable[[BaseException], object] | None = None,
        coalesce: bool = False,
        parse: Callable[[dict[str, Any]], Any] | None = None,
    ) -> None:
        super().__init__(manager, event)
        self._events = manager
        self._parse = parse
        self._handler = handler
        self._coalesce = coalesce
        self._restored_cb = on_restored
        self._error_cb = on_error

    @property
    def event(self) -> str:
        return self.key

    def _on_frame(self, message: SessionMessage, parsed: Callable[[], Any]) -> None:
        try:
            value = parsed()
        except Exception as exc:  # noqa: BLE001 - a bad payload, not user code
            _log.warning("unreadable %s skipped: %s", message.type, exc)
            return
        self._manager.dispatcher.errors.call_isolated(self._handler, value)

    def _parse_frame(self, message: SessionMessage) -> Any:
        """By the parser of the frame's type (a frame is routed only if its type has one)."""
        return self._events._parsers[message.type](message.payload)

    def _skipped(self, lag: Lag, message: SessionMessage) -> None:
        lag.record(kind=message.type)
        lag.newest = message

    def _recover(self, summary: LagSummary) -> None:
        """Under the lag's lock: a coalescing stream gets the newest skipped push; any other
        resynchronises through ``on_restored`` (e.g. the project cache re-lists)."""
        post = self._manager.dispatcher.post_in_order
        newest = summary.newest
        parse = self._parse
        if self._coalesce and parse is not None and isinstance(newest, SessionMessage):
            post(lambda gen=self.generation: deliver(self, newest, lambda: parse(newest.payload), gen))  # type: ignore[misc]
        else:
            post(self._on_restored)

    def _restore_covers_lag(self) -> bool:
        """A resynchronising stream's lag notice is ``on_restored`` itself: one call covers both."""
        return not (self._coalesce and self._parse is not None)

    def _on_restored(self) -> None:
        if self._restored_cb is not None and not self.released:
            self._manager.dispatcher.errors.call_isolated(self._restored_cb)

    def _on_failed(self, error: BaseException) -> None:
        if self._error_cb is not None:
            self._manager.dispatcher.errors.call_isolated(self._error_cb, error)


class EventManager(MembershipManager[EventSubscription]):
    """Every event subscription of one client; events are routed by message type."""

    def __init__(self, link: SubscriptionLink) -> None:
        super().__init__(EVENTS, link)
        self._parsers: dict[str, Callable[[dict[str, Any]], Any]] = {}

    def subscribe(
        self,
        event: str,
        handler: Callable[[Any], object],
        parse: Callable[[dict[str, Any]], Any],
        *,
        on_restored: Callable[[], object] | None = None,
        on_error: Callable[[BaseException], object] | None = None,
        coalesce: bool = False,
    ) -> EventSubscription:
        """``coalesce``: each push holds the whole state, so a lagging subscription gets only
        the newest skipped one; otherwise it resynchronises through ``on_restored``."""
        self._parsers[event] = parse
        return self.add(
            EventSubscription(
                self, event, handler, on_restored=on_restored, on_error=on_error, coalesce=coalesce, parse=parse
            )
        )

    def route_event(self, message: SessionMessage) -> None:
        """Reader thread: a push of a subscribable event type."""
        if message.type in self._parsers:
            self.route(message, message.type)
