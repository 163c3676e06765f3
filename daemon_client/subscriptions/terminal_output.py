"""``OutputReader``: the pull side of one terminal stream — a bounded queue of output text that
``TerminalStream.output()`` iterates and ``TerminalStream.expect()`` matches against (like
pexpect: text consumed by a match is gone, the rest stays for the next call).

The reader thread appends (:meth:`OutputReader.push`, :meth:`OutputReader.end`) without ever
blocking; the caller's thread waits, always with a timeout. Because the queue is filled by the
reader thread and not by callbacks, pulling works in every ``callback_executor`` mode and from
inside a callback. One condition variable guards the state; no user code runs under it, and no
caller's pattern: ``expect()`` searches a copy of the unread text outside it, and consumes up to
its match only if no other caller consumed meanwhile.
"""

from __future__ import annotations

import collections
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator

from daemon_client.errors import ExpectTimeout, TerminalExited
from daemon_client.protocol.terminal_frames import decode_output
from daemon_client.protocol.terminals import incomplete_escape_at, raw_index, strip_ansi

_log = logging.getLogger("daemon_client.subscriptions.terminal_output")

DEFAULT_LIMIT = 1_000_000
"""Characters of unread output kept per stream; the oldest are dropped beyond it."""

Ended = Callable[[str], BaseException]
"""Makes the exception that ends a wait, given the unmatched text (exit, release, close)."""


