"""One timer thread per client for internal deadlines: request timeouts, the handshake
deadline, the heartbeat and the write-stall watchdog.

Only internal callables run here (never user code); each must be quick and must not
block (they never write to a socket: writes are queued for the writer thread).
``schedule`` and ``Timer.cancel`` may be called from any thread.

Memory follows what is pending, not the rate of scheduling: a cancelled timer drops its
callable at once, and the heap is compacted when cancelled entries make up half of it.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

from daemon_client.runtime.affinity import pin_current_thread

_log = logging.getLogger("daemon_client.runtime.timers")
COMPACT_MIN = 64
"""The heap is compacted only when it holds at least this many cancelled entries."""


class Timer:
    """A scheduled call; ``cancel()`` is cheap and idempotent (any thread)."""

    __slots__ = ("_fn", "_owner", "cancelled", "when")

    def __init__(self, when: float, fn: Callable[[], None], owner: TimerThread | None) -> None:
        self.when = when
        self._fn: Callable[[], None] | None = fn
        self._owner = owner
        self.cancelled = False

    def cancel(self) -> None:
        owner = self._owner
        if owner is None:  # ran, cancelled already, or never scheduled
            self.cancelled = True
            self._fn = None
            return
        owner._cancel(self)

    def _take(self) -> Callable[[], None] | None:
        """Under the owner's lock: the callable to run now (``None`` if cancelled)."""
        fn, self._fn, self._owner = self._fn, None, None
        return None if self.cancelled else fn


class TimerThread:
    """A heap of deadlines served by one daemon thread, started on first use.

    ``_heap``, ``_cancelled``, ``_thread`` and ``_stopped`` are guarded by ``_cond``.
    """

    def __init__(self, name: str, clock: Callable[[], float] = time.monotonic, thread_cpu: int | None = None) -> None:
        self._name = name
        self._thread_cpu = thread_cpu
        self._clock = clock
        self._heap: list[tuple[float, int, Timer]] = []  # guarded by _cond
        self._cancelled = 0  # cancelled entries still in _heap; guarded by _cond
        self._counter = itertools.count()
        self._cond = threading.Condition(threading.Lock())
        self._thread: threading.Thread | None = None  # guarded by _cond
        self._stopped = False  # guarded by _cond

    def __len__(self) -> int:
        """Entries in the heap, cancelled ones not yet compacted included."""
        with self._cond:
            return len(self._heap)

    @property
    def pending(self) -> int:
        """Timers scheduled and neither run nor cancelled."""
        with self._cond:
            return len(self._heap) - self._cancelled

    def schedule(self, delay: float, fn: Callable[[], None]) -> Timer:
        """Run ``fn`` on the timer thread after ``delay`` seconds (unless cancelled)."""
        timer = Timer(self._clock() + max(0.0, delay), fn, self)
        with self._cond:
            if self._stopped:
                timer.cancelled = True
                timer._fn = timer._owner = None
                return timer
            first = not self._heap or timer.when < self._heap[0][0]
            heapq.heappush(self._heap, (timer.when, next(self._counter), timer))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            elif first:
                self._cond.notify()
        return timer

    def _cancel(self, timer: Timer) -> None:
        with self._cond:
            if timer.cancelled or timer._owner is None:
                timer.cancelled = True
                timer._fn = None
                return
            timer.cancelled = True
            timer._fn = None  # what the callable holds (a request, a closure) is freed now
            self._cancelled += 1
            if self._cancelled >= COMPACT_MIN and self._cancelled * 2 >= len(self._heap):
                self._heap = [entry for entry in self._heap if not entry[2].cancelled]
                heapq.heapify(self._heap)
                self._cancelled = 0

    def _run(self) -> None:
        pin_current_thread(self._thread_cpu)
        while True:
            with self._cond:
                while True:
                    if self._stopped:
                        return
                    now = self._clock()
                    if self._heap and self._heap[0][0] <= now:
                        timer = heapq.heappop(self._heap)[2]
                        if timer.cancelled:
                            self._cancelled -= 1
                        fn = timer._take()
                        if fn is None:
                            continue
                        break
                    wait = self._heap[0][0] - now if self._heap else None
                    self._cond.wait(wait)
            try:
                fn()
            except Exception:  # noqa: BLE001 - an internal bug must not kill the timer thread
                _log.exception("timer callback failed")

    def stop(self, timeout: float = 2.0) -> None:
        """Stop the thread and drop every pending timer; bounded join, never the current thread."""
        with self._cond:
            self._stopped = True
            for _, _, timer in self._heap:
                timer._fn = timer._owner = None
            self._heap.clear()
            self._cancelled = 0
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(max(0.0, timeout))
