"""The reader thread: connect, handshake, read frames, reconnect with backoff.

:meth:`Supervisor.run` is the body of the **reader thread** (``…-reader``), started by
``Connection.connect()``. It opens a transport, starts the socket's writer thread, queues
``hello``, reads frames until the socket ends, then backs off and reconnects, or gives up
and hands over. It decodes frames, settles request futures and hands pushes on; it never
runs user code (state listeners are posted to the callback thread) and never writes to a
socket (frames are queued for the writer thread, which is joined, bounded, as each socket
ends).

Shared state lives in :class:`~daemon_client.runtime.link.Link`, under ``Link.lock``. A
supervisor that gives up clears ``Link.reader`` and takes the ``connect()`` waiters in one
step under that lock, so a later ``connect()`` always either joins a live supervisor or
starts a new one.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from daemon_client.discovery import DaemonTarget, TargetKind
from daemon_client.errors import (
    ClientClosed,
    ConnectionLost,
    ConnectTimeout,
    InsecureCredentials,
    ProtocolError,
)
from daemon_client.protocol.codec import (
    MalformedFrame,
    decode_frame,
    preview,
    redact_hello,
)
from daemon_client.protocol.hosts import decide_host_kind
from daemon_client.protocol.models import ServerInfo, SessionMessage
from daemon_client.protocol.replies import is_reply
from daemon_client.protocol.server_info import read_server_info
from daemon_client.runtime.affinity import pin_current_thread
from daemon_client.runtime.handshake import (
    Carriers,
    Failure,
    failure_for_close,
    failure_for_rejection,
)
from daemon_client.runtime.heartbeat import HeartbeatMonitor
from daemon_client.runtime.link import CLOSE_GRACE, Link, Socket
from daemon_client.runtime.options import ConnectionOptions
from daemon_client.runtime.requests import PendingRequest, RequestTable, settle
from daemon_client.runtime.writer import Writer
from daemon_client.state import ConnectionState
from daemon_client.transport.base import (
    ConnectParams,
    FrameRejected,
    Transport,
    TransportClosed,
    TransportError,
    TransportFailed,
)

if TYPE_CHECKING:
    from daemon_client.protocol.models import InboundFrame

HANDOFF_FRAMES = 128
"""In a burst, every this many frames the reader lets the callback thread run if as many
callbacks wait: batches stay small, their objects young (cheap for the garbage collector)
and in cache. One ``time.sleep(0)``: a hand-over of the GIL, not a wait."""
REJECTED_CLOSE_DELAY = 1.0
"""Seconds between ``hello.rejected`` and closing the socket (the daemon may close first)."""


def _client_closed(_request: object) -> BaseException:
    return ClientClosed()


def _connection_lost(message: str, _request: object) -> BaseException:
    return ConnectionLost(message)


class Supervisor:
    """What the reader thread runs; one per connection, run by one reader thread at a time.

    ``_before_attempt`` is a test seam, ``None`` unless a test sets it: called on the reader
    thread before each connection attempt (what it raises stands for an internal defect)."""

    def __init__(
        self,
        link: Link,
        options: ConnectionOptions,
        *,
        requests: RequestTable,
        heartbeat: HeartbeatMonitor,
        on_push: Callable[[SessionMessage, int], None],
    ) -> None:
        self._link = link
        self._opts = options
        self._requests = requests
        self._heartbeat = heartbeat
        self._on_push = on_push
        self._log = link.log
        self._frame_log = link.log.getChild("frames")
        self._route = options.route(options.targets.current)
        self._carriers = Carriers(options.client_id, options.app_version, options.auth_header, self._route)
        self._before_attempt: Callable[[], None] | None = None  # test seam (see the class docstring)

    # ------------------------------------------------------------------ the loop
    def run(self) -> None:
        """Reader thread: connect and reconnect until closed or given up. Whatever happens,
        the thread hands over before it ends (a later ``connect()`` starts a new one)."""
        pin_current_thread(self._opts.thread_cpu)
        link = self._link
        try:
            self._loop()
        except BaseException as exc:  # noqa: BLE001 - an internal defect must not strand connect() callers
            self._log.exception("%s: the reader thread failed", link.name)
            error = ConnectionLost(f"Connection lost: internal error in the reader thread: {exc!r}")
            self._requests.fail_all(lambda _e: error)
            with link.lock:
                link.last_error = error
                link.set_state_locked(ConnectionState.DISCONNECTED, str(error))
                waiters = link.take_waiters_locked()
            for waiter in waiters:
                settle(waiter, error=error)
        finally:
            with link.lock:
                link.retire_reader_locked()

    def _loop(self) -> None:
        link, policy = self._link, self._opts.reconnect
        attempt = 0
        while True:
            with link.lock:
                if link.closing:
                    link.retire_reader_locked()
                    return
                link.set_state_locked(ConnectionState.CONNECTING, f"attempt {attempt}")
            if self._before_attempt is not None:
                self._before_attempt()
            failure, connected_for = self._run_once()
            self._opts.targets.failed(str(failure.error) or type(failure.error).__name__, failure.terminal)
            self._heartbeat.stop()
            for hooks in link.hooks:
                if hooks.disconnect is not None:
                    try:
                        hooks.disconnect()
                    except Exception:  # noqa: BLE001 - one failing hook must not stop the others
                        self._log.exception("disconnect hook failed")
            if link.closing:
                self._requests.fail_all(_client_closed)
                with link.lock:
                    link.retire_reader_locked()
                return
            lost = failure.error
            self._requests.fail_all(functools.partial(_connection_lost, str(lost) or "Connection lost"))
            terminal = self._opts.targets.terminal(failure.terminal)  # a host: once each connection failed so
            round_left = not terminal and connected_for is None and self._opts.targets.round_left()
            with link.lock:
                link.last_error = lost
                if connected_for is not None:
                    link.ever_connected = True
                if link.closing:
                    link.retire_reader_locked()
                    return
                give_up = not round_left and (
                    terminal or not policy.enabled or (not link.ever_connected and not policy.retry_initial_connect)
                )
                if give_up:
                    lost = link.last_error = self._opts.targets.explain(lost)  # a host: every connection's answer
                    link.set_state_locked(ConnectionState.DISCONNECTED, str(lost))
                    waiters = link.take_waiters_locked()
                    link.retire_reader_locked()
                elif round_left:
                    delay = 0.0  # another of the host's connections, at once
                    link.set_state_locked(ConnectionState.DISCONNECTED, f"{lost}; trying the next connection")
                else:
                    if connected_for is not None and connected_for >= policy.stable_after:
                        attempt = 0
                    delay = policy.delay(attempt, self._opts.rng)
                    attempt += 1
                    link.set_state_locked(ConnectionState.DISCONNECTED, f"{lost}; reconnecting in {delay:.2f} s")
            if give_up:
                for waiter in waiters:
                    settle(waiter, error=lost)
                return
            link.wake.wait(delay)  # set by close()

    def _run_once(self) -> tuple[Failure, float | None]:
        """One connection: open, handshake, read until it ends. Returns why it ended."""
        link, opts = self._link, self._opts
        try:
            target = opts.targets.next()
        except Exception as exc:  # noqa: BLE001 - finding the daemon failing is this attempt's outcome, never the thread's end
            self._log.warning("%s: finding the daemon failed (%s); trying again later", link.name, type(exc).__name__)
            return Failure(ConnectionLost(f"Cannot find the daemon: {type(exc).__name__}")), None
        route = self._route = opts.route(target)
        try:
            transport = route.transport_factory()
        except Exception as exc:  # noqa: BLE001 - a user factory: its error is this attempt's outcome
            return Failure(ConnectionLost(f"Cannot connect to {target.url}: transport_factory failed: {exc!r}")), None
        sock = Socket(transport)
        with link.lock:
            if link.closing:
                return Failure(ClientClosed()), None
            link.socket = sock
        sock.deadline = deadline = link.timers.schedule(
            opts.connect_timeout,
            lambda: link.end_socket(
                Failure(ConnectTimeout(f"no server_info from {target.url} within {opts.connect_timeout:g} s")),
                code=1001,
                reason="Connection timed out",
                only=sock,
                unless_handshaken=True,
            ),
        )
        connected_at: list[float] = []
        try:
            failure = self._open(sock, target)
            if failure is None:
                failure = self._read(sock, connected_at)
        finally:
            deadline.cancel()
            with link.lock:
                if link.socket is sock:
                    link.socket = None
                writer = sock.writer
            if writer is not None and writer.finish():  # idle: let it write a close echo first
                writer.join(CLOSE_GRACE)
            transport.abort()
            if writer is not None and not writer.join(CLOSE_GRACE):
                self._log.warning("%s: the writer thread did not end after the socket was aborted", link.name)
        return failure, (time.monotonic() - connected_at[0]) if connected_at else None

    def _open(self, sock: Socket, target: DaemonTarget) -> Failure | None:
        link, opts, transport = self._link, self._opts, sock.transport
        unsupported = target.unsupported()
        if unsupported is not None:
            return Failure(ConnectionLost(unsupported), terminal=True)
        route = self._route
        if route.insecure_refusal is not None:
            return Failure(InsecureCredentials(route.insecure_refusal), terminal=True)
        headers, subprotocols, hello_text = self._carriers.of(route)
        params = ConnectParams(
            url=target.ws_url,
            unix_socket=target.path if target.kind is TargetKind.UNIX else None,
            timeout=opts.connect_timeout,
            headers=headers,
            subprotocols=subprotocols,
            ssl_context=opts.ssl_context if opts.routes is None or target.ws_url.startswith("wss://") else None,
            max_frame_bytes=opts.max_frame_bytes,
            proxy=opts.proxy,
        )
        try:
            transport.connect(params)
        except (TransportError, TimeoutError, OSError) as exc:
            if sock.failure is not None:
                return sock.failure
            if isinstance(exc, TransportFailed):  # the transport knows retrying cannot help
                return Failure(exc.error, terminal=True)
            if isinstance(exc, TimeoutError):
                return Failure(
                    ConnectTimeout(f"no WebSocket connection to {target.url} within {opts.connect_timeout:g} s")
                )
            return Failure(
                ConnectionLost(f"Cannot connect to {target.url}: {exc}. Is the daemon running and is the URL right?")
            )
        writer = Writer(
            transport,
            name=f"{link.name}-writer",
            timers=link.timers,
            stall_after=opts.write_stall_limit,
            on_stall=lambda seconds: link.end_socket(
                Failure(ConnectionLost(f"Connection lost: a write made no progress for {seconds:.1f} s")),
                code=1001,
                reason="Write stalled",
                only=sock,
            ),
            logger=self._log,
            thread_cpu=opts.thread_cpu,
        )
        with link.lock:
            if link.closing:
                return Failure(ClientClosed())
            if sock.failure is not None:
                return sock.failure
            sock.writer = writer
        set_sink: Any = getattr(transport, "set_control_sink", None)
        if set_sink is not None:
            set_sink(writer.call)  # pongs and close echoes are written by the writer thread
        writer.start()
        if self._frame_log.isEnabledFor(logging.DEBUG):
            self._frame_log.debug("-> %s", redact_hello(hello_text))
        try:
            writer.send(hello_text)
        except ConnectionLost as exc:
            return sock.failure or Failure(ConnectionLost(f"Connection lost during the handshake: {exc}"))
        return None

    def _read(self, sock: Socket, connected_at: list[float]) -> Failure:
        transport, dispatcher = sock.transport, self._link.dispatcher
        set_hooks: Any = getattr(transport, "set_wait_hooks", None)
        # Received frames handled in runs, one wake-up of the callbacks a run, only where the
        # transport says before each wait for the socket (it answers True once it will).
        try:
            bursts = set_hooks is not None and set_hooks(dispatcher.burst.end, dispatcher.burst.begin) is True
        except Exception:  # noqa: BLE001 - a custom transport's defect: read frame by frame
            self._log.exception("%s: the transport's set_wait_hooks failed; reading frame by frame", self._link.name)
            bursts = False
        try:
            return self._read_frames(transport, sock, connected_at, bursts=bursts)
        finally:
            if bursts:
                dispatcher.burst.end()

    def _read_frames(self, transport: Transport, sock: Socket, connected_at: list[float], *, bursts: bool) -> Failure:
        frame_log, dispatcher = self._frame_log, self._link.dispatcher
        binary_seen = False
        handled = 0
        tracing = frame_log.isEnabledFor(logging.DEBUG)  # looked at again every HANDOFF_FRAMES frames
        while True:
            try:
                text = transport.recv()
            except FrameRejected as exc:
                if not exc.binary:
                    self._log.warning("skipped an inbound frame: %s: %s", exc, preview(exc.preview))
                elif not binary_seen:  # terminal streams of newer daemons: one line per connection
                    binary_seen = True
                    self._log.info("%s: skipping binary frames on this connection (%s)", self._link.name, exc)
                continue
            except TransportClosed as exc:
                if sock.failure is not None:
                    return sock.failure
                return failure_for_close(exc.code, exc.reason, rejection=sock.rejection, password=self._route.password)
            except TransportFailed as exc:
                return sock.failure or Failure(exc.error, terminal=True)
            except TransportError as exc:
                return sock.failure or Failure(ConnectionLost(f"Connection lost: {exc}"))
            if type(text) is bytes:
                if not self._route_binary(text) and not binary_seen:
                    binary_seen = True  # one line per connection
                    self._log.info("%s: skipping binary frames nobody subscribed to on this connection "
                                   "(binary frame of %d bytes)", self._link.name, len(text))  # fmt: skip
            else:
                if tracing:
                    frame_log.debug("<- %s", preview(text, 500))
                try:
                    if self._handle(text, sock) and not connected_at:  # type: ignore[arg-type]
                        connected_at.append(time.monotonic())
                except Exception:  # noqa: BLE001 - an internal defect must not kill the reader
                    self._log.exception("internal error while handling a frame: %s", preview(text))
            handled += 1
            if handled >= HANDOFF_FRAMES:
                handled = 0
                tracing = frame_log.isEnabledFor(logging.DEBUG)
                if bursts:
                    dispatcher.burst.end()  # the callbacks of the run so far start now
                if dispatcher.pending >= HANDOFF_FRAMES:
                    time.sleep(0)  # let the callback thread take the GIL: small batches stay in cache
                if bursts:
                    dispatcher.burst.begin()

    # ------------------------------------------------------------------ frames
    def _route_binary(self, data: bytes) -> bool:
        """Hand one binary frame to the router; False when nobody takes it."""
        router = self._link.binary_router
        if router is None:
            return False
        try:
            return router(data)
        except Exception:  # noqa: BLE001 - an internal defect must not kill the reader
            self._log.exception("internal error while routing a binary frame of %d bytes", len(data))
            return True

    def _handle(self, text: str, sock: Socket) -> bool:
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
                    return self._on_server_info(payload, sock)
                if status == "error":
                    self._log.warning("daemon: invalid message: %s", preview(str(payload.get("message"))))
            self._on_push(frame, len(text))
        else:
            self._on_top_level(frame, sock)
        return False

    def _on_top_level(self, frame: InboundFrame, sock: Socket) -> None:
        """A frame outside the session envelope: a pong, a refused hello, or one unknown."""
        from daemon_client.protocol.frame_models import HelloRejected, Pong  # imported by decode_frame

        if isinstance(frame, Pong):
            self._heartbeat.on_pong()
        elif isinstance(frame, HelloRejected):
            if sock.handshaken:  # only meaningful during a handshake: a stray one is ignored
                self._log.warning("ignored a hello.rejected after the handshake: %s", preview(frame.reason, 80))
                return
            frame = HelloRejected(reason=preview(frame.reason, 80), accepts=frame.accepts)
            sock.rejection = frame
            self._log.warning("hello rejected: %s", frame.reason)
            failure = failure_for_rejection(frame, self._route.password)
            link = self._link
            link.timers.schedule(
                REJECTED_CLOSE_DELAY,
                lambda: link.end_socket(failure, code=1000, reason="Hello rejected", only=sock),
            )
        elif not isinstance(frame, SessionMessage):
            self._log.debug("ignored a frame of unknown type %s", preview(repr(frame.type), 80))

    def _on_server_info(self, payload: dict[str, Any], sock: Socket) -> bool:
        link = self._link
        try:
            reading = read_server_info(payload)
        except ProtocolError as exc:
            if sock.handshaken:
                self._log.warning("ignored an unreadable server_info: %s", preview(str(exc), 200))
                return False
            failure = Failure(
                ProtocolError(f"The daemon's server_info is unreadable: {preview(str(exc), 200)}"), terminal=True
            )
            link.end_socket(failure, code=1002, reason="Bad server_info", only=sock)
            return False
        info = reading.info
        if reading.ignored:
            self._log.warning("server_info: ignored unusable optional fields: %s", preview(", ".join(reading.ignored)))
        if sock.handshaken:
            with link.lock:
                link.server_info = info  # a later server_info updates the cache, not the host kind
            return False
        refused = self._opts.targets.admit(info.server_id)
        if refused is not None:  # another daemon than the host's: refused, never merged
            self._log.warning("%s: %s", link.name, refused)
            link.end_socket(Failure(refused), code=1000, reason="Another daemon", only=sock)
            return False
        kind = decide_host_kind(info.features)
        if sock.deadline is not None:
            sock.deadline.cancel()
        with link.lock:
            reconnected = link.ever_connected
            sock.handshaken = True
            link.server_info = info
            link.host_kind = kind
            hooks = link.hooks
            writer = sock.writer
        assert writer is not None
        url = self._opts.targets.current.url
        self._log.info("%s: connected to %s (%s host, daemon %s)", link.name, url, kind.value, info.version)
        for hook in hooks:
            try:
                hook.restore(kind, reconnected)
            except Exception:  # noqa: BLE001 - one failing hook must not stop the others
                self._log.exception("restoring observations failed")
        while True:
            queued = self._announce_unless_queued(info, reconnected)
            if queued is None:
                return True  # closed meanwhile
            if not queued:
                break
            for entry in queued:
                try:
                    writer.send(entry.frame)
                except ConnectionLost as exc:
                    self._requests.forget(entry.request_id)
                    entry.finish(error=exc)
        self._heartbeat.start()
        return True

    def _announce_unless_queued(self, info: ServerInfo, reconnected: bool) -> list[PendingRequest] | None:
        """Reader thread: the requests queued while connecting, to send now; with none left,
        the connection is announced (waiters settled, state CONNECTED) under the same lock,
        so no request can be queued between the last send and the announcement. ``None``
        once ``close()`` began."""
        link = self._link
        with link.lock:
            queued = self._requests.take_queued()
            if queued:
                return queued
            if link.closing:
                return None
            link.ever_connected = True
            for waiter in link.take_waiters_locked():  # before listeners are posted: one may close() at once
                settle(waiter, result=info)
            link.set_state_locked(ConnectionState.CONNECTED, "reconnected" if reconnected else "connected")
            link.server_info = info
            return queued
