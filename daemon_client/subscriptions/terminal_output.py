"""``OutputReader``: the pull side of one terminal stream — a bounded queue of output text that
``TerminalStream.output()`` iterates and ``TerminalStream.expect()`` matches against (like
pexpect: text consumed by a match is gone, the rest stays for the next call).

The reader thread appends (:meth:`OutputReader.push`, :meth:`OutputReader.end`) without ever
blocking; the caller's thread waits, always with a timeout. Because the queue is filled by the
reader thread and not by callbacks, pulling works in every ``callback_executor`` mode and from
inside a callback. One condition variable guards the state; no user code runs under it, and no
caller's pattern: ``expect()`` searches the unread text outside it, in bounded windows
(:mod:`~daemon_client.subscriptions.terminal_search`), and consumes up to its match only if no
other caller consumed meanwhile.

Several ``expect()`` calls may wait on one stream: each registers its progress here. A call
whose match ends first in the output consumes first; a call that found a match waits (at most
until its own deadline) until every other waiting call has searched as far as that match or
found one ending later, and every consumption makes the others search the rest again, so each
gets its own match.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from functools import partial

from daemon_client.errors import ExpectTimeout, TerminalExited
from daemon_client.protocol.terminal_frames import decode_output
from daemon_client.protocol.terminals import incomplete_escape_at, strip_ansi
from daemon_client.subscriptions.output_buffer import DEFAULT_LIMIT, Ended, OutputBuffer, checked_limit
from daemon_client.subscriptions.terminal_search import DEFAULT_WINDOW, WindowSearch

__all__ = ["DEFAULT_LIMIT", "Ended", "OutputReader", "checked_limit", "exited"]


class OutputReader(OutputBuffer):
    """Output text received by one stream and not yet read; see the module docstring. The
    reader thread's side (``push``, ``end``) and the state are :class:`OutputBuffer`'s."""

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
        return self._wait_until_locked(lambda: bool(self._chunks) or self._ended is not None, deadline)

    def _wait_until_locked(self, done: Callable[[], bool], deadline: float | None) -> bool:
        """Under the lock: wait until ``done()``, until ``deadline``; False when it passed."""
        while not done():
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            self._waiting += 1
            try:
                self._changed.wait(0.5 if remaining is None else min(0.5, remaining))
            finally:
                self._waiting -= 1
        return True

    def _changed_locked(self, *, data: bool) -> None:
        """Under the lock: the unread output (``data``) or a call's progress changed; waiters look."""
        self._version += 1
        if data:
            self._data += 1
        if self._waiting:
            self._changed.notify_all()

    def _moved_on(self, seen: int, *, data: bool) -> bool:
        """Under the lock: the unread output (``data``), or anything, changed since count ``seen``."""
        return (self._data if data else self._version) != seen

    def _consume_locked(self, end: int) -> None:
        """Under the lock: the unread output up to ``end`` (in the output) is read."""
        if end > self._start:
            self._pending = self._pending[end - self._start :]
            self._start = end
        self._consumed += 1
        self._changed_locked(data=True)

    def next_chunk(self, timeout: float | None) -> str | None:
        """The next piece of unread output; ``None`` once the stream ended and everything was
        read, or when nothing arrived within ``timeout`` seconds (``None``: no limit)."""
        self._check_keeps("output()")
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            with self._lock:
                self._drop_oldest_locked()
                if self._pending:
                    text = self._pending
                    self._consume_locked(self._start + len(text))
                    return text
                while True:
                    chunk = self._take_locked()
                    if chunk is not None:
                        self._start += len(chunk)
                        self._consume_locked(self._start)
                        return chunk
                    if self._ended is not None or not self._wait_locked(deadline):
                        return None
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

    def expect(
        self,
        pattern: str | re.Pattern[str],
        timeout: float | None,
        *,
        strip: bool,
        window: int = DEFAULT_WINDOW,
    ) -> re.Match[str]:
        """Wait until the unread output matches ``pattern`` (``re.search``), consume the output
        up to the end of the match and return it. With ``strip`` escape sequences are removed
        before matching (the match is then on the cleaned text; a sequence still arriving is
        never matched). Raises :class:`ExpectTimeout` after ``timeout`` seconds, or the
        stream's end reason once it ended with no match left in the unread output.

        The pattern runs outside the lock the reader thread's pushes take, and each search hands
        it at most ``window`` characters of output (plus up to ``LOOK_BEHIND`` before them, for
        look-behind only): the first ``window`` of the unread output, then ``window // 2``
        already searched and up to ``window // 2`` new, as if the output had arrived in such
        pieces (a match touching the end of a window that is not the end of the output is
        looked at again in the next). So a match up to ``window // 2`` characters long is found
        wherever it falls, and the interpreter is held for one window's search at a time. The
        match's ``string`` is the window. Output already unread when the call began is searched
        whole, even with ``timeout=0``; after that the deadline is looked at between windows.

        Pushes meanwhile may drop the oldest of that text (over the limit); the match then
        consumes what is left of it up to the match's end. Several calls waiting at once take
        their matches in the order the matches end in the output (see the module docstring);
        if another caller consumed meanwhile (``output()``, another ``expect()``), a match is
        not used and what is left is searched again."""
        self._check_keeps("expect()")
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        search = WindowSearch(regex, strip, window)
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            self._orders += 1
            search.order = self._orders
            self._searches.append(search)
        try:
            return self._expect(search, timeout, deadline)
        finally:
            with self._lock:
                self._searches.remove(search)
                self._changed_locked(data=False)  # others may be waiting for this call's progress
            self._log_first_drop()

    def _expect(self, search: WindowSearch, timeout: float | None, deadline: float | None) -> re.Match[str]:
        cover: int | None = None  # where the output unread when the call began ends
        while True:
            with self._lock:
                self._absorb_locked()
                if search.epoch != self._consumed:
                    search.restart(self._start, self._consumed)
                search.searched_to = max(search.searched_to, self._start)
                if search.found is not None:
                    found = search.found
                    if self._goes_first_locked(search):
                        self._consume_locked(search.found_end)
                        return found
                    version = self._version
                    if not self._wait_until_locked(partial(self._moved_on, version, data=False), deadline):
                        self._consume_locked(search.found_end)  # its own deadline: take it anyway
                        return found
                    continue
                text, start, data, epoch, ended = self._pending, self._start, self._data, self._consumed, self._ended
            complete = search.complete_end(text)  # outside the lock, as the pattern: both may be slow
            if cover is None:
                cover = start + complete
            if ended is None and deadline is not None and search.searched_to >= cover and time.monotonic() >= deadline:
                raise self._timed_out(search.regex, timeout, _visible(text, search.strip))
            found_now, end, searched_to = search.step(text, start, complete)
            with self._lock:
                if epoch != self._consumed:
                    continue  # another caller consumed meanwhile: search what is left again
                search.searched_to = max(search.searched_to, searched_to)
                if found_now is not None:
                    search.found, search.found_end = found_now, end
                self._changed_locked(data=False)
                if found_now is not None or searched_to < start + complete or self._data != data:
                    continue
                if ended is None:
                    if self._wait_until_locked(partial(self._moved_on, data, data=True), deadline):
                        continue
                    text = self._pending
            if ended is not None:
                raise ended(_visible(text, search.strip))
            raise self._timed_out(search.regex, timeout, _visible(text, search.strip))

    def _absorb_locked(self) -> None:
        """Under the lock: move the queued output into ``_pending``, where expect() searches it."""
        taken = []
        while (chunk := self._take_locked()) is not None:
            taken.append(chunk)
        if taken:
            self._pending = "".join([self._pending, *taken])

    def _goes_first_locked(self, search: WindowSearch) -> bool:
        """Under the lock: no other waiting call may have a match ending before ``search``'s."""
        mine = (search.found_end, search.order)
        for other in self._searches:
            if other is search:
                continue
            if other.epoch != self._consumed:
                return False  # it has not searched since the last consumption
            if other.found is not None:
                if (other.found_end, other.order) < mine:
                    return False
            elif other.searched_to < search.found_end:
                return False
        return True

    def _timed_out(self, regex: re.Pattern[str], timeout: float | None, unmatched: str) -> ExpectTimeout:
        return ExpectTimeout(
            f"{self._name}: no match for {regex.pattern!r} within {timeout:g} s; "
            f"unmatched output ends with {unmatched[-200:]!r}",
            output=unmatched,
        )


def _visible(raw: str, strip: bool) -> str:
    """The unmatched text an exception carries: ``raw``, without escape sequences with ``strip``."""
    if not strip:
        return raw
    cut = incomplete_escape_at(raw)
    return strip_ansi(raw if cut is None else raw[:cut])


def exited(name: str) -> Ended:
    """The end reason of a terminal whose process ended."""
    return lambda output: TerminalExited(f"{name} exited before a match", output=output)
