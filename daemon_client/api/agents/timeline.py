"""``agent.timeline``: follow one agent's timeline live, read its history, or pull a stream.

``subscribe`` and ``stream`` register demand through :mod:`daemon_client.subscriptions.timeline`;
``refetch`` and ``pages`` are blocking reads on the caller's thread. A failed read raises
for that read only: live delivery goes on.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import attrs

from daemon_client.errors import ClientClosed, ProtocolError
from daemon_client.protocol.requests import agents as agents_requests
from daemon_client.protocol.timeline import (
    SubscriptionError,
    TimelineCursor,
    TimelinePage,
    TimelineUpdate,
)
from daemon_client.subscriptions.timeline import TimelineHandler, TimelineManager, TimelineSubscription

if TYPE_CHECKING:
    from daemon_client.protocol.agents import AgentSnapshot
    from daemon_client.runtime.context import ClientContext
    from daemon_client.runtime.dispatch import Dispatcher

DIRECTIONS = ("tail", "before", "after")
PROJECTIONS = ("projected", "canonical")
MAX_RESTARTS = 5
"""How many resets in a row a ``pages("after")`` walk follows before it gives up."""


class AgentTimeline:
    """The timeline of one agent: ``handle.timeline``."""

    def __init__(
        self,
        agent_id: str,
        note_snapshot: Callable[[AgentSnapshot], None],
        manager: TimelineManager,
        context: ClientContext,
    ) -> None:
        self._agent_id = agent_id
        self._note_snapshot = note_snapshot
        self._manager = manager
        self._context = context

    def subscribe(self, handler: TimelineHandler) -> TimelineSubscription:
        """Follow the agent's timeline: ``handler(update)`` runs on the callback thread for
        every event of this agent, in order, plus the local events
        ``subscription_restored`` (after a reconnect, before later events), ``replacement``
        (history replaced under a new epoch) and ``error`` (establishment failed; the
        subscription is then released — subscribe again to retry).

        Each call creates its own subscription. Returns at once; ``ready`` tells when the
        daemon acknowledged the demand. Before ``connect()`` it waits for the connection.
        """
        return self._manager.subscribe(self._agent_id, handler)

    def refetch(
        self,
        direction: str | None = None,
        cursor: TimelineCursor | None = None,
        limit: int | None = None,
        projection: str | None = None,
        *,
        timeout: float | None = None,
    ) -> TimelinePage:
        """Read history (``fetch_agent_timeline_request``); blocks up to ``timeout`` (30 s).

        ``direction``: ``"tail"`` (newest), ``"before"`` or ``"after"`` a ``cursor``
        (default: ``after`` with a cursor, else ``tail``). ``limit`` 0 means every row;
        ``projection``: ``"projected"`` (merged, the default) or ``"canonical"``. Never infer
        the end of history from a short page: use ``has_older``/``has_newer``. Raises
        ``RpcError`` if the daemon reports an error.
        """
        if direction is not None and direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {', '.join(DIRECTIONS)}")
        if projection is not None and projection not in PROJECTIONS:
            raise ValueError(f"projection must be one of {', '.join(PROJECTIONS)}")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise ValueError("limit must be an integer >= 0 (0 reads every row)")
        message: dict[str, Any] = {"agentId": self._agent_id}
        if direction is not None:
            message["direction"] = direction
        if cursor is not None:
            message["cursor"] = cursor.to_wire()
        if limit is not None:
            message["limit"] = limit
        if projection is not None:
            message["projection"] = projection
        page: TimelinePage = self._context.call(agents_requests.FETCH_TIMELINE, message, timeout)
        if page.agent is not None:
            self._note_snapshot(page.agent)
        return page

    def pages(
        self,
        direction: str = "before",
        cursor: TimelineCursor | None = None,
        limit: int = 100,
        projection: str | None = None,
        *,
        timeout: float | None = None,
    ) -> Iterator[TimelinePage]:
        """Walk the history page by page following the daemon's cursors.

        ``"before"`` walks from ``cursor`` (default: the newest rows) back to the oldest;
        ``"after"`` walks forward from ``cursor`` (default: the oldest rows) to the newest.

        A read the daemon answers with ``reset`` (the cursor's epoch is gone: ``stale_cursor``;
        or, ``after``, rows after the cursor were trimmed: ``gap``) means: drop what you hold.
        Walking ``before``, that page (the newest rows) is yielded and the walk goes on to the
        oldest row. Walking ``after``, the walk restarts from the oldest row the daemon still
        holds for that page's epoch (``window.min_seq``): the daemon's tail page is not
        yielded; the first page of the restarted walk is, with ``reset`` set and the daemon's
        ``stale_cursor``/``gap``, and the walk goes on to the newest row. So a consumer that
        replaces what it holds on ``reset`` ends with every row of the epoch. This holds
        whenever a reset happens, also when the history is replaced in the middle of a walk.
        After :data:`MAX_RESTARTS` resets in a row the walk raises ``ProtocolError``.
        """
        if direction not in ("before", "after"):
            raise ValueError("pages() walks 'before' (older) or 'after' (newer)")
        if cursor is None and direction == "after":  # start before the oldest row of the current epoch
            probe = self.refetch("tail", None, 1, projection, timeout=timeout)
            cursor = TimelineCursor(probe.epoch, max(0, probe.window.min_seq - 1))
        page = self.refetch(direction if cursor else "tail", cursor, limit, projection, timeout=timeout)
        while True:
            if direction == "after" and page.reset:
                page = self._restart_after(page, limit, projection, timeout)
            yield page
            if direction == "before":
                if not page.has_older or page.start_cursor is None:
                    return
                page = self.refetch("before", page.start_cursor, limit, projection, timeout=timeout)
            else:
                if not page.has_newer or page.end_cursor is None:
                    return
                page = self.refetch("after", page.end_cursor, limit, projection, timeout=timeout)

    def _restart_after(
        self, reset: TimelinePage, limit: int, projection: str | None, timeout: float | None
    ) -> TimelinePage:
        """The first page of an ``after`` walk restarted from the oldest row the daemon holds
        for the epoch of ``reset`` (a page it reset), marked ``reset`` as the daemon's was."""
        for _ in range(MAX_RESTARTS):
            start = TimelineCursor(reset.epoch, max(0, reset.window.min_seq - 1))
            page = self.refetch("after", start, limit, projection, timeout=timeout)
            if not page.reset:
                return attrs.evolve(page, reset=True, stale_cursor=reset.stale_cursor, gap=reset.gap)
            reset = page  # trimmed or replaced again meanwhile: restart from the new window
        raise ProtocolError(
            f"the timeline of {self._agent_id} was reset {MAX_RESTARTS + 1} times in a row while reading it"
        )

    def stream(self, timeout: float | None = None) -> TimelineStream:
        """A blocking iterator over live updates, for scripts that prefer pulling.

        ``for update in agent.timeline.stream(timeout=30): ...`` — each step waits up to
        ``timeout`` seconds (``None``: until the client closes) and ends the iteration when
        nothing arrives in time. Use it as a context manager to release the demand.
        """
        return TimelineStream(self, timeout, self._context.dispatcher)


