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

import contextlib
import enum
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, wait
from typing import Any

import attrs

from daemon_client.config import Heartbeat, ReconnectPolicy
from daemon_client.dispatch import Dispatcher
from daemon_client.errors import (
    ClientClosed,
    ConnectionLost,
    ConnectTimeout,
    DaemonClientError,
    NotConnected,
)
from daemon_client.handshake import Failure, auth_carriers, build_hello, failure_for_close, failure_for_rejection
from daemon_client.heartbeat import HeartbeatMonitor
from daemon_client.protocol.codec import (
    PING_FRAME,
    MalformedFrame,
    decode_frame,
    encode_hello,
    encode_session,
    parse_server_info,
    preview,
    redact_hello,
)
from daemon_client.protocol.hosts import HostKind, decide_host_kind
from daemon_client.protocol.models import HelloRejected, Pong, ServerInfo, SessionMessage
from daemon_client.protocol.replies import reply_for
from daemon_client.requests import ReplyFuture, RequestTable, SettleHook, settle
from daemon_client.timers import TimerThread
from daemon_client.transport.base import ConnectParams, FrameRejected, Transport, TransportClosed, TransportError


class ConnectionState(enum.Enum):
    """The client's connection state (protocol 10.1)."""

    IDLE = "idle"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    DISCONNECTED = "disconnected"
    DISPOSED = "disposed"


StateListener = Callable[[ConnectionState, ConnectionState, str], None]
RestoreHook = Callable[[HostKind, bool], None]
CloseHook = Callable[[HostKind], list[Future[Any]]]
DisconnectHook = Callable[[], None]
CLOSE_RELEASE_TIMEOUT = 2.0


@attrs.frozen
class ConnectionOptions:
    """What the supervisor needs to open connections."""

    url: str
    client_id: str
    app_version: str
    password: str | None
    connect_timeout: float
    reconnect: ReconnectPolicy
    heartbeat: Heartbeat
    transport_factory: Callable[[], Transport]
    ssl_context: Any = None
    max_frame_bytes: int = 64 * 1024 * 1024
    rng: random.Random | None = None


