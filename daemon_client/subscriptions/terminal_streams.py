"""Terminal streams: live output of terminals through ``subscribe_terminal_request`` and the
binary frames it starts (protocol.md 12.2.10, 12.2.11); restore after reconnects; release.

One :class:`TerminalStreamManager` per client owns every :class:`TerminalStream`. The daemon
answers a subscription with a *slot* (0-255, numbered per server-side session) and then sends
binary frames ``opcode | slot | payload``; the manager maps slots to streams for the current
connection only: the map is cleared when a connection ends and rebuilt by subscribing again
after the next handshake. Frames of other opcodes or of slots nobody subscribed to are left to
the connection (logged once per connection and dropped). Several streams of one terminal share
its slot; ``unsubscribe_terminal_request`` is sent when the last of them is released.

Threads: ``add``/``release`` on the caller's thread; the settle hook of the subscription
request, :meth:`TerminalStreamManager.route_binary`, :meth:`TerminalStreamManager.route_exit`
and the lifecycle hooks on the reader thread, where they only update tables, feed each stream's
:class:`~daemon_client.subscriptions.terminal_output.OutputReader` and post jobs; callbacks run
on the callback thread. A Snapshot frame is parsed at most once, when a callback or
``TerminalStream.screen`` first needs it, and a byte-identical repeat (0.1.65 sends two per
subscription) reuses that parse and is not delivered twice. The manager's lock is never held
while sending.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import logging
import re
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

from daemon_client.errors import (
    ClientClosed,
    ConnectionLost,
    ConnectionUnavailable,
    DaemonClientError,
    NotConnected,
    ProtocolError,
    RequestTimeout,
    SubscriptionReleased,
    error_in_reply,
)
from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.models import SessionMessage
from daemon_client.protocol.requests import subscriptions as subscriptions_requests
from daemon_client.protocol.terminal_frames import OUTPUT, SNAPSHOT, decode_output, decode_terminal_frame
from daemon_client.protocol.terminals import TerminalState, parse_terminal_state
from daemon_client.runtime.dispatch import CountedJob
from daemon_client.runtime.memo import Memo
from daemon_client.runtime.requests import CallbackFuture, settle
from daemon_client.subscriptions.lifecycle import Phase, SubscriptionLink, control_timeout, move
from daemon_client.subscriptions.output_buffer import OutputBuffer
from daemon_client.subscriptions.terminal_output import DEFAULT_LIMIT, OutputReader, exited
from daemon_client.subscriptions.terminal_search import DEFAULT_WINDOW

_log = logging.getLogger("daemon_client.subscriptions.terminal_streams")

SUBSCRIBE_REQUEST = subscriptions_requests.TERMINAL_STREAM.type
UNSUBSCRIBE_MESSAGE = "unsubscribe_terminal_request"
EXIT_PUSH = "terminal_stream_exit"
NOT_FOUND = "Terminal not found"
Send = Callable[..., None]
"""``send(message, direct=False)``: a fire-and-forget session message."""


class StreamState(enum.Enum):
    PENDING = "pending"  # waits for a connection
    ESTABLISHING = "establishing"
    LIVE = "live"
    EXITED = "exited"
    FAILED = "failed"
    RELEASED = "released"

    @property
    def phase(self) -> Phase:
        """This state in the one subscription state model."""
        return Phase(self.value)


_ACTIVE = (StreamState.PENDING, StreamState.ESTABLISHING, StreamState.LIVE)


class TerminalStream:
    """The live output of one terminal (``terminal.stream(...)``).

    Callbacks run on the callback thread: ``on_output(text)`` with the output in order (raw
    text with escape sequences; Output frames that arrive before the callback thread reached
    the one before them are joined into one call), ``on_snapshot(TerminalState)`` for each new screen (first after
    subscribing, again after every re-establishment), ``on_exit()`` once when the terminal's
    process ends or the terminal is killed, ``on_error(exc)`` when a re-establishment fails or
    the client closes. :meth:`output` and :meth:`expect` pull the same output on the caller's
    thread, from up to ``buffer_limit`` unread characters the stream keeps; with
    ``buffer_limit=0`` it keeps none (less memory and work for a stream read only by
    ``on_output``), and they raise ``ValueError``. Output produced while the connection is down
    is lost; the snapshot after the reconnect shows the screen. Release with :meth:`release` (or
    as a context manager).
    """

    def __init__(
        self,
        manager: TerminalStreamManager,
        terminal_id: str,
        *,
        on_output: Callable[[str], object] | None = None,
        on_snapshot: Callable[[TerminalState], object] | None = None,
        on_exit: Callable[[], object] | None = None,
        on_error: Callable[[BaseException], object] | None = None,
        buffer_limit: int = DEFAULT_LIMIT,
    ) -> None:
        self._manager = manager
        self.terminal_id = terminal_id
        self.state = StreamState.PENDING
        self.slot: int | None = None
        """The daemon's slot for this terminal on the current connection (``None`` when not live)."""
        self._ever_ready = False
        self.ready: Future[int] = CallbackFuture(manager.dispatcher.post_or_run_now)
        """Resolves to the first slot; fails if the daemon refuses or the client closes."""
        self._on_output = on_output
        self._on_snapshot = on_snapshot
        self._on_exit = on_exit
        self._on_error = on_error
        self._snapshot_memo: Memo[TerminalState] | None = None
        self._reader = OutputReader(f"terminal {terminal_id}", buffer_limit)
        # The reader thread's view of it, typed by its compiled base class (a direct call in the
        # compiled build); None when the stream keeps no output to pull.
        self._buffer: OutputBuffer | None = self._reader if self._reader.keeps else None
        self._batch_lock = threading.Lock()
        self._batch: list[bytes] | None = None  # guarded by _batch_lock: output the queued job will deliver
        self._batch_number = 0  # guarded by _batch_lock: the dispatcher's number for that job
        self._skipped = 0  # reader thread: bytes on_output did not get (flow control)
        self._skip_run = 0  # reader thread: of them, since the lagging period began (0: not lagging)

    @property
    def released(self) -> bool:
        return self.state is StreamState.RELEASED

    @property
    def dropped(self) -> int:
        """Characters of output dropped because ``output()``/``expect()`` did not read them before
        ``buffer_limit`` was reached (callbacks got them all); always 0 with ``buffer_limit=0``,
        which keeps nothing to pull."""
        return self._reader.dropped

    @property
    def skipped(self) -> int:
        """Bytes of output ``on_output`` did not get because the callback queue was over its
        :class:`~daemon_client.FlowControl` limit (``output()``/``expect()`` got them); output is
        skipped from the first frame refused until the backlog fell under half the limit."""
        return self._skipped

    @property
    def exited(self) -> bool:
        """True once the daemon reported the terminal's end."""
        return self.state is StreamState.EXITED

    @property
    def screen(self) -> TerminalState | None:
        """The last snapshot received (parsed on first use, at most once); ``None`` before any."""
        memo = self._snapshot_memo
        if memo is None:
            return None
        try:
            return memo.get()
        except DaemonClientError as exc:
            _log.warning("%r: unreadable snapshot: %s", self, exc)
            return None

    def output(self, timeout: float | None = None) -> Iterator[str]:
        """Iterate the output as it arrives (text with escape sequences), from where the last
        ``output()`` or ``expect()`` stopped. Each step waits up to ``timeout`` seconds
        (``None``: no limit); the iteration ends when nothing arrived in time, or once the
        terminal exited, the stream was released or the client closed and everything received
        was read."""
        return self._reader.chunks(timeout)

    def expect(
        self,
        pattern: str | re.Pattern[str],
        timeout: float | None = 30.0,
        *,
        strip_ansi: bool = True,
        window: int = DEFAULT_WINDOW,
    ) -> re.Match[str]:
        """Wait until the unread output matches ``pattern`` (``re.search``) and return the match;
        the output up to its end is consumed (like pexpect). ``strip_ansi``: match the text
        without escape sequences (a sequence still arriving is never matched). Raises
        :class:`~daemon_client.ExpectTimeout` after ``timeout`` seconds,
        :class:`~daemon_client.TerminalExited` if the terminal ends first
        (``SubscriptionReleased``/``ClientClosed`` if the stream ends so); the unmatched text is
        the exception's ``output``.

        ``window`` (16,384): the most output one search hands the pattern (plus 64 characters
        before it for look-behind): the unread output is searched ``window`` characters at a
        time, and new output together with the last ``window // 2`` characters already searched,
        so a match up to ``window // 2`` characters long is found wherever it falls (a longer
        one only within one window), and the match's ``string`` is that window. The pattern
        runs on this thread, outside the stream's lock; but ``re`` holds the interpreter for a
        whole search, so a search delays the reader thread by as long as it takes on one
        window: short for an ordinary pattern, unbounded for one that backtracks
        catastrophically. Calls waiting at once on one stream each get their own match, in the
        order the matches end in the output."""
        return self._reader.expect(pattern, timeout, strip=strip_ansi, window=window)

    def release(self) -> None:
        """Stop streaming (nothing to wait for: the daemon does not answer). Harmless twice."""
        self._manager.release(self)

    def __call__(self) -> None:
        self.release()

    def __enter__(self) -> TerminalStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"<TerminalStream {self.terminal_id} slot={self.slot} {self.state.value}>"

    # ------------------------------------------------------------------ callback-thread jobs
    def _queue_output(self, output: bytes) -> None:
        """Reader thread: an Output frame's payload joins the output job queued last, if nothing
        was queued after it (so order holds); else a new job is queued. One callback per run of
        frames the callback thread had not reached yet, decoded there all at once. Each frame is
        admitted by the callback queue's flow control, as a push is: refused, it is skipped for
        ``on_output`` (counted in :attr:`skipped`) until the backlog drained."""
        dispatcher = self._manager.dispatcher
        cost = len(output)
        if not dispatcher.backlog.admit(cost):
            if not self._skip_run:
                _log.warning("%r is lagging: the callback queue is over its limit; skipping its output for on_output",
                             self)  # fmt: skip
            self._skip_run += cost
            self._skipped += cost
            return
        if self._skip_run:
            _log.info("%r recovered after lagging: %d bytes of output skipped for on_output", self, self._skip_run)
            self._skip_run = 0
        with self._batch_lock:
            batch = self._batch
            if batch is not None and self._batch_number == dispatcher.posted:
                batch.append(output)
                return
            batch = [output]
            job = CountedJob(
                functools.partial(self._deliver_batch, batch), functools.partial(self._discard_batch, batch)
            )
            number = dispatcher.post_in_order(job)
            self._batch, self._batch_number = (batch, number) if number else (None, 0)  # 0: stopped
        if not number:
            dispatcher.backlog.cancel(cost)

    def _deliver_batch(self, batch: list[bytes]) -> None:
        """The batch's job, on the callback thread: one ``on_output`` call for its frames."""
        self._close_batch(batch)
        try:
            self._deliver_output(decode_output(batch[0] if len(batch) == 1 else b"".join(batch)))
        finally:
            self._manager.dispatcher.count_done(len(batch), sum(map(len, batch)))

    def _discard_batch(self, batch: list[bytes]) -> None:
        """The batch's job will never run: what the backlog counted for it is released."""
        self._close_batch(batch)
        self._manager.dispatcher.count_done(len(batch), sum(map(len, batch)))

    def _close_batch(self, batch: list[bytes]) -> None:
        """As the batch's job starts (or is discarded): later output goes to a new job, and no
        frame joins this batch any more."""
        with self._batch_lock:
            if self._batch is batch:
                self._batch = None

    def _deliver_output(self, text: str) -> None:
        if self._on_output is not None and self.state is not StreamState.RELEASED:
            self._manager.dispatcher.errors.call_isolated(self._on_output, text)

    def _deliver_snapshot(self, memo: Memo[TerminalState]) -> None:
        if self._on_snapshot is None or self.state is StreamState.RELEASED:
            return
        try:
            state = memo.get()
        except DaemonClientError as exc:
            _log.warning("%r: unreadable snapshot skipped: %s", self, exc)
            return
        self._manager.dispatcher.errors.call_isolated(self._on_snapshot, state)

    def _deliver_exit(self) -> None:
        if self._on_exit is not None and self.state is not StreamState.RELEASED:
            self._manager.dispatcher.errors.call_isolated(self._on_exit)

    def _deliver_error(self, error: BaseException) -> None:
        if self._on_error is not None:
            self._manager.dispatcher.errors.call_isolated(self._on_error, error)


