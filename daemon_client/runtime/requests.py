"""The table of requests awaiting replies: ``requestId`` → :class:`~concurrent.futures.Future`.

* Any thread adds requests (:meth:`RequestTable.add`).
* The reader thread settles them (:meth:`RequestTable.resolve`); it never runs user
  code: done-callbacks that users attach are re-posted to the dispatcher.
* The timer thread expires them; the connection fails them all on disconnect and close.

Requests made while the connection is being established wait here unsent ("queued")
and are written in order once the handshake completes.
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, InvalidStateError
from typing import Any, TypeVar

from daemon_client.errors import ProtocolError, RequestTimeout, RpcError
from daemon_client.protocol.replies import ReplyMatcher
from daemon_client.runtime.timers import Timer, TimerThread

_log = logging.getLogger("daemon_client.runtime.requests")
T = TypeVar("T")
Post = Callable[[Callable[[], None]], None]
"""Queue a job for the callback thread, or once the client is closed run it at once on this
thread, its errors reported like any callback's: ``Dispatcher.post_or_run_now``."""
SettleHook = Callable[[dict[str, Any] | None, BaseException | None], None]
"""Internal hook told how a request ended, before its future is settled. It runs on the
thread that settles it (reader, timer, or the thread failing it) and must not block."""


class CallbackFuture(Future[T]):
    """A future whose done-callbacks run on the client's callback thread, never on the
    internal thread (reader, timer) that completes it.

    Every done-callback runs exactly once, whenever it is added: once the client is closed
    (its callback thread stopped), a callback added then runs at once on the adding thread,
    as with a plain :class:`~concurrent.futures.Future`.
    """

    def __init__(self, post: Post) -> None:
        super().__init__()
        self._post = post

    def add_done_callback(self, fn: Callable[[Future[T]], object]) -> None:
        post = self._post

        def forward(fut: Future[T]) -> None:
            post(functools.partial(_call, fn, fut))  # what it raises reaches on_callback_error

        super().add_done_callback(forward)


ReplyFuture = CallbackFuture[dict[str, Any]]


def _call(fn: Callable[[Future[T]], object], fut: Future[T]) -> None:
    fn(fut)


class PendingRequest:
    """One request: its frame, what answers it, and its future."""

    __slots__ = ("frame", "future", "matcher", "on_settle", "request_id", "request_type", "sent_at", "timeout", "timer")

    def __init__(
        self,
        request_id: str,
        request_type: str,
        matcher: ReplyMatcher,
        frame: str,
        *,
        future: ReplyFuture,
        timeout: float,
    ) -> None:
        self.request_id = request_id
        self.request_type = request_type
        self.matcher = matcher
        self.frame = frame
        self.future = future
        self.timer: Timer | None = None  # set and read under RequestTable._lock
        self.sent_at: float | None = None  # set once when written (reader or caller); read for messages only
        self.timeout = timeout
        self.on_settle: SettleHook | None = None

    def finish(self, result: dict[str, Any] | None = None, error: BaseException | None = None) -> bool:
        """Tell the settle hook, then settle the future (the hook goes first so that what it
        posts precedes anything a waiter does next)."""
        hook = self.on_settle
        if hook is not None:
            try:
                hook(result, error)
            except Exception:  # noqa: BLE001 - internal hook; the future must still settle
                _log.exception("settle hook of %s failed", self.request_type)
        return settle(self.future, result=result, error=error)