class OutputReader:
    """Output text received by one stream and not yet read; see the module docstring."""

    def __init__(self, name: str, limit: int = DEFAULT_LIMIT) -> None:
        """``limit``: unread output kept, in characters (output as received counts its UTF-8
        bytes: one per character for ASCII); ``0`` keeps none (a stream read only by its
        ``on_output`` callback): :meth:`next_chunk` and :meth:`expect` then raise ``ValueError``."""
        if type(limit) is not int or limit < 0:
            raise ValueError("the output buffer limit must be a number of characters, 0 or more")
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
        self._pending_cut = 0  # characters pushes dropped from the front of _pending, ever
        self._consumed = 0  # callers' consumptions of _pending, ever (a match searched outside the lock checks it)
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
            self._pending_cut += cut
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
            self._changed.notify_all()

    @property
    def ended(self) -> bool:
        return self._ended is not None

    # ------------------------------------------------------------------ caller thread
    def _take_locked(self) -> str | None:
        self._drop_oldest_locked()
        if not self._chunks:
            return None
        chunk = self._chunks.popleft()
        self._queued -= len(chunk)
        return chunk if isinstance(chunk, str) else decode_output(chunk)

    def _wait_locked(self, deadline: float | None) -> bool:
        """Under the lock: wait for output or the end, until ``deadline``; False when it passed."""
        while not self._chunks and self._ended is None:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            self._waiting += 1
            try:
                self._changed.wait(0.5 if remaining is None else min(0.5, remaining))
            finally:
                self._waiting -= 1
        return True

    def next_chunk(self, timeout: float | None) -> str | None:
        """The next piece of unread output; ``None`` once the stream ended and everything was
        read, or when nothing arrived within ``timeout`` seconds (``None``: no limit)."""
        self._check_keeps("output()")
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            with self._lock:
                self._drop_oldest_locked()
                if self._pending:
                    text, self._pending = self._pending, ""
                    self._consumed += 1
                    return text
                while True:
                    chunk = self._take_locked()
                    if chunk is not None or self._ended is not None or not self._wait_locked(deadline):
                        return chunk
        finally:
            self._log_first_drop()

    def _check_keeps(self, what: str) -> None:
        if not self.keeps:
            raise ValueError(
                f"{self._name}: {what} reads the output the stream keeps, and this stream keeps none "
                "(buffer_limit=0); stream with a buffer_limit of 1 or more to pull output"
            )

    def chunks(self, timeout: float | None) -> Iterator[str]:
        """Iterate :meth:`next_chunk` until it returns ``None`` (``ValueError`` at once when
        nothing is kept)."""
        self._check_keeps("output()")
        return self._chunks_from(timeout)

    def _chunks_from(self, timeout: float | None) -> Iterator[str]:
        while True:
            chunk = self.next_chunk(timeout)
            if chunk is None:
                return
            yield chunk

    def expect(self, pattern: str | re.Pattern[str], timeout: float | None, *, strip: bool) -> re.Match[str]:
        """Wait until the unread output matches ``pattern`` (``re.search``), consume the output
        up to the end of the match and return it. With ``strip`` escape sequences are removed
        before matching (the match is then on the cleaned text). Raises
        :class:`ExpectTimeout` after ``timeout`` seconds, or the stream's end reason once it
        ended with no match left in the unread output.

        The pattern runs outside the lock the reader thread's pushes take, on a copy of the
        unread text: a slow pattern over a long backlog holds up this caller, never the reader.
        Pushes meanwhile may drop the oldest of that text (over the limit); the match then
        consumes what is left of it up to the match's end. If another caller consumed unread
        output meanwhile (``output()``, another ``expect()``), the match is not used and what
        is left is searched again."""
        self._check_keeps("expect()")
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            return self._expect(regex, timeout, deadline, strip)
        finally:
            self._log_first_drop()

    def _expect(
        self, regex: re.Pattern[str], timeout: float | None, deadline: float | None, strip: bool
    ) -> re.Match[str]:
        searched: str | None = None  # the text last searched without a match
        while True:
            with self._lock:
                while (chunk := self._take_locked()) is not None:
                    self._pending += chunk
                text, cut_before, consumed, ended = self._pending, self._pending_cut, self._consumed, self._ended
            stale = False
            if text is not searched:
                found, end = _search(regex, text, strip)  # outside the lock: the pattern may be slow
                if found is None:
                    searched = text
                else:
                    with self._lock:
                        stale = self._consumed != consumed  # another caller consumed: search again
                        if not stale:
                            # _pending is text less what pushes dropped from its front, plus what
                            # other expect() calls moved in after it
                            self._pending = self._pending[max(0, end - (self._pending_cut - cut_before)) :]
                            self._consumed += 1
                            return found
            if ended is not None and not stale:
                raise ended(_visible(text, strip))
            with self._lock:  # every turn looks at the clock: output that never matches times out too
                timed_out = deadline is not None and time.monotonic() >= deadline
                if not (timed_out or stale) and self._pending is text:
                    timed_out = not self._wait_locked(deadline)
                text = self._pending
            if timed_out:
                raise self._timed_out(regex, timeout, _visible(text, strip))

    def _timed_out(self, regex: re.Pattern[str], timeout: float | None, unmatched: str) -> ExpectTimeout:
        return ExpectTimeout(
            f"{self._name}: no match for {regex.pattern!r} within {timeout:g} s; "
            f"unmatched output ends with {unmatched[-200:]!r}",
            output=unmatched,
        )


def _search(regex: re.Pattern[str], raw: str, strip: bool) -> tuple[re.Match[str] | None, int]:
    """``regex`` searched in ``raw`` (with ``strip``: in its text without escape sequences, an
    escape sequence still arriving left out); with the end of the match in ``raw``."""
    if not strip:
        found = regex.search(raw)
        return found, 0 if found is None else found.end()
    cut = incomplete_escape_at(raw)
    complete = raw if cut is None else raw[:cut]
    found = regex.search(strip_ansi(complete))
    return found, 0 if found is None else raw_index(complete, found.end())


def _visible(raw: str, strip: bool) -> str:
    """The unmatched text an exception carries: ``raw``, without escape sequences with ``strip``."""
    if not strip:
        return raw
    cut = incomplete_escape_at(raw)
    return strip_ansi(raw if cut is None else raw[:cut])


def exited(name: str) -> Ended:
    """The end reason of a terminal whose process ended."""
    return lambda output: TerminalExited(f"{name} exited before a match", output=output)
