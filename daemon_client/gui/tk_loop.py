"""The Tk executor: callbacks queued by any thread, run by ``after`` polling on the Tk thread.

:meth:`TkExecutor.__call__` runs on the client's dispatcher thread (or any thread): it only
appends to a thread-safe queue and never calls Tk, so it never blocks while Tk is busy and
never fails once ``mainloop()`` has ended. The drain (:meth:`TkExecutor.drain`) runs on the
Tk thread, from ``root.after``, and runs the queued callables in order. When the root is
destroyed the polling stops; what is queued or posted after that is dropped (its widgets
are gone), with one log line.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tkinter

_log = logging.getLogger("daemon_client.gui")
Callback = Callable[[], object]


class TkExecutor:
    """A ``callback_executor`` that runs callables on a Tk root's thread; see :func:`tk_executor`."""

    def __init__(self, root: tkinter.Misc, *, poll_ms: int = 10, batch: int = 500) -> None:
        if poll_ms < 1 or batch < 1:
            raise ValueError("poll_ms and batch must be at least 1")
        self._root: tkinter.Misc | None = root  # None once stopped (see stop())
        self.callback_thread = threading.current_thread()
        """The Tk thread (the one that made this executor); callbacks run on it."""
        self._poll_ms = poll_ms
        self._batch = batch
        self._queue: collections.deque[Callback] = collections.deque()  # append/popleft are thread-safe
        self._stopped = threading.Event()
        self._dropped = 0  # a count for the log line (approximate across threads)
        self._after_id: str | None = None  # Tk thread only
        root.bind("<Destroy>", self._on_destroy, add="+")  # deleted with the root's commands
        self._schedule(poll_ms)

    @property
    def root(self) -> tkinter.Misc | None:
        """The root polled, until it is destroyed (or :meth:`stop` is called): ``None`` then."""
        return self._root

    @property
    def stopped(self) -> bool:
        """True once the root was destroyed (or :meth:`stop` called): nothing runs any more."""
        return self._stopped.is_set()

    @property
    def pending(self) -> int:
        """Callables queued and not yet run."""
        return len(self._queue)

    def __call__(self, fn: Callback) -> None:
        """Queue ``fn`` for the Tk thread. Any thread; never blocks, never calls Tk."""
        if self._stopped.is_set():
            self._drop(1)
            return
        self._queue.append(fn)

    def drain(self) -> int:
        """Run what is queued, in order, at most ``batch`` at a time; return how many ran.
        Tk thread only (``after`` calls it; a test or a modal loop may call it too)."""
        ran = 0
        while ran < self._batch and not self._stopped.is_set():
            try:
                fn = self._queue.popleft()
            except IndexError:
                break
            ran += 1
            try:
                fn()
            except Exception:  # noqa: BLE001 - the client's callbacks isolate their own errors
                _log.exception("a callable handed to tk_executor raised")
        return ran

    def stop(self) -> None:
        """Stop polling, drop what is queued and let go of the root. Tk thread; idempotent (the
        root's destruction calls it).

        Letting go matters: a Tk interpreter freed on another thread aborts the process, and
        the client's dispatcher thread holds this executor until it ends."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        root, self._root = self._root, None
        after_id, self._after_id = self._after_id, None
        if after_id is not None and root is not None:
            with contextlib.suppress(Exception):  # the interpreter may be gone already
                root.after_cancel(after_id)
        self._drop(0)

    # ------------------------------------------------------------------ Tk thread
    def _tick(self) -> None:
        self._after_id = None
        ran = self.drain()
        if not self._stopped.is_set():
            self._schedule(1 if ran == self._batch else self._poll_ms)  # a burst goes on at once

    def _schedule(self, delay_ms: int) -> None:
        root = self._root
        if root is None:
            return
        try:
            self._after_id = root.after(delay_ms, self._tick)
        except Exception:  # noqa: BLE001 - TclError: the application was destroyed
            self.stop()

    def _on_destroy(self, event: tkinter.Event[tkinter.Misc]) -> None:
        if event.widget is self._root:
            self.stop()

    def _drop(self, extra: int) -> None:
        count = extra
        while True:
            try:
                self._queue.popleft()
            except IndexError:
                break
            count += 1
        if count and self._dropped == 0:
            _log.info("the Tk root is destroyed: dropping %d callback(s) and any that follow", count)
        self._dropped += count


def tk_executor(root: tkinter.Misc, *, poll_ms: int = 10) -> TkExecutor:
    """A ``callback_executor`` that runs the client's callbacks on ``root``'s Tk thread.

    Call it on the Tk thread (the one that made ``root`` and runs ``mainloop()``), then pass
    it to the client: ``Client(url, callback_executor=tk_executor(root))``. Callbacks are
    queued without touching Tk and run in order by polling with ``root.after`` every
    ``poll_ms`` milliseconds, so they may update widgets. When ``root`` is destroyed the
    polling stops and later callbacks are dropped; the client can still be closed, from any
    thread or from a callback. Waiting on the Tk thread for callback-delivered work
    (``providers.wait_for_ready()``, iterating ``timeline.stream()``, ``flush_callbacks()``)
    raises :class:`~daemon_client.errors.WouldDeadlock` instead of freezing the window.
    """
    return TkExecutor(root, poll_ms=poll_ms)
