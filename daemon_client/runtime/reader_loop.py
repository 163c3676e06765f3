"""The reader thread's loop: connect, handshake, read frames, reconnect with backoff.

``ReaderLoop`` is the half of :class:`~daemon_client.runtime.connection.Connection` that runs on
the reader thread (``…-reader``), plus the timer-thread callbacks that end a socket
(handshake deadline, heartbeat). It decodes frames, settles request futures and hands
pushes on; it never runs user code (state listeners are posted to the callback thread).
Shared state lives on the connection and is guarded by its ``_lock``.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from daemon_client.discovery import DaemonTarget, TargetKind
from daemon_client.errors import ClientClosed, ConnectionLost, ConnectTimeout, DaemonClientError, ProtocolError
from daemon_client.protocol.codec import (
    PING_FRAME,
    MalformedFrame,
    decode_frame,
    parse_server_info,
    preview,
    redact_hello,
)
from daemon_client.protocol.hosts import HostKind, decide_host_kind
from daemon_client.protocol.models import HelloRejected, Pong, ServerInfo, SessionMessage
from daemon_client.protocol.replies import is_reply
from daemon_client.runtime.handshake import Failure, failure_for_close, failure_for_rejection
from daemon_client.runtime.requests import settle
from daemon_client.state import ConnectionState, StateListener
from daemon_client.transport.base import ConnectParams, FrameRejected, Transport, TransportClosed, TransportError

if TYPE_CHECKING:
    from daemon_client.runtime.connection import ConnectionOptions
    from daemon_client.runtime.dispatch import Dispatcher
    from daemon_client.runtime.heartbeat import HeartbeatMonitor
    from daemon_client.runtime.requests import RequestTable
    from daemon_client.runtime.timers import TimerThread


class ReaderLoop:
    """Reader-thread half of the connection (a mixin of ``Connection``)."""

    _opts: ConnectionOptions
    _requests: RequestTable
    _timers: TimerThread
    _heartbeat: HeartbeatMonitor
    _on_push: Callable[[SessionMessage], None]
    _binary_router: Callable[[bytes], bool] | None
    _name: str
    _log: logging.Logger
    _frame_log: logging.Logger
    _lock: threading.Lock
    _send_lock: threading.Lock
    _state: ConnectionState
    _transport: Transport | None
    _handshaken: bool
    _abort_failure: Failure | None
    _rejection: HelloRejected | None
    _server_info: ServerInfo | None
    _host_kind: HostKind | None
    _last_error: DaemonClientError | None
    _listeners: list[StateListener]
    _dispatcher: Dispatcher
    _restore_hooks: list[Callable[[HostKind, bool], None]]
    _disconnect_hooks: list[Callable[[], None]]
    _wake: threading.Event
    _waiters: list[Future[ServerInfo]]
    _closing: bool
    _ever_connected: bool
    _headers: dict[str, str]
    _subprotocols: tuple[str, ...]
    _hello_text: str

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

    def _settle_waiters(self, info: ServerInfo | None, error: BaseException | None) -> None:
        with self._lock:
            waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            settle(waiter, result=info, error=error)

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
                self._requests.fail_all(lambda _e: ClientClosed())
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
        target = opts.targets.next()
        transport = opts.transport_factory()
        with self._lock:
            if self._closing:
                return Failure(ClientClosed()), None
            self._transport = transport
            self._handshaken = False
            self._abort_failure = None
            self._rejection = None
        deadline = self._timers.schedule(
            opts.connect_timeout,
            lambda: self._abort(
                Failure(ConnectTimeout(f"no server_info from {target.url} within {opts.connect_timeout:g} s")),
                code=1001,
                close_reason="Connection timed out",
                only=transport,
                unless_handshaken=True,
            ),
        )
        connected_at: list[float] = []
        try:
            failure = self._open(transport, target)
            if failure is None:
                failure = self._read(transport, connected_at)
        finally:
            deadline.cancel()
            with self._lock:
                self._transport = None
                self._handshaken = False
            transport.abort()
        return failure, (time.monotonic() - connected_at[0]) if connected_at else None

    def _open(self, transport: Transport, target: DaemonTarget) -> Failure | None:
        opts = self._opts
        unsupported = target.unsupported()
        if unsupported is not None:
            return Failure(ConnectionLost(unsupported), terminal=True)
        params = ConnectParams(
            url=target.ws_url,
            unix_socket=target.path if target.kind is TargetKind.UNIX else None,
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
                    ConnectTimeout(f"no WebSocket connection to {target.url} within {opts.connect_timeout:g} s")
                )
            return Failure(
                ConnectionLost(f"Cannot connect to {target.url}: {exc}. Is the daemon running and is the URL right?")
            )
        if self._closing:
            return Failure(ClientClosed())
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
        binary_seen = False
        while True:
            try:
                text = transport.recv()
            except FrameRejected as exc:
                if not exc.binary:
                    self._log.warning("skipped an inbound frame: %s: %s", exc, preview(exc.preview))
                elif not binary_seen:  # terminal streams of newer daemons: one line per connection
                    binary_seen = True
                    self._log.info("%s: skipping binary frames on this connection (%s)", self._name, exc)
                continue
            except TransportClosed as exc:
                if self._abort_failure is not None:
                    return self._abort_failure
                return failure_for_close(exc.code, exc.reason, rejection=self._rejection, password=self._opts.password)
            except TransportError as exc:
                return self._abort_failure or Failure(ConnectionLost(f"Connection lost: {exc}"))
            if isinstance(text, bytes):
                if not self._route_binary(text) and not binary_seen:
                    binary_seen = True  # one line per connection
                    self._log.info("%s: skipping binary frames nobody subscribed to on this connection "
                                   "(binary frame of %d bytes)", self._name, len(text))  # fmt: skip
                continue
            if frame_log.isEnabledFor(logging.DEBUG):
                frame_log.debug("<- %s", preview(text, 500))
            try:
                if self._handle(text) and not connected_at:
                    connected_at.append(time.monotonic())
            except Exception:  # noqa: BLE001 - an internal defect must not kill the reader
                self._log.exception("internal error while handling a frame: %s", preview(text))

    def _route_binary(self, data: bytes) -> bool:
        """Hand one binary frame to the router; False when nobody takes it."""
        router = self._binary_router
        if router is None:
            return False
        try:
            return router(data)
        except Exception:  # noqa: BLE001 - an internal defect must not kill the reader
            self._log.exception("internal error while routing a binary frame of %d bytes", len(data))
            return True

    def _handle(self, text: str) -> bool:
        """Handle one frame; return True when it completed the handshake."""
        try:
            frame = decode_frame(text)
        except MalformedFrame as exc:
            self._log.warning("skipped a malformed frame (%s): %s", preview(str(exc), 200), preview(text))
            return False
        if isinstance(frame, SessionMessage):
            message_type, payload = frame
            request_id = payload.get("requestId")
            if request_id is not None:
                if self._requests.resolve(request_id, message_type, payload):
                    return False
                if is_reply(message_type, payload):  # late, duplicate, or another socket's reply
                    self._frame_log.debug("dropped a reply to unknown request %s", preview(repr(request_id), 80))
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
            if self._handshaken:  # only meaningful during a handshake: a stray one is ignored
                self._log.warning("ignored a hello.rejected after the handshake: %s", preview(frame.reason, 80))
                return False
            frame = HelloRejected(reason=preview(frame.reason, 80), accepts=frame.accepts)
            self._rejection = frame
            self._log.warning("hello rejected: %s", frame.reason)
            failure = failure_for_rejection(frame, self._opts.password)
            transport = self._transport
            self._timers.schedule(
                1.0, lambda: self._abort(failure, code=1000, close_reason="Hello rejected", only=transport)
            )
        else:
            self._log.debug("ignored a frame of unknown type %s", preview(repr(frame.type), 80))
        return False

    def _on_server_info(self, payload: dict[str, Any]) -> bool:
        try:
            info = parse_server_info(payload)
        except ProtocolError as exc:
            if self._handshaken:
                self._log.warning("ignored an unreadable server_info: %s", preview(str(exc), 200))
                return False
            failure = Failure(
                ProtocolError(f"The daemon's server_info is unreadable: {preview(str(exc), 200)}"), terminal=True
            )
            transport = self._transport
            self._timers.schedule(
                0, lambda: self._abort(failure, code=1002, close_reason="Bad server_info", only=transport)
            )
            return False
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
        url = self._opts.targets.current.url
        self._log.info("%s: connected to %s (%s host, daemon %s)", self._name, url, kind.value, info.version)
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
