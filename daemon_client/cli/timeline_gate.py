"""The join of history and live events in ``tail``: nothing twice, nothing out of order.

The timeline subscription starts before history is read. :class:`TimelineGate` holds live
updates back (callback thread) until the main thread has printed the history and opened the
gate; then it lets them through, skipping rows already printed (same epoch, ``seq`` not
newer). After a reconnect it fetches the rows written while the connection was down (from
the last row printed) before later updates. A row of another epoch than the last one printed
(the daemon rebuilt or replaced the history, e.g. across a restart) is preceded by a local
``replacement`` update, unless the daemon announced that epoch with one already. Everything
is printed under the gate's lock, by the main thread while it is closed and by the callback
thread once it is open.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from daemon_client.errors import ClientClosed, DaemonClientError
from daemon_client.protocol.timeline import (
    Replacement,
    SubscriptionError,
    SubscriptionRestored,
    TimelineCursor,
    TimelineEntry,
    TimelinePage,
    TimelineUpdate,
)

PrintUpdate = Callable[[TimelineUpdate], None]
PrintEntry = Callable[[str, TimelineEntry], None]
FetchAfter = Callable[[TimelineCursor], Iterable[TimelinePage]]


class TimelineGate:
    """See the module docstring. ``on_error`` gets a failed subscription (callback thread)."""

    def __init__(
        self,
        print_update: PrintUpdate,
        print_entry: PrintEntry,
        fetch_after: FetchAfter,
        *,
        agent_id: str,
        on_error: Callable[[SubscriptionError], None],
        on_note: Callable[[str], None],
    ) -> None:
        self._agent_id = agent_id
        self._print_update = print_update
        self._print_entry = print_entry
        self._fetch_after = fetch_after
        self._on_error = on_error
        self._on_note = on_note
        self._lock = threading.Lock()
        self._open = False
        self._closed = False
        self._held: list[TimelineUpdate] = []
        self._last: TimelineCursor | None = None

    # ------------------------------------------------------------------ callback thread
    def __call__(self, update: TimelineUpdate) -> None:
        event = update.event
        if isinstance(event, SubscriptionError):
            if not isinstance(event.exception, ClientClosed):  # a normal end is no error
                self._on_error(event)
            return
        with self._lock:
            if self._closed:
                return
            if not self._open:
                self._held.append(update)
                return
            self._emit_locked(update)

    def _emit_locked(self, update: TimelineUpdate) -> None:
        last = self._last
        event = update.event
        if isinstance(event, Replacement):
            if last is not None and last.epoch == event.epoch:
                return  # already noted from a row of that epoch
            self._last = TimelineCursor(event.epoch, 0)
        elif update.seq is not None and update.epoch is not None:
            if last is not None and update.epoch == last.epoch and update.seq <= last.seq:
                return
            self._note_epoch_locked(update.epoch)
            self._last = TimelineCursor(update.epoch, update.seq)
        self._print_update(update)
        if isinstance(update.event, SubscriptionRestored) and last is not None:
            self._catch_up_locked(last)

    def _catch_up_locked(self, since: TimelineCursor) -> None:
        fetched = 0
        try:
            for page in self._fetch_after(since):
                fetched += self._entries_locked(page.epoch, page.entries)
        except DaemonClientError as exc:
            self._on_note(f"rows written while disconnected could not be fetched: {exc}")
            return
        if fetched:
            self._on_note(f"{fetched} rows written while disconnected were fetched")

    def _entries_locked(self, epoch: str, entries: Iterable[TimelineEntry]) -> int:
        printed = 0
        for entry in entries:
            last = self._last
            if last is not None and epoch == last.epoch and entry.seq_end <= last.seq:
                continue
            self._note_epoch_locked(epoch)
            self._print_entry(epoch, entry)
            self._last = TimelineCursor(epoch, entry.seq_end)
            printed += 1
        return printed

    def _note_epoch_locked(self, epoch: str) -> None:
        """Print a ``replacement`` before the first row of a new epoch (not before the first row)."""
        last = self._last
        if last is not None and last.epoch != epoch:
            self._print_update(TimelineUpdate(self._agent_id, Replacement(epoch=epoch), epoch=epoch))

    # ------------------------------------------------------------------ main thread
    def history(self, pages: Iterable[TimelinePage]) -> None:
        """Print history rows while the gate is closed."""
        for page in pages:
            with self._lock:
                self._entries_locked(page.epoch, page.entries)

    def open(self) -> None:
        """Print the updates held back (those not in the history), then let later ones through."""
        with self._lock:
            held, self._held = self._held, []
            for update in held:
                self._emit_locked(update)
            self._open = True

    def close(self) -> None:
        """Print nothing more (following stopped); waits for an update being printed. Any thread."""
        with self._lock:
            self._closed = True
            self._held.clear()
