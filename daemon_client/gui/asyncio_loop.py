"""The asyncio executor: callbacks handed to an event loop's thread with ``call_soon_threadsafe``.

:func:`asyncio_executor` is called on the thread that runs the loop (inside a coroutine, or with
the loop given before it runs on the calling thread). :meth:`AsyncioExecutor.__call__` runs on
the client's dispatcher thread (or any thread): it schedules the callable on the loop, which
runs the callables in the order they were handed over. It never blocks. Once the loop is closed,
callables are dropped, with one log line. :func:`wrap` turns a client future into an awaitable
of that loop (``asyncio.wrap_future``), so coroutines await requests without blocking the loop.
Textual apps, Jupyter notebooks and asyncio servers all run on such a loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable
from typing import TypeVar

_log = logging.getLogger("daemon_client.gui")
Callback = Callable[[], object]
T = TypeVar("T")


class AsyncioExecutor:
    """A ``callback_executor`` that runs callables on an asyncio loop; see :func:`asyncio_executor`."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.callback_thread = threading.current_thread()
        """The loop's thread (the one that made this executor); callbacks run on it."""
        self._dropped = 0  # a count for the log line (approximate across threads)

    @property
    def stopped(self) -> bool:
        """True once the loop is closed: nothing runs any more."""
        return self.loop.is_closed()

    def __call__(self, fn: Callback) -> None:
        """Hand ``fn`` to the loop's thread. Any thread; never blocks."""
        try:
            self.loop.call_soon_threadsafe(self._run, fn)
        except RuntimeError:  # the loop is closed
            self._drop()

    def _run(self, fn: Callback) -> None:  # the loop's thread
        try:
            fn()
        except Exception:  # noqa: BLE001 - the client's callbacks isolate their own errors
            _log.exception("a callable handed to asyncio_executor raised")

    def _drop(self) -> None:
        if self._dropped == 0:
            _log.info("the asyncio loop is closed: dropping callbacks")
        self._dropped += 1


def asyncio_executor(loop: asyncio.AbstractEventLoop | None = None) -> AsyncioExecutor:
    """A ``callback_executor`` that runs the client's callbacks on an asyncio event loop.

    Call it on the loop's thread: inside a coroutine, ``asyncio_executor()`` takes the running
    loop; before the loop runs, pass the loop that this thread will run. Then
    ``Client(url, callback_executor=asyncio_executor())``: callbacks run on the loop, in order,
    and may touch what belongs to it (a Textual widget, a notebook's output, an ``asyncio.Queue``).
    Blocking calls that wait for callback-delivered work raise
    :class:`~daemon_client.errors.WouldDeadlock` on that thread instead of freezing the loop;
    await the client's futures with :func:`wrap` instead.
    """
    if loop is None:
        loop = asyncio.get_running_loop()
    return AsyncioExecutor(loop)


def wrap(future: concurrent.futures.Future[T], loop: asyncio.AbstractEventLoop | None = None) -> asyncio.Future[T]:
    """An awaitable of ``future`` (a client future: ``request_async()``, a subscription's
    ``ready``) on ``loop`` (default: the running one), resolved there when ``future`` is done.
    Cancelling the awaitable cancels ``future``."""
    return asyncio.wrap_future(future, loop=loop)