class _Feed:
    """What one slot delivers to on the current connection (its fields change on the reader thread)."""

    __slots__ = ("last_snapshot", "memo", "output_since", "streams", "terminal_id")

    def __init__(self, terminal_id: str, streams: tuple[TerminalStream, ...]) -> None:
        self.terminal_id = terminal_id
        self.streams = streams
        self.last_snapshot: bytes | None = None
        self.memo: Memo[TerminalState] | None = None
        self.output_since = False


class TerminalStreamManager:
    """Every terminal stream of one client; see the module docstring."""

    def __init__(self, link: SubscriptionLink, send: Send) -> None:
        self._link = link
        self._send = send
        self.dispatcher = link.dispatcher
        self._lock = threading.Lock()
        self._streams: list[TerminalStream] = []
        self._feeds: dict[int, _Feed] = {}  # copy-on-write: read by the reader thread without the lock
        self._connected = False
        self._disposed = False
        self._orphans: set[str] = set()  # released while disconnected: unsubscribed at the next handshake

    # -------------------------------------------------------------- caller thread
    def add(self, stream: TerminalStream, timeout: float | None = None) -> TerminalStream:
        """Register a stream and subscribe now (the request waits up to ``timeout``, default the
        family's), or at the next handshake (after ``close()``: it fails at once)."""
        with self._lock:
            if self._disposed:
                move(stream, StreamState.RELEASED)
                stream._reader.end(lambda output: ClientClosed())
                settle(stream.ready, error=ClientClosed())
                return stream
            self._streams.append(stream)
            connected = self._connected
            if connected:
                move(stream, StreamState.ESTABLISHING)
        if connected:
            self._establish(stream, direct=False, timeout=timeout)
        return stream

    def slot_for(self, terminal_id: str) -> int | None:
        """The slot of a live stream of ``terminal_id`` on the current connection."""
        for slot, feed in self._feeds.items():
            if feed.terminal_id == terminal_id:
                return slot
        return None

    def release(self, stream: TerminalStream) -> None:
        with self._lock:
            previous = stream.state
            if previous is StreamState.RELEASED:
                return
            move(stream, StreamState.RELEASED)
            if stream in self._streams:
                self._streams.remove(stream)
            self._unroute_locked(stream)
            held = previous is StreamState.LIVE or (previous is StreamState.PENDING and stream._ever_ready)
            orphan = held and not self._others_locked(stream.terminal_id)
            now = orphan and previous is StreamState.LIVE and self._connected
            if orphan and not now:  # the session may keep the slot: unsubscribe at the next handshake
                self._orphans.add(stream.terminal_id)
        stream._reader.end(lambda output: SubscriptionReleased("the terminal stream was released"))
        settle(stream.ready, error=SubscriptionReleased("the terminal stream was released before it was ready"))
        if now:
            self._unsubscribe(stream.terminal_id)

    def _others_locked(self, terminal_id: str) -> bool:
        return any(s.terminal_id == terminal_id and s.state in _ACTIVE for s in self._streams)

    def _unsubscribe(self, terminal_id: str, *, direct: bool = False) -> None:
        with contextlib.suppress(ConnectionUnavailable):  # else the daemon frees the slot with the session
            self._send({"type": UNSUBSCRIBE_MESSAGE, "terminalId": terminal_id}, direct=direct)

    # -------------------------------------------------------------- establishment
    def _establish(self, stream: TerminalStream, *, direct: bool, timeout: float | None = None) -> None:
        try:
            self._link.submit(
                {"type": SUBSCRIBE_REQUEST, "terminalId": stream.terminal_id},
                control_timeout(SUBSCRIBE_REQUEST) if timeout is None else timeout,
                direct=direct,
                on_settle=lambda payload, error: self._acked(stream, payload, error),
            )
        except (ConnectionLost, NotConnected):
            self._back_to_pending(stream)
        except ClientClosed:
            return

    def _back_to_pending(self, stream: TerminalStream) -> None:
        with self._lock:
            if stream.state is StreamState.ESTABLISHING:
                move(stream, StreamState.PENDING)

    def _acked(self, stream: TerminalStream, payload: dict[str, Any] | None, error: BaseException | None) -> None:
        """Reader thread: the answer to a subscription (before any frame of its slot is read)."""
        if error is None and payload is not None:
            error = error_in_reply(payload, SUBSCRIBE_REQUEST, required_field="slot", missing="no slot")
            slot = payload.get("slot")
            if error is None and (type(slot) is not int or not 0 <= slot <= 255):
                error = ProtocolError(f"subscribe_terminal_response with an unusable slot {slot!r}")
            if error is None:
                self._go_live(stream, slot)  # type: ignore[arg-type]
                return
        if isinstance(error, ConnectionLost):
            self._back_to_pending(stream)  # tried again after the next handshake
            return
        error = error or ProtocolError("no answer to the terminal subscription")
        if stream._ever_ready and NOT_FOUND in str(error):
            self._ended(stream)  # gone while the connection was down: it exited meanwhile
            return
        self._failed(stream, error)

    def _go_live(self, stream: TerminalStream, slot: int) -> None:
        with self._lock:
            released = stream.state not in _ACTIVE  # released, or ended while subscribing
            orphan = released and not self._others_locked(stream.terminal_id)
            if not released:
                move(stream, StreamState.LIVE)
                stream.slot = slot
                feed = self._feeds.get(slot)
                if feed is None or feed.terminal_id != stream.terminal_id:
                    feed = _Feed(stream.terminal_id, ())
                if stream not in feed.streams:
                    feed.streams = (*feed.streams, stream)
                self._feeds = {**self._feeds, slot: feed}
        if orphan:
            self._unsubscribe(stream.terminal_id)  # released while subscribing: free the slot
        if released:
            return
        if not stream._ever_ready:
            stream._ever_ready = True
            settle(stream.ready, result=slot)

    def _failed(self, stream: TerminalStream, error: BaseException) -> None:
        with self._lock:
            if stream.state not in _ACTIVE:
                return
            move(stream, StreamState.FAILED)
            if stream in self._streams:
                self._streams.remove(stream)
            self._unroute_locked(stream)
            orphan = isinstance(error, RequestTimeout) and not self._others_locked(stream.terminal_id)
        if orphan:  # the daemon may still give it a slot: free it (harmless if it does not)
            self._unsubscribe(stream.terminal_id)
        stream._reader.end(lambda output: error)
        if not settle(stream.ready, error=error):  # once it was ready, the error is an event
            self.dispatcher.post_in_order(lambda: stream._deliver_error(error))
            self._link.establishment_failed(repr(stream), error, owned=False)

    def _ended(self, stream: TerminalStream) -> None:
        with self._lock:
            if stream.state not in _ACTIVE:
                return
            move(stream, StreamState.EXITED)
            if stream in self._streams:
                self._streams.remove(stream)
            self._unroute_locked(stream)
        stream._reader.end(exited(f"terminal {stream.terminal_id}"))
        self.dispatcher.post_in_order(stream._deliver_exit)

    def _unroute_locked(self, stream: TerminalStream) -> None:
        slot, stream.slot = stream.slot, None
        if slot is None:
            return
        feed = self._feeds.get(slot)
        if feed is None or stream not in feed.streams:
            return
        feeds = dict(self._feeds)
        remaining = tuple(s for s in feed.streams if s is not stream)
        if remaining:
            replacement = _Feed(feed.terminal_id, remaining)
            replacement.last_snapshot, replacement.memo = feed.last_snapshot, feed.memo
            replacement.output_since = feed.output_since
            feeds[slot] = replacement
        else:
            del feeds[slot]
        self._feeds = feeds

    # -------------------------------------------------------------- reader thread
    def route_binary(self, data: bytes) -> bool:
        """Reader thread: one binary frame; False when it is not for a stream of this client."""
        if len(data) > 1 and data[0] == OUTPUT:  # the stream's bulk: no frame object, one job per stream
            feed = self._feeds.get(data[1])
            if feed is None:
                return False
            feed.output_since = True
            output = data[2:]  # decoded by the callback thread, and by output()/expect() when read
            if output:
                for stream in feed.streams:
                    buffer = stream._buffer
                    if buffer is not None:
                        buffer.push(output)
                    if stream._on_output is not None:
                        stream._queue_output(output)
            return True
        frame = decode_terminal_frame(data)
        if frame is None:
            return False
        feed = self._feeds.get(frame.slot)
        if feed is None or frame.opcode != SNAPSHOT:
            return False
        post = self.dispatcher.post_in_order
        payload = frame.payload
        if feed.memo is None or payload != feed.last_snapshot:
            feed.last_snapshot = payload
            feed.memo = Memo(lambda: parse_terminal_state(payload))
        memo, fresh = feed.memo, feed.output_since
        feed.output_since = False
        for stream in feed.streams:
            if stream._snapshot_memo is memo and not fresh:
                continue  # a byte-identical repeat with nothing in between
            stream._snapshot_memo = memo
            post(lambda stream=stream: stream._deliver_snapshot(memo))  # type: ignore[misc]
        return True

    def route_exit(self, message: SessionMessage) -> None:
        """Reader thread: ``terminal_stream_exit`` (the slot is released by the daemon)."""
        terminal_id = message.payload.get("terminalId")
        with self._lock:
            streams = [s for s in self._streams if s.terminal_id == terminal_id and s.state in _ACTIVE]
        for stream in streams:
            self._ended(stream)

    def on_disconnect(self) -> None:
        """Reader thread, when a connection ends: slots mean nothing on the next one."""
        with self._lock:
            self._connected = False
            self._feeds = {}
            for stream in self._streams:
                stream.slot = None
                if stream.state is StreamState.LIVE:
                    move(stream, StreamState.PENDING)

    def restore(self, kind: HostKind, reconnected: bool) -> None:
        """Reader thread, after each handshake: subscribe every pending stream (again)."""
        with self._lock:
            self._connected = True
            pending = [s for s in self._streams if s.state is StreamState.PENDING]
            for stream in pending:
                move(stream, StreamState.ESTABLISHING)
            orphans = sorted(self._orphans - {s.terminal_id for s in self._streams})
            self._orphans.clear()
        for terminal_id in orphans:
            self._unsubscribe(terminal_id, direct=True)
        for stream in pending:
            self._establish(stream, direct=True)

    def release_for_close(self, kind: HostKind) -> list[Future[Any]]:
        """``close()`` while connected: unsubscribe every streamed terminal (no reply exists)."""
        with self._lock:
            terminals = sorted({s.terminal_id for s in self._streams if s.state is StreamState.LIVE})
        for terminal_id in terminals:
            self._unsubscribe(terminal_id)
        return []

    def dispose(self) -> None:
        """After ``close()``: end every stream."""
        with self._lock:
            streams, self._streams = self._streams, []
            self._feeds = {}
            self._disposed = True
        closed = ClientClosed()
        for stream in streams:
            move(stream, StreamState.RELEASED)
            stream._reader.end(lambda output: closed)
            settle(stream.ready, error=closed)
            self.dispatcher.post_in_order(lambda stream=stream: stream._deliver_error(closed))  # type: ignore[misc]

    def streams(self) -> list[TerminalStream]:
        """The streams not released, ended or failed (a copy)."""
        with self._lock:
            return list(self._streams)
