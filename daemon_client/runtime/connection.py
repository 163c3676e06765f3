"""The connection supervisor: state machine, handshake, reader loop, reconnect loop.

Threads:

* the **reader thread** (one per client, named ``…-reader``) runs :meth:`Connection._supervise`:
  it opens a transport, sends ``hello``, reads frames until the socket ends, then backs
  off and reconnects. It decodes frames, settles request futures and hands pushes to
  ``on_push``; it never runs user code (state listeners are posted to the dispatcher).
* the **timer thread** enforces the handshake deadline and drives the heartbeat.
* any thread may call :meth:`connect`, :meth:`submit`, :meth:`close`.

Lock order: ``Connection._lock`` → ``RequestTable._lock``; ``_send_lock`` is only ever
taken alone. No user code runs under any of them.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, wait
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import attrs

from daemon_client.config import Heartbeat, ReconnectPolicy
from daemon_client.discovery import TargetSource
from daemon_client.errors import (
    ClientClosed,
    ConnectionLost,
    ConnectTimeout,
    DaemonClientError,
    NotConnected,
)
from daemon_client.protocol.codec import (
    encode_hello,
    encode_session,
)
from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.models import HelloRejected, ServerInfo, SessionMessage
from daemon_client.protocol.replies import reply_for
from daemon_client.runtime.dispatch import Dispatcher
from daemon_client.runtime.handshake import Failure, auth_carriers, build_hello
from daemon_client.runtime.heartbeat import HeartbeatMonitor
from daemon_client.runtime.reader_loop import ReaderLoop
from daemon_client.runtime.requests import ReplyFuture, RequestTable, SettleHook
from daemon_client.runtime.timers import TimerThread
from daemon_client.state import ConnectionState, StateListener
from daemon_client.transport.base import Transport, TransportError

RestoreHook = Callable[[HostKind, bool], None]
CloseHook = Callable[[HostKind], list[Future[Any]]]
DisconnectHook = Callable[[], None]
CLOSE_RELEASE_TIMEOUT = 2.0


@attrs.frozen
class ConnectionOptions:
    """What the supervisor needs to open connections."""

    targets: TargetSource
    client_id: str
    app_version: str
    password: str | None = attrs.field(repr=False)
    connect_timeout: float
    reconnect: ReconnectPolicy
    heartbeat: Heartbeat
    transport_factory: Callable[[], Transport]
    ssl_context: Any = None
    max_frame_bytes: int = 64 * 1024 * 1024
    rng: random.Random | None = None


class Connection(ReaderLoop):
    """Owns one logical connection to a daemon across reconnects. See the module docstring."""

    def __init__(
        self,
        options: ConnectionOptions,
        *,
        requests: RequestTable,
        dispatcher: Dispatcher,
        timers: TimerThread,
        on_push: Callable[[SessionMessage], None],
        name: str,
        logger: logging.Logger,
    ) -> None:
        self._opts = options
        self._requests = requests
        self._dispatcher = dispatcher
        self._timers = timers
        self._on_push = on_push
        self._binary_router: Callable[[bytes], bool] | None = None
        self._name = name
        self._log = logger
        self._frame_log = logger.getChild("frames")
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._state = ConnectionState.IDLE
        self._transport: Transport | None = None
        self._handshaken = False
        self._abort_failure: Failure | None = None
        self._rejection: HelloRejected | None = None
        self._server_info: ServerInfo | None = None
        self._host_kind: HostKind | None = None
        self._last_error: DaemonClientError | None = None
        self._listeners: list[StateListener] = []
        self._restore_hooks: list[RestoreHook] = []
        self._close_hooks: list[CloseHook] = []
        self._disconnect_hooks: list[DisconnectHook] = []
        self._waiters: list[Future[ServerInfo]] = []
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()
        self._closing = False
        self._ever_connected = False
        self._headers, self._subprotocols = auth_carriers(options.password)
        self._hello_text = encode_hello(build_hello(options.client_id, options.app_version, options.password))
        self._heartbeat = HeartbeatMonitor(options.heartbeat, timers, self._send_ping, self._heartbeat_dead)

    # ------------------------------------------------------------------ properties
    @property
    def state(self) -> ConnectionState:
        return self._state

    @property
    def server_info(self) -> ServerInfo | None:
        return self._server_info

    @property
    def host_kind(self) -> HostKind | None:
        return self._host_kind

    @property
    def last_error(self) -> DaemonClientError | None:
        return self._last_error

    # ------------------------------------------------------------------ listeners and hooks
    def add_state_listener(self, listener: StateListener) -> Callable[[], None]:
        """Call ``listener(old, new, reason)`` on the callback thread, now and on every transition."""
        with self._lock:
            self._listeners.append(listener)
            current = self._state
        self._dispatcher.post(lambda: listener(current, current, "current state"))

        def remove() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return remove

    def add_hooks(
        self,
        restore: RestoreHook,
        *,
        disconnect: DisconnectHook | None = None,
        close: CloseHook | None = None,
    ) -> None:
        """Register an observation family's hooks at any time. If the current connection
        already completed its handshake, ``restore(kind, False)`` runs now (on this thread),
        so that the family learns the host kind without waiting for a reconnect."""
        with self._lock:
            self._restore_hooks.append(restore)
            if disconnect is not None:
                self._disconnect_hooks.append(disconnect)
            if close is not None:
                self._close_hooks.append(close)
            kind = self._host_kind if self._handshaken else None
        if kind is not None:
            restore(kind, False)

    def add_restore_hook(self, hook: RestoreHook) -> None:
        """Run ``hook(host_kind, reconnected)`` on the reader thread after each handshake, before
        queued requests are written. Internal code only: it must not block."""
        with self._lock:
            self._restore_hooks.append(hook)

    def add_close_hook(self, hook: CloseHook) -> None:
        """Run ``hook(host_kind)`` in ``close()`` while still connected; it sends release requests
        and returns their futures, which ``close()`` awaits for at most 2 s in total."""
        with self._lock:
            self._close_hooks.append(hook)

    def add_disconnect_hook(self, hook: DisconnectHook) -> None:
        """Run ``hook()`` on the reader thread each time a connection ends (internal, non-blocking)."""
        with self._lock:
            self._disconnect_hooks.append(hook)

    def reset_transport(self, reason: str) -> None:
        """Drop the current socket (any thread) so that the reconnect rules apply; used when the
        server-side state of an observation is unknown (protocol.md 4.4, 4.6)."""
        self._abort(Failure(ConnectionLost(reason)), code=1001, close_reason=reason[:100])

    # ------------------------------------------------------------------ connect / close
    def connect(self, timeout: float | None) -> ServerInfo:
        """Connect (or wait for the connection in progress) and return ``server_info``."""
        waiter: Future[ServerInfo] = Future()
        with self._lock:
            state = self._state
            if state is ConnectionState.DISPOSED:
                raise ClientClosed("Daemon client is disposed")
            if state is ConnectionState.CONNECTED and self._server_info is not None:
                return self._server_info
            self._waiters.append(waiter)
            start = self._thread is None or not self._thread.is_alive()
            if start:
                self._wake.clear()
                self._last_error = None
                self._thread = threading.Thread(target=self._supervise, name=f"{self._name}-reader", daemon=True)
        if start:
            self._thread.start()  # type: ignore[union-attr]
        limit = timeout if timeout is not None else self._opts.connect_timeout + 5.0
        try:
            return waiter.result(limit)
        except FutureTimeout:
            raise ConnectTimeout(f"no connection to {self._opts.targets.current.url} within {limit:g} s") from None
        finally:
            with self._lock:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    def close(self, timeout: float = 5.0) -> None:
        """Close for good: stop reconnecting, close the socket (1000), fail pending work."""
        self._release_for_close()
        with self._lock:
            if self._closing:
                return
            self._closing = True
            transport = self._transport
            thread = self._thread
        self._wake.set()
        self._heartbeat.stop()
        if transport is not None:
            try:
                transport.close(1000, "Client closed")
            except Exception as exc:  # noqa: BLE001 - best effort
                self._log.debug("close frame not sent: %s", exc)
            transport.abort()
        self._requests.fail_all(lambda _e: ClientClosed())
        self._settle_waiters(None, ClientClosed())
        self._set_state(ConnectionState.DISPOSED, "close() called")
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _release_for_close(self) -> None:
        """Best-effort release of owned observations while still connected (protocol.md 10.6)."""
        with self._lock:
            if self._closing or self._state is not ConnectionState.CONNECTED or self._host_kind is None:
                return
            hooks, kind = list(self._close_hooks), self._host_kind
        futures: list[Future[Any]] = []
        for hook in hooks:
            try:
                futures.extend(hook(kind))
            except Exception:  # noqa: BLE001 - best effort
                self._log.exception("releasing observations at close failed")
        if futures:
            _, pending = wait(futures, timeout=CLOSE_RELEASE_TIMEOUT)
            if pending:
                self._log.info("%d releases unanswered at close; the daemon releases them on disconnect", len(pending))

    # ------------------------------------------------------------------ sending
    def submit(
        self,
        message: Mapping[str, Any],
        timeout: float,
        *,
        direct: bool = False,
        on_settle: SettleHook | None = None,
    ) -> ReplyFuture:
        """Register and send a request; return the future of its reply payload.

        While the handshake is in progress the request waits unsent and is written after
        it (``direct``: write now, for re-establishment requests sent by restore hooks).
        """
        request_type = message.get("type")
        if not isinstance(request_type, str) or not request_type:
            raise ValueError("a request message needs a non-empty 'type'")
        request_id = message.get("requestId")
        if request_id is None:
            request_id = self._requests.new_request_id()
            message = {**message, "requestId": request_id}
        elif not isinstance(request_id, str) or not request_id:
            raise ValueError("requestId must be a non-empty string")
        frame = encode_session(message)
        with self._lock:
            state = self._state
            if state is ConnectionState.DISPOSED or self._closing:
                raise ClientClosed("Daemon client is disposed")
            if state is not ConnectionState.CONNECTING and state is not ConnectionState.CONNECTED:
                raise NotConnected(f"Transport not connected (status: {state.value})")
            queued = not direct and state is not ConnectionState.CONNECTED
            entry = self._requests.add(
                request_id, request_type, reply_for(request_type), frame, timeout, queued=queued, on_settle=on_settle
            )
        if not queued:
            try:
                self._write(frame)
            except DaemonClientError as exc:
                self._requests.forget(request_id)
                entry.finish(error=exc)
        return entry.future

    def send_message(self, message: Mapping[str, Any], *, direct: bool = False) -> None:
        """Send a fire-and-forget session message (no reply is awaited). Raises
        ``NotConnected``/``ClientClosed`` unless connected (``direct``: or handshaking, for
        re-establishment messages sent by restore hooks), ``ConnectionLost`` if the write fails."""
        self._check_sendable(direct)
        self._write(encode_session(message))

    def send_binary(self, data: bytes) -> None:
        """Send one binary frame (terminal input and resize); errors as :meth:`send_message`."""
        self._check_sendable(False)
        with self._send_lock:
            transport = self._transport
            if transport is None:
                raise ConnectionLost("Connection lost")
            try:
                transport.send_binary(data)
            except TransportError as exc:
                raise ConnectionLost(f"Connection lost while sending: {exc}") from exc

    def _check_sendable(self, direct: bool) -> None:
        with self._lock:
            state = self._state
            if state is ConnectionState.DISPOSED or self._closing:
                raise ClientClosed("Daemon client is disposed")
            if state is not ConnectionState.CONNECTED and not (direct and state is ConnectionState.CONNECTING):
                raise NotConnected(f"Transport not connected (status: {state.value})")

    def set_binary_router(self, router: Callable[[bytes], bool] | None) -> None:
        """Route inbound binary frames to ``router(data) -> taken`` on the reader thread (it must
        not block and never runs user code); frames it does not take are logged once per
        connection and dropped, as all binary frames are without a router."""
        self._binary_router = router
