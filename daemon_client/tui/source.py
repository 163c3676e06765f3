"""What the dashboard follows: a :class:`~daemon_client.fleet.Fleet`, its directory, and each agent's timeline.

:class:`FleetSource` is made and started on the application's loop thread
(:meth:`FleetSource.start`, from ``on_mount``): the fleet's callback executor is an
:func:`~daemon_client.gui.asyncio_executor` of that loop, so every client callback (directory
events, timeline updates, state changes, request futures) runs there, where it changes rows and
feeds and marks them dirty; it never waits for the application. Connecting and the first read
block, so they run on one thread of the source's own (``top-open``), which hands the directory
back to the loop without waiting. :meth:`FleetSource.close` blocks (bounded): the application
calls it from a thread once it ends.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from daemon_client.errors import DaemonClientError
from daemon_client.fleet import Fleet, FleetDirectory, FleetEvent
from daemon_client.gui.asyncio_loop import AsyncioExecutor, asyncio_executor, wrap
from daemon_client.protocol.timeline import TimelineUpdate
from daemon_client.state import ConnectionState
from daemon_client.tui.feed import AgentFeed
from daemon_client.tui.rows import AgentRow, apply_snapshot, row_from, row_key, split_key

if TYPE_CHECKING:
    from daemon_client.api.agents.handle import AgentHandle
    from daemon_client.protocol.agents import AgentSnapshot
    from daemon_client.subscriptions.timeline import TimelineSubscription

_log = logging.getLogger("daemon_client.tui")
FleetFactory = Callable[[AsyncioExecutor], Fleet]
"""``make(executor)``: the fleet to follow, its callbacks on ``executor`` (not connected yet)."""
FOLLOWED = 200
"""Agents whose timelines are followed live (the table's last line); the others show none."""
OPEN_TIMEOUT = 15.0
PING_TIMEOUT = 3.0


class FleetSource:
    """See the module docstring. ``changed(keys)`` and ``host_changed(label)`` are the
    application's, called on the loop thread."""

    def __init__(
        self,
        make_fleet: FleetFactory,
        changed: Callable[[set[str]], None],
        host_changed: Callable[[str, ConnectionState, str], None],
        *,
        open_timeout: float = OPEN_TIMEOUT,
    ) -> None:
        self._make_fleet = make_fleet
        self._changed = changed
        self._host_changed = host_changed
        self._open_timeout = open_timeout
        self.rows: dict[str, AgentRow] = {}
        self.feeds: dict[str, AgentFeed] = {}
        self._subscriptions: dict[str, TimelineSubscription] = {}
        self.fleet: Fleet | None = None
        self.directory: FleetDirectory | None = None
        self.events = 0
        """Events received so far (directory and timelines)."""
        self.snapshots = 0
        """Directory snapshots received (one per host, then one per re-establishment or resync)."""
        self.open_error: BaseException | None = None
        self._executor: AsyncioExecutor | None = None
        self._removers: list[Callable[[], None]] = []
        self._opener: threading.Thread | None = None
        self._closed = threading.Event()

    # ------------------------------------------------------------------ loop thread
    def start(self) -> None:
        """Make the fleet (callbacks on this loop) and start connecting; never blocks."""
        self._executor = asyncio_executor()
        self.fleet = self._make_fleet(self._executor)
        self._removers.append(self.fleet.on_state_change(self._on_state))
        self._opener = threading.Thread(target=self._open, name="top-open", daemon=True)
        self._opener.start()

    def _on_state(self, host: str, old: ConnectionState, new: ConnectionState, reason: str) -> None:
        self._host_changed(host, new, reason)

    def _opened(self, directory: FleetDirectory) -> None:
        if self._closed.is_set():
            return
        self.directory = directory
        self._removers.append(directory.subscribe(self._on_event))

    def _on_event(self, event: FleetEvent) -> None:
        if self._closed.is_set():
            return
        self.events += 1
        if event.kind == "snapshot":
            self._snapshot(event)
        elif event.kind == "update" and event.update is not None:
            update = event.update.payload
            key = row_key(event.host, update.agent_id)
            if update.kind == "upsert" and update.agent is not None:
                self._upsert(event.host, update.agent, True)
            elif update.kind == "remove":
                self._remove(key)
            self._changed({key})
        elif event.kind == "unavailable":
            keys = {key for key, row in self.rows.items() if row.host == event.host}
            for key in keys:
                self.rows[key].available = False
            self._changed(keys)

    def _snapshot(self, event: FleetEvent) -> None:
        """A host's entries now (first read, reconnect, resync after skips): replace its rows."""
        self.snapshots += 1
        before = {key for key, row in self.rows.items() if row.host == event.host}
        seen: set[str] = set()
        for entry in event.entries:
            seen.add(self._upsert(event.host, entry.agent, entry.available))
        for key in before - seen:
            self._remove(key)
        self._changed(before | seen)

    def _upsert(self, host: str, agent: AgentSnapshot, available: bool) -> str:
        key = row_key(host, agent.id)
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = row_from(host, agent, available)
            feed = self.feeds[key] = AgentFeed()
            row.last_line = feed.last_line
            if len(self._subscriptions) < FOLLOWED:
                self._follow(key)
        else:
            apply_snapshot(row, agent, available)
        return key

    def _follow(self, key: str) -> None:
        host, agent_id = split_key(key)
        if self.fleet is None or self._closed.is_set():
            return
        try:
            handle = self.fleet.agents.ref(host, agent_id)
            self._subscriptions[key] = handle.timeline.subscribe(lambda update: self._on_timeline(key, update))
        except DaemonClientError as exc:  # a closed client: nothing to follow
            _log.info("top: cannot follow the timeline of %s: %s", agent_id, exc)

    def _remove(self, key: str) -> None:
        self.rows.pop(key, None)
        self.feeds.pop(key, None)
        subscription = self._subscriptions.pop(key, None)
        if subscription is not None:
            subscription()  # released without waiting

    def _on_timeline(self, key: str, update: TimelineUpdate) -> None:
        if self._closed.is_set():
            return
        self.events += 1
        feed, row = self.feeds.get(key), self.rows.get(key)
        if feed is None or row is None or not feed.apply(update):
            return
        if row.last_line != feed.last_line:
            row.last_line = feed.last_line
        self._changed({key})

    def post(self, fn: Callable[[], None]) -> None:
        """Any thread: run ``fn`` on the loop, after what is queued there (never blocks)."""
        if self._executor is not None:
            self._executor(fn)

    def handle(self, key: str) -> AgentHandle | None:
        if self.fleet is None:
            return None
        host, agent_id = split_key(key)
        try:
            return self.fleet.agents.ref(host, agent_id)
        except (KeyError, DaemonClientError):
            return None

    async def ping(self) -> dict[str, float]:
        """One ``ping`` per connected host, awaited on the loop; round trips by host."""
        found: dict[str, float] = {}
        if self.fleet is None:
            return found
        for label in self.fleet.hosts:
            client = self.fleet[label]
            if client.state is not ConnectionState.CONNECTED:
                continue
            started = time.monotonic()
            try:
                await wrap(client.request_async({"type": "ping", "clientSentAt": int(time.time() * 1000)},
                                                timeout=PING_TIMEOUT))  # fmt: skip
            except (DaemonClientError, TimeoutError):
                continue
            found[label] = time.monotonic() - started
        return found

    def relayed(self, label: str) -> bool:
        if self.fleet is None:
            return False
        connection = self.fleet[label].active_connection
        return connection is not None and connection.id.startswith("relay:")

    def dropped(self, label: str) -> int:
        if self.fleet is None:
            return 0
        try:
            return self.fleet[label].stats().dropped
        except DaemonClientError:
            return 0

    # ------------------------------------------------------------------ the opening thread
    def _open(self) -> None:
        fleet, executor = self.fleet, self._executor
        assert fleet is not None
        assert executor is not None
        try:
            fleet.connect(self._open_timeout)
            if self._closed.is_set():
                return
            directory = fleet.agents.list(subscribe=True, timeout=self._open_timeout)
        except DaemonClientError as exc:
            self.open_error = exc
            _log.info("top: the fleet could not be read: %s", exc)
            return
        executor(lambda: self._opened(directory))

    # ------------------------------------------------------------------ closing
    def release(self) -> None:
        """Loop thread: stop listening (never blocks); :meth:`close` does the rest."""
        self._closed.set()
        removers, self._removers = self._removers, []
        for remove in removers:
            remove()
        subscriptions = list(self._subscriptions.values())
        self._subscriptions.clear()
        for subscription in subscriptions:
            subscription()

    def close(self, timeout: float = 5.0) -> None:
        """Any thread but the loop's: close the fleet and join the opening thread (bounded).
        Call :meth:`release` first, on the loop. Idempotent."""
        deadline = time.monotonic() + timeout
        self._closed.set()
        if self.fleet is not None:
            self.fleet.close(max(0.5, deadline - time.monotonic() - 0.5))
        if self._opener is not None:
            self._opener.join(max(0.1, deadline - time.monotonic()))


def describe(value: Any) -> str:
    """An error as one line."""
    return str(value).splitlines()[0] if str(value) else type(value).__name__
