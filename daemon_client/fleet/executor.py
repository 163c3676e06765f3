"""The one callback thread of a fleet: every host's callbacks, run in the order they arrive.

:class:`SerialExecutor` is the ``callback_executor`` a :class:`~daemon_client.fleet.Fleet` gives
each of its clients (unless the user gives another): the clients' dispatcher threads hand their
callbacks over (``__call__``, never blocking), and the executor's own thread (``…-callbacks``)
runs them one at a time, so user code sees one ordered stream across hosts. Its
``callback_thread`` attribute lets each client detect a blocking wait on that thread
(``WouldDeadlock``). :meth:`SerialExecutor.stop` runs what is queued, then ends the thread
(bounded join). The lock guards the queue and the idle flag only; callables run without it.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable

_log = logging.getLogger("daemon_client.fleet")
Callback = Callable[[], object]
_STOP = object()


class SerialExecutor:
    """See the module docstring."""

    takes_batches = True
    """A client's dispatcher may hand over a whole batch in one call: this executor runs every
    callable it took (it never stops between two of one call)."""

    def __init__(self, name: str = "fleet") -> None:
        self._lock = threading.Lock()
        self._items: collections.deque[object] = collections.deque()
        self._wake = threading.Semaphore(0)
        self._idle = True
        self._stopped = False
        self.callback_thread = threading.Thread(target=self._loop, name=f"{name}-callbacks", daemon=True)
        """The thread every callback runs on."""
        self.callback_thread.start()

    @property
    def stopped(self) -> bool:
        return self._stopped

    def __call__(self, fn: Callback) -> None:
        """Queue ``fn``. Any thread; never blocks. Once stopped, ``fn`` is dropped (logged once)."""
        with self._lock:
            if self._stopped:
                dropped = True
            else:
                dropped = False
                self._items.append(fn)
                if self._idle:
                    self._idle = False
                    self._wake.release()
        if dropped:
            _log.debug("the fleet's callback thread has stopped: a callback was dropped")

    def stop(self, timeout: float = 5.0) -> bool:
        """Run what is queued, then end the thread; True if it ended within ``timeout``.
        Never joins the calling thread (a callback may call it)."""
        with self._lock:
            if not self._stopped:
                self._stopped = True
                self._items.append(_STOP)
                if self._idle:
                    self._idle = False
                    self._wake.release()
        if self.callback_thread is threading.current_thread():
            return True
        self.callback_thread.join(max(0.0, timeout))
        return not self.callback_thread.is_alive()

    def _loop(self) -> None:
        while True:
            self._wake.acquire()
            while True:
                with self._lock:
                    if not self._items:
                        self._idle = True
                        break
                    batch = list(self._items)
                    self._items.clear()
                for item in batch:
                    if item is _STOP:
                        return
                    try:
                        item()  # type: ignore[operator]
                    except Exception:  # noqa: BLE001 - the clients isolate their callbacks' errors
                        _log.exception("a callable handed to the fleet's callback thread raised")
