"""How a turn ended, observed on the agent's timeline while ``run()``/``wait_for_finish()`` wait.

``wait_for_finish_response`` says only ``idle`` for a turn that completed and for one that was
canceled (from another thread, another client or the app). The ``turn_completed`` /
``turn_failed`` / ``turn_canceled`` event tells them apart, and the daemon streams it before it
answers the wait (transcript 04 L192-L194). A :class:`TurnObserver` holds timeline demand for
the agent during the wait (so that capable and selective hosts stream to this client) and
watches the pushes on the reader thread, in order with the reply, for the first turn end.

Threads: the observer is opened and closed on the caller's thread; its predicate runs on the
reader thread and only records what it saw.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from types import TracebackType
from typing import TYPE_CHECKING, Any

from daemon_client.errors import DaemonClientError
from daemon_client.protocol.models import SessionMessage

if TYPE_CHECKING:
    from daemon_client.runtime.context import ClientContext
    from daemon_client.subscriptions.timeline import TimelineHandler, TimelineSubscription

_log = logging.getLogger("daemon_client.turns")

OUTCOMES: Mapping[str, str] = {
    "turn_completed": "completed",
    "turn_failed": "failed",
    "turn_canceled": "canceled",
}
"""The turn-end event types and the ``RunResult.outcome`` each gives."""

READY_WAIT = 15.0
"""How long an observer waits for its timeline demand to be acknowledged before it gives up
observing (the run goes on; its outcome is then ``None``)."""


class TurnObserver:
    """Watches one agent's timeline for the end of a turn (a context manager).

    ``after_start``: count only a turn whose ``turn_started`` is seen (``run()``: a turn the
    prompt interrupts ends before the new one starts). Otherwise the first turn end counts
    (``wait_for_finish()``: the turn may have started before the wait).
    """

    def __init__(
        self,
        context: ClientContext,
        subscribe: Callable[[TimelineHandler], TimelineSubscription],
        agent_id: str,
        *,
        after_start: bool,
    ) -> None:
        self._context = context
        self._subscribe = subscribe
        self._agent_id = agent_id
        self._after_start = after_start
        self._started = False
        self._subscription: TimelineSubscription | None = None
        self._ended: Future[SessionMessage] | None = None
        self._cancel: Callable[[], None] | None = None

    def __enter__(self) -> TurnObserver:
        if self._context.server_info is None:
            return self  # not connected: the request itself will say so; nothing to observe
        self._ended, self._cancel = self._context.watch(("agent_stream",), self._is_end)
        try:
            self._subscription = self._subscribe(_ignore)
            self._subscription.ready.result(READY_WAIT)
        except (DaemonClientError, FutureTimeout) as exc:
            _log.debug("not observing the turn of %s: %s", self._agent_id, exc)
            self.close()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop watching and release the demand (without waiting for the daemon)."""
        if self._cancel is not None:
            self._cancel()
            self._cancel = None
        if self._subscription is not None:
            self._subscription()
            self._subscription = None

    def _is_end(self, message: SessionMessage) -> bool:
        """Reader thread: whether this push ends the observed turn."""
        payload = message.payload
        if payload.get("agentId") != self._agent_id:
            return False
        event = payload.get("event")
        kind = event.get("type") if isinstance(event, Mapping) else None
        if kind == "turn_started":
            self._started = True
            return False
        return kind in OUTCOMES and (self._started or not self._after_start)

    def outcome(self, status: str) -> str | None:
        """``"completed"``, ``"failed"`` or ``"canceled"`` when a turn end was seen and the wait
        ended with the turn (``status`` ``idle`` or ``error``); else ``None``."""
        ended = self._ended
        if status not in ("idle", "error") or ended is None or not ended.done():
            return None
        event = ended.result().payload.get("event")
        return OUTCOMES.get(str(event.get("type"))) if isinstance(event, Mapping) else None


class NoObserver:
    """The observer of a wait that does not observe (``observe=False``): the outcome is ``None``."""

    def __enter__(self) -> NoObserver:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def outcome(self, status: str) -> str | None:
        return None


def _ignore(update: Any) -> None:
    """The timeline handler of an observer: the demand matters, the updates are watched elsewhere."""
