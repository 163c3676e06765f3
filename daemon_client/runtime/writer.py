"""The write path of one socket: a bounded outbound queue served by the writer thread.

Threads:

* the **writer thread** (``…-writer``, one per socket, started after the TCP/WebSocket
  connect and joined by the reader when the socket ends) is the only thread that writes
  to the socket: text frames, control-frame replies (pong, close echo) and the client's
  own close frame, in order.
* **any thread** queues frames with :meth:`Writer.send`, which never blocks: it raises
  :class:`~daemon_client.errors.ConnectionLost` when the socket is gone or when the queue
  already holds ``max_queued`` characters (a daemon that stopped reading).
* the **timer thread** runs the stall watchdog: a single write still in progress after
  ``stall_after`` seconds calls ``on_stall`` (the connection then aborts the socket, which
  ends the write, and reconnects).

So no caller, timer or the reader ever waits for a socket write; only this thread does,
and ``Transport.abort()`` (from any thread) ends that wait.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable

from daemon_client.errors import ConnectionLost
from daemon_client.protocol.codec import preview
from daemon_client.runtime.affinity import pin_current_thread
from daemon_client.runtime.timers import Timer, TimerThread
from daemon_client.transport.base import Transport

MAX_QUEUED_CHARS = 64 * 1024 * 1024
"""Characters of text frames that may wait to be written; one frame is always accepted."""

ControlReply = Callable[[], None]


class _Tail:
    """The unsent rest of a frame a caller began writing inline: written before anything else,
    and kept by ``finish()`` (a frame once begun is completed)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def write(self, transport: Transport) -> None:
        transport.send_raw(self.data)  # type: ignore[attr-defined]  # only transports with try_send_text


_Item = str | bytes | _Tail | ControlReply