class Connection:
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

    def _set_state(self, new: ConnectionState, reason: str) -> None:
        with self._lock:
            old = self._state
            if old is ConnectionState.DISPOSED or (old is new and new is not ConnectionState.CONNECTING):
                return
            self._state = new
            if new is not ConnectionState.CONNECTED:
                self._server_info = None
            listeners = list(self._listeners)
        self._notify(listeners, old, new, reason)

    def _notify(self, listeners: list[StateListener], old: ConnectionState, new: ConnectionState, reason: str) -> None:
        self._log.info("%s: %s -> %s (%s)", self._name, old.value, new.value, reason)
        post = self._dispatcher.post
        for listener in listeners:
            post(lambda listener=listener: listener(old, new, reason))  # type: ignore[misc]

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
        except TimeoutError:
            raise ConnectTimeout(f"no connection to {self._opts.url} within {limit:g} s") from None
        finally:
            with self._lock:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    def _settle_waiters(self, info: ServerInfo | None, error: BaseException | None) -> None:
        with self._lock:
            waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            settle(waiter, result=info, error=error)

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
        self._requests.fail_all(lambda _e: ClientClosed("Daemon client closed"))
        self._settle_waiters(None, ClientClosed("Daemon client closed"))
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

    def send_message(self, message: Mapping[str, Any]) -> None:
        """Send a fire-and-forget session message (no reply is awaited). Raises
        ``NotConnected``/``ClientClosed`` unless connected, ``ConnectionLost`` if the write fails."""
        with self._lock:
            state = self._state
            if state is ConnectionState.DISPOSED or self._closing:
                raise ClientClosed("Daemon client is disposed")
            if state is not ConnectionState.CONNECTED:
                raise NotConnected(f"Transport not connected (status: {state.value})")
        self._write(encode_session(message))

    def _write(self, text: str) -> None:
        with self._send_lock:
            transport = self._transport
            if transport is None:
                raise ConnectionLost("Connection lost")
            if self._frame_log.isEnabledFor(logging.DEBUG):
                self._frame_log.debug("-> %s", preview(text, 500))
            try:
                transport.send_text(text)
            except TransportError as exc:
                raise ConnectionLost(f"Connection lost while sending: {exc}") from exc

    def _send_ping(self) -> None:
        self._write(PING_FRAME)

    def _heartbeat_dead(self, reason: str) -> None:
        self._abort(Failure(ConnectionLost(reason)), code=1001, close_reason="Heartbeat timeout")

    def _abort(
        self,
        failure: Failure,
        *,
        code: int,
        close_reason: str,
        only: Transport | None = None,
        unless_handshaken: bool = False,
    ) -> None:
        """Timer thread: end the current socket (``only`` that one) with ``failure`` as its outcome."""
        with self._lock:
            transport = self._transport
            if transport is None or (only is not None and transport is not only):
                return
            if unless_handshaken and self._handshaken:
                return
            self._abort_failure = failure
        self._log.warning("%s: %s", self._name, failure.error)
        with contextlib.suppress(Exception):
            transport.close(code, close_reason)
        transport.abort()

    # ------------------------------------------------------------------ supervisor loop
    def _supervise(self) -> None:
        policy = self._opts.reconnect
        attempt = 0
        while not self._closing:
            self._set_state(ConnectionState.CONNECTING, f"attempt {attempt}")
            failure, connected_for = self._run_once()
            self._heartbeat.stop()
            for hook in list(self._disconnect_hooks):
                try:
                    hook()
                except Exception:  # noqa: BLE001 - one failing hook must not stop the others
                    self._log.exception("disconnect hook failed")
            if self._closing:
                self._requests.fail_all(lambda _e: ClientClosed("Daemon client closed"))
                return
            lost = failure.error
            message = str(lost) or "Connection lost"
            self._requests.fail_all(lambda _e, message=message: ConnectionLost(message))  # type: ignore[misc]
            self._last_error = lost
            if connected_for is not None:
                self._ever_connected = True
            give_up = (
                failure.terminal
                or not policy.enabled
                or (not self._ever_connected and not policy.retry_initial_connect)
            )
            if give_up:
                self._set_state(ConnectionState.DISCONNECTED, str(lost))
                self._settle_waiters(None, lost)
                return
            if connected_for is not None and connected_for >= policy.stable_after:
                attempt = 0
            delay = policy.delay(attempt, self._opts.rng)
            attempt += 1
            self._set_state(ConnectionState.DISCONNECTED, f"{lost}; reconnecting in {delay:.2f} s")
            if self._wake.wait(delay):
                return

    def _run_once(self) -> tuple[Failure, float | None]:
        """One connection: open, handshake, read until it ends. Returns why it ended."""
        opts = self._opts
        transport = opts.transport_factory()
        with self._lock:
            if self._closing:
                return Failure(ClientClosed("Daemon client closed")), None
            self._transport = transport
            self._handshaken = False
            self._abort_failure = None
            self._rejection = None
        deadline = self._timers.schedule(
            opts.connect_timeout,
            lambda: self._abort(
                Failure(ConnectTimeout(f"no server_info from {opts.url} within {opts.connect_timeout:g} s")),
                code=1001,
                close_reason="Connection timed out",
                only=transport,
                unless_handshaken=True,
            ),
        )
        connected_at: list[float] = []
        try:
            failure = self._open(transport)
            if failure is None:
                failure = self._read(transport, connected_at)
        finally:
            deadline.cancel()
            with self._lock:
                self._transport = None
                self._handshaken = False
            transport.abort()
        return failure, (time.monotonic() - connected_at[0]) if connected_at else None

    def _open(self, transport: Transport) -> Failure | None:
        opts = self._opts
        params = ConnectParams(
            url=opts.url,
            timeout=opts.connect_timeout,
            headers=self._headers,
            subprotocols=self._subprotocols,
            ssl_context=opts.ssl_context,
            max_frame_bytes=opts.max_frame_bytes,
        )
        try:
            transport.connect(params)
        except (TransportError, TimeoutError, OSError) as exc:
            if self._abort_failure is not None:
                return self._abort_failure
            if isinstance(exc, TimeoutError):
                return Failure(
                    ConnectTimeout(f"no WebSocket connection to {opts.url} within {opts.connect_timeout:g} s")
                )
            return Failure(
                ConnectionLost(f"Cannot connect to {opts.url}: {exc}. Is the daemon running and is the URL right?")
            )
        if self._closing:
            return Failure(ClientClosed("Daemon client closed"))
        if self._frame_log.isEnabledFor(logging.DEBUG):
            self._frame_log.debug("-> %s", redact_hello(self._hello_text))
        try:
            with self._send_lock:
                transport.send_text(self._hello_text)
        except TransportError as exc:
            return self._abort_failure or Failure(ConnectionLost(f"Connection lost during the handshake: {exc}"))
        return None

    def _read(self, transport: Transport, connected_at: list[float]) -> Failure:
        frame_log = self._frame_log
        while True:
            try:
                text = transport.recv()
            except FrameRejected as exc:
                self._log.warning("skipped an inbound frame: %s: %s", exc, preview(exc.preview))
                continue
            except TransportClosed as exc:
                if self._abort_failure is not None:
                    return self._abort_failure
                return failure_for_close(exc.code, exc.reason, rejection=self._rejection, password=self._opts.password)
            except TransportError as exc:
                return self._abort_failure or Failure(ConnectionLost(f"Connection lost: {exc}"))
            if frame_log.isEnabledFor(logging.DEBUG):
                frame_log.debug("<- %s", preview(text, 500))
            try:
                if self._handle(text) and not connected_at:
                    connected_at.append(time.monotonic())
            except Exception:  # noqa: BLE001 - an internal defect must not kill the reader
                self._log.exception("internal error while handling a frame: %s", preview(text))

    def _handle(self, text: str) -> bool:
        """Handle one frame; return True when it completed the handshake."""
        try:
            frame = decode_frame(text)
        except MalformedFrame as exc:
            self._log.warning("skipped a malformed frame (%s): %s", exc, preview(text))
            return False
        if isinstance(frame, SessionMessage):
            message_type, payload = frame
            request_id = payload.get("requestId")
            if request_id is not None and self._requests.resolve(request_id, message_type, payload):
                return False
            if message_type == "status":
                status = payload.get("status")
                if status == "server_info":
                    return self._on_server_info(payload)
                if status == "error":
                    self._log.warning("daemon: invalid message: %s", preview(str(payload.get("message"))))
            self._on_push(frame)
        elif isinstance(frame, Pong):
            self._heartbeat.on_pong()
        elif isinstance(frame, HelloRejected):
            self._rejection = frame
            self._log.warning("hello rejected: %s", frame.reason)
            failure = failure_for_rejection(frame, self._opts.password)
            transport = self._transport
            self._timers.schedule(
                1.0, lambda: self._abort(failure, code=1000, close_reason="Hello rejected", only=transport)
            )
        else:
            self._log.debug("ignored a frame of unknown type %r", frame.type)
        return False

    def _on_server_info(self, payload: dict[str, Any]) -> bool:
        info = parse_server_info(payload)
        if self._handshaken:
            self._server_info = info  # a later server_info updates the cache, not the host kind
            return False
        kind = decide_host_kind(info.features)
        reconnected = self._ever_connected
        with self._lock:
            self._handshaken = True
            self._server_info = info
            self._host_kind = kind
            hooks = list(self._restore_hooks)
        self._log.info("%s: connected to %s (%s host, daemon %s)", self._name, self._opts.url, kind.value, info.version)
        for hook in hooks:
            try:
                hook(kind, reconnected)
            except Exception:  # noqa: BLE001 - one failing hook must not stop the others
                self._log.exception("restoring observations failed")
        while True:
            with self._lock:
                queued = self._requests.take_queued()
                if not queued:
                    if self._closing:
                        return True
                    old, self._state = self._state, ConnectionState.CONNECTED
                    self._server_info = info
                    listeners = list(self._listeners)
                    break
            for entry in queued:
                try:
                    self._write(entry.frame)
                except DaemonClientError:
                    break  # the reader will see the socket end and fail them
        self._ever_connected = True
        self._heartbeat.start()
        self._settle_waiters(info, None)  # before listeners run: one may close() the client at once
        self._notify(listeners, old, ConnectionState.CONNECTED, "reconnected" if reconnected else "connected")
        return True
