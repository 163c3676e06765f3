"""``OutputBuffer``: the state of one terminal stream's unread output and its reader-thread side.

The reader thread appends each Output frame's payload (:meth:`OutputBuffer.push`) and ends the
output (:meth:`OutputBuffer.end`) without ever blocking; the oldest output beyond the limit is
dropped here. The pull side, which waits on the same condition variable (``output()`` and
``expect()``), is :class:`~daemon_client.subscriptions.terminal_output.OutputReader`, built on
this class. Separate so that this side, which runs once per frame on the reader thread, is in
the compiled build (see :mod:`daemon_client._compiled`); the pull side stays interpreted.

One lock guards the state (``_changed`` is its condition); no user code runs under it.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable

from daemon_client._compiled import mypyc_attr
from daemon_client.protocol.terminal_frames import decode_output
from daemon_client.subscriptions.terminal_search import WindowSearch

_log = logging.getLogger("daemon_client.subscriptions.terminal_output")

DEFAULT_LIMIT = 1_000_000
"""Characters of unread output kept per stream; the oldest are dropped beyond it."""


def checked_limit(limit: object) -> int:
    """``limit`` if it is a buffer limit (an ``int``, 0 or more; ``bool`` is not), else ``ValueError``."""
    if type(limit) is not int or limit < 0:
        raise ValueError("the output buffer limit must be a number of characters, 0 or more")
    return limit


Ended = Callable[[str], BaseException]
"""Makes the exception that ends a wait, given the unmatched text (exit, release, close)."""


@mypyc_attr(allow_interpreted_subclasses=True)
class OutputBuffer:
    """Output text received by one stream and not yet read, and the reader thread's side of it
    (see the module docstring)."""

    def __init__(self, name: str, limit: int = DEFAULT_LIMIT) -> None:
        """``limit``: unread output kept, in characters (output as received counts its UTF-8
        bytes: one per character for ASCII); ``0`` keeps none (a stream read only by its
        ``on_output`` callback): :meth:`next_chunk` and :meth:`expect` then raise ``ValueError``."""
        limit = checked_limit(limit)
        self._name = name
        self._limit = limit
        self._ceiling = limit + limit // 8
        """Pushes drop the oldest output only beyond this, down to ``limit``, many chunks at once;
        reads (and :attr:`dropped`) drop down to ``limit`` first, so they never see more."""
        self.keeps = limit > 0
        """False when nothing is kept (``limit`` 0): the reader thread need not push."""
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # pushes take the plain lock: cheaper to enter
        self._chunks: collections.deque[str | bytes] = collections.deque()  # bytes: decoded when read
        self._queued = 0
        self._pending = ""  # taken by expect() and not consumed by a match yet (raw text)
        self._start = 0  # where _pending begins in the output (characters consumed or dropped before it)
        self._consumed = 0  # callers' consumptions, ever (a match searched outside the lock checks it)
        self._data = 0  # changes of the unread output (pushes, consumptions, the end), ever
        self._version = 0  # those and the progress of expect() calls, ever
        self._searches: list[WindowSearch] = []  # the expect() calls waiting now
        self._orders = 0
        self._ended: Ended | None = None
        self._waiting = 0  # callers in _changed.wait(): pushes notify only when there are some
        self._dropped = 0
        self._warn = False  # a first drop not logged yet (logged outside the lock)

    @property
    def dropped(self) -> int:
        """Characters dropped because nobody read them before the limit was reached."""
        with self._lock:
            self._drop_oldest_locked()
            dropped = self._dropped
        self._log_first_drop()
        return dropped

    # ------------------------------------------------------------------ reader thread
    def push(self, output: str | bytes) -> None:
        """Append received output (never blocks): text, or an Output frame's payload as received,
        decoded when it is read (so output that is dropped unread is never decoded)."""
        if not output or not self.keeps:
            return
        with self._lock:
            if self._ended is not None:
                return
            self._chunks.append(output)
            self._queued += len(output)
            self._data += 1
            if self._queued + len(self._pending) > self._ceiling:
                self._drop_oldest_locked()
            if self._waiting:
                self._changed.notify_all()
            warn = self._warn
        if warn:
            self._log_first_drop()

    def _drop_oldest_locked(self) -> None:
        """Drop the oldest unread output beyond the limit: what expect() holds first, then
        queued chunks (the newest chunk always stays)."""
        excess = self._queued + len(self._pending) - self._limit
        if excess <= 0:
            return
        cut = min(excess, len(self._pending))
        if cut:
            self._pending = self._pending[cut:]
            self._start += cut
        dropped, counted = cut, cut
        chunks = self._chunks
        while counted < excess and len(chunks) > 1:
            oldest = chunks.popleft()
            self._queued -= len(oldest)
            counted += len(oldest)
            dropped += len(oldest) if isinstance(oldest, str) or oldest.isascii() else len(decode_output(oldest))
        if dropped and not self._dropped:
            self._warn = True
        self._dropped += dropped

    def _log_first_drop(self) -> None:
        """Outside the lock (a logging handler is user code): the one warning of a stream."""
        with self._lock:
            warn, self._warn = self._warn, False
        if warn:
            _log.warning("%s: unread output over %d characters; the oldest is dropped", self._name, self._limit)

    def end(self, ended: Ended) -> None:
        """No more output will come (the first reason wins); waiters drain what is queued, then
        stop (``output()``) or raise ``ended(unmatched_text)`` (``expect()``)."""
        with self._changed:
            if self._ended is None:
                self._ended = ended
                self._data += 1
                self._version += 1
            self._changed.notify_all()

    @property
    def ended(self) -> bool:
        return self._ended is not None

    @property
    def expecting(self) -> int:
        """``expect()`` calls waiting now."""
        with self._lock:
            return len(self._searches)
