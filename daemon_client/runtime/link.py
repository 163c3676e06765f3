"""The shared state of one logical connection, and the one lock that guards it.

``Link`` is what the connection's threads share: the facade's callers (any thread), the
reader thread's supervisor, the timer thread (handshake deadline, heartbeat, stall
watchdog) and the writer thread (through :class:`Socket`). Every field of :class:`Link`
and of the current :class:`Socket` is guarded by ``Link.lock`` unless its comment says
otherwise. The lock is held only for short, non-blocking steps: no socket I/O, no user
code and no wait ever happens under it; state listeners are *posted* to the callback
thread under it, so that they hear transitions in the order they happened.

Lock order: ``Link.lock`` → ``RequestTable._lock`` → ``TimerThread._cond``;
``Link.lock`` → ``Dispatcher._queue_lock``; ``Writer._cond`` → ``TimerThread._cond``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from daemon_client._values import Record
from daemon_client.errors import DaemonClientError
from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.models import ServerInfo
from daemon_client.runtime.dispatch import Dispatcher
from daemon_client.runtime.handshake import Failure
from daemon_client.runtime.requests import settle
from daemon_client.runtime.timers import Timer, TimerThread
from daemon_client.runtime.writer import Writer
from daemon_client.state import ConnectionState, StateListener
from daemon_client.transport.base import Transport

if TYPE_CHECKING:
    from daemon_client.protocol.frame_models import HelloRejected

RestoreHook = Callable[[HostKind, bool], None]
CloseHook = Callable[[HostKind], list[Future[Any]]]
DisconnectHook = Callable[[], None]
CLOSE_GRACE = 1.0
"""Seconds the writer gets to write a close frame before the socket is aborted anyway."""

STUCK_WRITE_GRACE = 0.1
"""Seconds a write in progress at ``close()`` gets to end before it is taken as stuck."""


class Hooks(Record):
    """One observation family's connection hooks (see ``Connection.add_hooks``); never changed
    once built."""

    __slots__ = ("close", "disconnect", "restore")

    restore: RestoreHook
    disconnect: DisconnectHook | None
    close: CloseHook | None

    def __init__(
        self, restore: RestoreHook, disconnect: DisconnectHook | None = None, close: CloseHook | None = None
    ) -> None:
        self.restore = restore
        self.disconnect = disconnect
        self.close = close


class Socket:
    """One transport and its writer, from the connect attempt to its end."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport  # immutable
        self.writer: Writer | None = None  # set by the reader once connected; guarded by Link.lock
        self.handshaken = False  # guarded by Link.lock
        self.failure: Failure | None = None  # why it was ended from outside; guarded by Link.lock
        self.rejection: HelloRejected | None = None  # reader thread only
        self.deadline: Timer | None = None  # the handshake deadline; reader thread only


class _Registration:
    """A state listener; ``active`` is cleared by its remover (read at delivery time)."""

    __slots__ = ("active", "listener")

    def __init__(self, listener: StateListener) -> None:
        self.listener = listener
        self.active = True


class Link:
    """Shared state of one logical connection; see the module docstring."""

    def __init__(self, dispatcher: Dispatcher, timers: TimerThread, *, name: str, logger: logging.Logger) -> None:
        self.lock = threading.Lock()
        self.dispatcher = dispatcher  # immutable reference
        self.timers = timers  # immutable reference
        self.name = name
        self.log = logger
        # Guarded by lock:
        self.state = ConnectionState.IDLE
        self.socket: Socket | None = None
        self.server_info: ServerInfo | None = None
        self.host_kind: HostKind | None = None
        self.last_error: DaemonClientError | None = None
        self.closing = False
        self.ever_connected = False
        self.waiters: list[Future[ServerInfo]] = []
        self.reader: threading.Thread | None = None  # the live supervisor's thread, if any
        self.retired: list[threading.Thread] = []  # supervisor threads that handed over, not yet joined
        # Copy-on-write: replaced under lock, read without it (a snapshot).
        self.listeners: tuple[_Registration, ...] = ()
        self.hooks: tuple[Hooks, ...] = ()
        # set once when the terminals namespace is built; read by the reader thread without the lock
        self.binary_router: Callable[[bytes], bool] | None = None
        self.wake = threading.Event()  # thread-safe; set once, by close(): ends the reconnect backoff
        self.closed = threading.Event()  # thread-safe; set once, when the first close() is done

    # ------------------------------------------------------------------ state
    def set_state(self, new: ConnectionState, reason: str) -> None:
        with self.lock:
            self.set_state_locked(new, reason)

    def set_state_locked(self, new: ConnectionState, reason: str) -> None:
        """Under ``lock``: move to ``new`` and post the listeners (in transition order)."""
        old = self.state
        if old is ConnectionState.DISPOSED or (old is new and new is not ConnectionState.CONNECTING):
            return
        self.state = new
        if new is not ConnectionState.CONNECTED:
            self.server_info = None
        self.log.info("%s: %s -> %s (%s)", self.name, old.value, new.value, reason)
        for registration in self.listeners:
            self.dispatcher.post_in_order(lambda r=registration: _deliver(r, old, new, reason))  # type: ignore[misc]

    def add_listener(self, listener: StateListener) -> Callable[[], None]:
        registration = _Registration(listener)
        with self.lock:
            self.listeners = (*self.listeners, registration)
            current = self.state
            self.dispatcher.post_in_order(lambda: _deliver(registration, current, current, "current state"))

        def remove() -> None:
            registration.active = False
            with self.lock:
                self.listeners = tuple(r for r in self.listeners if r is not registration)

        return remove

    def retire_reader_locked(self) -> None:
        """Under ``lock``, on a reader thread: it no longer supervises (it returns right after).
        Idempotent; ``close()`` joins the retired threads still alive."""
        me = threading.current_thread()
        if self.reader is me:
            self.reader = None
        if me not in self.retired:
            self.retired = [thread for thread in self.retired if thread.is_alive()] + [me]

    def take_waiters_locked(self) -> list[Future[ServerInfo]]:
        waiters, self.waiters = self.waiters, []
        return waiters

    def settle_waiters(self, info: ServerInfo | None, error: BaseException | None) -> None:
        with self.lock:
            waiters = self.take_waiters_locked()
        for waiter in waiters:
            settle(waiter, result=info, error=error)

    # ------------------------------------------------------------------ ending a socket
    def end_socket(
        self,
        failure: Failure,
        *,
        code: int,
        reason: str,
        only: Socket | None = None,
        unless_handshaken: bool = False,
    ) -> None:
        """Any thread, never blocks: end the current socket (``only`` that one) with
        ``failure`` as its outcome. The writer gets a close frame if it is idle, and the
        socket is aborted at once if a write is in progress, else after :data:`CLOSE_GRACE`."""
        with self.lock:
            sock = self.socket
            if sock is None or (only is not None and sock is not only):
                return
            if unless_handshaken and sock.handshaken:
                return
            if sock.failure is None:
                sock.failure = failure
            writer = sock.writer
        self.log.warning("%s: %s", self.name, failure.error)
        reason = reason.encode("utf-8")[:120].decode("utf-8", errors="ignore")  # a close reason fits in 123 bytes
        abort_now = writer is None or not writer.finish((code, reason))
        if abort_now:
            sock.transport.abort()
        else:
            self.timers.schedule(CLOSE_GRACE, sock.transport.abort)


def _deliver(registration: _Registration, old: ConnectionState, new: ConnectionState, reason: str) -> None:
    """Callback thread: call a state listener unless it was removed meanwhile."""
    if registration.active:
        registration.listener(old, new, reason)