class TimelineStream:
    """Live updates of one agent pulled on the caller's thread (see ``AgentTimeline.stream``)."""

    def __init__(self, timeline: AgentTimeline, timeout: float | None, dispatcher: Dispatcher) -> None:
        self._queue: queue.SimpleQueue[TimelineUpdate] = queue.SimpleQueue()
        self._timeout = timeout
        self._dispatcher = dispatcher
        self._ended = threading.Event()
        self.subscription = timeline.subscribe(self._queue.put)

    def __iter__(self) -> Iterator[TimelineUpdate]:
        while True:
            update = self.next(self._timeout)
            if update is None:
                return
            yield update

    def next(self, timeout: float | None = None) -> TimelineUpdate | None:
        """The next update, or ``None`` after ``timeout`` s or once the stream ended."""
        self._dispatcher.check_can_wait("a timeline stream")
        if self._ended.is_set() and self._queue.empty():
            return None
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = 0.5 if deadline is None else max(0.0, min(0.5, deadline - time.monotonic()))
            try:
                update = self._queue.get(timeout=wait)
            except queue.Empty:
                if self._ended.is_set() or (deadline is not None and time.monotonic() >= deadline):
                    return None
                continue
            if isinstance(update.event, SubscriptionError):
                self._ended.set()
                if isinstance(update.event.exception, ClientClosed):
                    raise update.event.exception
            return update

    def close(self) -> None:
        """Release the demand (waits for the teardown)."""
        self._ended.set()
        self.subscription.release()

    def __enter__(self) -> TimelineStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