class RequestTable:
    """Thread-safe pending-request table. Settling a future never happens under the lock."""

    def __init__(self, timers: TimerThread, post: Post, *, id_prefix: str = "req") -> None:
        self._timers = timers
        self._post = post
        self._lock = threading.Lock()
        self._pending: dict[str, PendingRequest] = {}  # guarded by _lock
        self._queued: list[PendingRequest] = []  # guarded by _lock
        self._ids = itertools.count(1)  # next() on a count is atomic: any thread
        self._prefix = id_prefix

    def new_request_id(self) -> str:
        return f"{self._prefix}-{next(self._ids)}"

    def __len__(self) -> int:
        return len(self._pending)

    def add(
        self,
        request_id: str,
        request_type: str,
        matcher: ReplyMatcher,
        frame: str,
        timeout: float,
        *,
        queued: bool,
        on_settle: SettleHook | None = None,
    ) -> PendingRequest:
        """Register a request; its timeout starts now. ``queued``: not written yet."""
        future = ReplyFuture(self._post)
        entry = PendingRequest(request_id, request_type, matcher, frame, future=future, timeout=timeout)
        entry.sent_at = None if queued else time.monotonic()
        entry.on_settle = on_settle
        with self._lock:
            if request_id in self._pending:
                raise ValueError(f"requestId {request_id!r} is already pending")
            self._pending[request_id] = entry
            if queued:
                self._queued.append(entry)
            # Under the lock: whoever pops the entry sees its timer and cancels it.
            entry.timer = self._timers.schedule(timeout, lambda: self.expire(request_id))
        return entry

    def take_queued(self) -> list[PendingRequest]:
        """The queued requests still pending, in order; they count as sent from now."""
        with self._lock:
            queued, self._queued = self._queued, []
            live = [entry for entry in queued if self._pending.get(entry.request_id) is entry]
        now = time.monotonic()
        for entry in live:
            entry.sent_at = now
        return live

    def _pop(self, request_id: str) -> PendingRequest | None:
        with self._lock:
            entry = self._pending.pop(request_id, None)
            if entry is not None and self._queued and entry in self._queued:
                self._queued.remove(entry)
            timer = entry.timer if entry is not None else None
        if timer is not None:
            timer.cancel()
        return entry

    def resolve(self, request_id: object, message_type: str, payload: dict[str, Any]) -> bool:
        """Reader thread: settle the request this message answers. False if it answers none."""
        if type(request_id) is not str:
            return False
        with self._lock:
            entry = self._pending.get(request_id)
            if entry is None:
                return False
            if message_type == "status" and not entry.matcher.matches(message_type, payload):
                return False  # a status push that echoes the id (progress, a new status): not the reply
            del self._pending[request_id]
            timer = entry.timer
        if timer is not None:
            timer.cancel()
        if message_type == "rpc_error":
            error = payload.get("error")
            code = payload.get("code")
            entry.finish(
                error=RpcError(
                    str(error) if error else "the daemon could not handle the request",
                    code=code if isinstance(code, str) else None,
                    request_type=entry.request_type,
                    request_id=request_id,
                ),
            )
        elif entry.matcher.matches(message_type, payload):
            entry.finish(result=payload)
        else:
            entry.finish(
                error=ProtocolError(
                    f"{entry.request_type} ({request_id}) was answered by {message_type!r}, "
                    f"expected {entry.matcher.type!r}"
                ),
            )
        return True

    def expire(self, request_id: str) -> None:
        """Fail one request with :class:`RequestTimeout` (timer thread, or a caller that gave up)."""
        entry = self._pop(request_id)
        if entry is None:
            return
        where = "waiting for the connection" if entry.sent_at is None else "waiting for the reply"
        entry.finish(
            error=RequestTimeout(
                f"{entry.request_type} ({request_id}) got no reply within {entry.timeout:g} s ({where})",
                request_type=entry.request_type,
                request_id=request_id,
                timeout=entry.timeout,
            ),
        )

    def forget(self, request_id: str) -> None:
        """Drop a request without settling it (the caller settles it)."""
        self._pop(request_id)

    def fail_all(self, make_error: Callable[[PendingRequest], BaseException]) -> int:
        """Fail every pending and queued request; return how many."""
        with self._lock:
            entries: Iterable[PendingRequest] = list(self._pending.values())
            self._pending.clear()
            self._queued.clear()
            timers = [entry.timer for entry in entries if entry.timer is not None]
        for timer in timers:
            timer.cancel()
        count = 0
        for entry in entries:
            if entry.finish(error=make_error(entry)):
                count += 1
        return count


def settle(future: Future[Any], *, result: Any = None, error: BaseException | None = None) -> bool:
    """Complete ``future`` unless it is already done (e.g. cancelled by its caller)."""
    try:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
    except InvalidStateError:
        return False
    return True
