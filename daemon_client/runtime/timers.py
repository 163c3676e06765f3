"""One timer thread per client for internal deadlines: request timeouts, the handshake
deadline and the heartbeat.

Only internal callables run here (never user code); each must be quick and must not
block. ``schedule`` and ``Timer.cancel`` may be called from any thread.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

_log = logging.getLogger("daemon_client.runtime.timers")


class Timer:
    """A scheduled call; ``cancel()`` is cheap and idempotent (the entry is skipped when due)."""

    __slots__ = ("_fn", "cancelled", "when")

    def __init__(self, when: float, fn: Callable[[], None]) -> None:
        self.when = when
        self._fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def _run(self) -> None:
        if not self.cancelled:
            self._fn()


class TimerThread:
    """A heap of deadlines served by one daemon thread, started on first use."""

    def __init__(self, name: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._name = name
        self._clock = clock
        self._heap: list[tuple[float, int, Timer]] = []
        self._counter = itertools.count()
        self._cond = threading.Condition(threading.Lock())
        self._thread: threading.Thread | None = None
        self._stopped = False

    def schedule(self, delay: float, fn: Callable[[], None]) -> Timer:
        """Run ``fn`` on the timer thread after ``delay`` seconds (unless cancelled)."""
        timer = Timer(self._clock() + max(0.0, delay), fn)
        with self._cond:
            if self._stopped:
                timer.cancelled = True
                return timer
            first = not self._heap or timer.when < self._heap[0][0]
            heapq.heappush(self._heap, (timer.when, next(self._counter), timer))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            elif first:
                self._cond.notify()
        return timer

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._stopped:
                        return
                    now = self._clock()
                    if self._heap and self._heap[0][0] <= now:
                        timer = heapq.heappop(self._heap)[2]
                        break
                    wait = self._heap[0][0] - now if self._heap else None
                    self._cond.wait(wait)
            try:
                timer._run()
            except Exception:  # noqa: BLE001 - an internal bug must not kill the timer thread
                _log.exception("timer callback failed")

    def stop(self, timeout: float = 2.0) -> None:
        """Stop the thread and drop every pending timer; bounded join, never the current thread."""
        with self._cond:
            self._stopped = True
            self._heap.clear()
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