class Writer:
    """Writes one socket's frames in order on its own thread. See the module docstring."""

    def __init__(
        self,
        transport: Transport,
        *,
        name: str,
        timers: TimerThread,
        stall_after: float | None,
        on_stall: Callable[[float], None],
        logger: logging.Logger,
        max_queued: int | None = None,
        thread_cpu: int | None = None,
    ) -> None:
        self._transport = transport
        self._thread_cpu = thread_cpu
        self._timers = timers
        self._stall_after = stall_after
        self._on_stall = on_stall
        self._log = logger
        self._max_queued = MAX_QUEUED_CHARS if max_queued is None else max_queued
        self._cond = threading.Condition(threading.Lock())
        # Everything below is guarded by _cond.
        self._queue: collections.deque[_Item] = collections.deque()
        self._queued_chars = 0
        self._accepting = True  # text frames accepted
        self._finishing = False  # no more text frames: write what is left (control, close), then end
        self._close: tuple[int, str] | None = None  # the client's close frame, written last
        self._busy_since: float | None = None  # when the write in progress began
        self._writes_done = 0  # writes finished (or failed): tells one write from the next
        self._watchdog: Timer | None = None
        self._ended = False
        self._inline = False  # a caller is writing inline (see send): the writer thread waits
        self._try_send: Callable[[str], bytes | None] | None = getattr(transport, "try_send_text", None)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        # start() and join() run on different threads (the reader starts, close() joins); a
        # thread has its ident before Thread.start() returns, so it cannot tell "started".
        self._start_lock = threading.Lock()
        self._started = False  # guarded by _start_lock: Thread.start() has returned

    # ------------------------------------------------------------------ any thread
    def start(self) -> None:
        with self._start_lock:
            self._thread.start()
            self._started = True

    def send(self, text: str | bytes) -> None:
        """Queue one text frame (``str``) or binary frame (``bytes``). Never blocks; raises
        ``ConnectionLost`` if it cannot be queued.

        When nothing waits and nothing is being written, a text frame is offered to the socket
        at once on the calling thread, without waiting (``try_send_text``, plain sockets): what
        the socket does not take is left to the writer thread, written next. That saves a
        thread hand-over per request; the writer thread stays the only one that waits."""
        with self._cond:
            if not self._accepting:
                raise ConnectionLost("Connection lost")
            if self._queue and self._queued_chars + len(text) > self._max_queued:
                raise ConnectionLost(
                    f"the daemon is not reading: {self._queued_chars} characters already wait to be "
                    "sent on this connection; the message was not sent"
                )
            inline = self._try_send is not None and type(text) is str and not self._queue and self._busy_since is None
            if not inline:
                self._queue.append(text)
                self._queued_chars += len(text)
                self._cond.notify()
                return
            self._inline = True  # the socket is this thread's until the attempt is over
            self._busy_since = time.monotonic()
        tail: bytes | None = None
        failed: BaseException | None = None
        try:
            assert self._try_send is not None
            assert isinstance(text, str)
            tail = self._try_send(text)
        except Exception as exc:  # noqa: BLE001 - a failed write ends the socket, as on the writer thread
            failed = exc
        finally:
            with self._cond:
                self._inline = False
                self._busy_since = None
                self._writes_done += 1
                if tail is not None and failed is None:
                    self._queue.appendleft(_Tail(tail))  # the rest of this frame goes first
                self._cond.notify_all()  # the writer thread and a close waiting for this write
        if failed is not None:
            self._log.debug("write failed: %s", preview(str(failed), 200))
            self._transport.abort()  # the reader sees the socket end and reports it
            raise ConnectionLost(f"Connection lost: {preview(str(failed), 200)}")

    def call(self, reply: ControlReply) -> None:
        """Run ``reply`` (a pong or a close echo the transport built) on the writer thread,
        after the frame being written. Dropped once the writer has ended."""
        with self._cond:
            if self._ended:
                return
            self._queue.append(reply)
            self._cond.notify()

    def finish(self, close: tuple[int, str] | None = None, *, flush: bool = False) -> bool:
        """Stop taking frames; write what control replies are queued (and, with ``flush``, the
        queued frames too, else they are dropped) and, with ``close=(code, reason)``, a close
        frame; then end. Never blocks.

        Returns ``False`` when a write is in progress (it may be stalled): the caller should
        then abort the transport rather than wait for the close frame.
        """
        with self._cond:
            self._accepting = False
            self._finishing = True
            if not flush:
                kept = [item for item in self._queue if not isinstance(item, (str, bytes))]
                self._queue.clear()
                self._queue.extend(kept)
                self._queued_chars = 0
            if close is not None and self._close is None:
                self._close = close
            self._cond.notify()
            return self._busy_since is None

    def wait_current_write(self, timeout: float) -> bool:
        """Wait (bounded) for the write in progress, if any, to end; True if it has (or none
        was in progress). A write that is only finishing (its frame is out, its bookkeeping
        not yet done) ends at once; one stalled on a daemon that stopped reading does not."""
        with self._cond:
            if self._busy_since is None or self._ended:
                return True
            seen = self._writes_done
            return self._cond.wait_for(lambda: self._writes_done != seen or self._ended, max(0.0, timeout))

    def join(self, timeout: float) -> bool:
        """Wait (bounded) for the thread to end; True if it has (or never started). A start
        in progress on another thread is waited for first (it does not block)."""
        with self._start_lock:
            started = self._started
        if not started or self._thread is threading.current_thread():
            return True
        self._thread.join(max(0.0, timeout))
        return not self._thread.is_alive()

    @property
    def queued_chars(self) -> int:
        with self._cond:
            return self._queued_chars

    # ------------------------------------------------------------------ writer thread
    def _next(self) -> _Item | tuple[int, str] | None:
        with self._cond:
            while self._inline or (not self._queue and not self._finishing):
                self._cond.wait()
            if self._queue:
                item: _Item | tuple[int, str] = self._queue.popleft()
                if isinstance(item, (str, bytes)):
                    self._queued_chars -= len(item)
            elif self._close is not None:
                item, self._close = self._close, None
            else:
                return None
            self._busy_since = time.monotonic()
            if self._watchdog is None and self._stall_after is not None:
                self._watchdog = self._timers.schedule(self._stall_after, self._check_stall)
            return item

    def _run(self) -> None:
        pin_current_thread(self._thread_cpu)
        transport = self._transport
        try:
            while True:
                item = self._next()
                if item is None:
                    return
                try:
                    if isinstance(item, str):
                        transport.send_text(item)
                    elif isinstance(item, _Tail):
                        item.write(transport)
                    elif isinstance(item, bytes):
                        transport.send_binary(item)
                    elif isinstance(item, tuple):
                        transport.close(*item)
                    else:
                        item()
                except Exception as exc:  # noqa: BLE001 - a failed write ends the socket
                    self._log.debug("write failed: %s", preview(str(exc), 200))
                    transport.abort()  # the reader sees the socket end and reports it
                    return
                finally:
                    with self._cond:
                        self._busy_since = None
                        self._writes_done += 1
                        self._cond.notify_all()  # a close waiting for this write (wait_current_write)
        finally:
            with self._cond:
                self._ended = True
                self._accepting = False
                self._finishing = True
                self._queue.clear()
                self._queued_chars = 0
                watchdog, self._watchdog = self._watchdog, None
                self._cond.notify_all()
            if watchdog is not None:
                watchdog.cancel()

    # ------------------------------------------------------------------ timer thread
    def _check_stall(self) -> None:
        """Timer thread: call ``on_stall`` if one write has been in progress for too long."""
        limit = self._stall_after
        assert limit is not None
        with self._cond:
            self._watchdog = None
            since = self._busy_since
            if since is None or self._ended:
                return  # idle: re-armed by the next write
            stalled = time.monotonic() - since
            if stalled < limit:
                self._watchdog = self._timers.schedule(limit - stalled, self._check_stall)
                return
        self._on_stall(stalled)
