"""The real transport: a WebSocket over a socket (``ws://``, ``wss://``, unix sockets).

The connection is opened by :mod:`daemon_client.transport.upgrade` (host names resolved by a
:class:`~daemon_client.transport.resolver.Resolver`, through the proxy that ``ConnectParams.proxy``
chooses, :mod:`daemon_client.transport.proxy`) under the rules of
:mod:`daemon_client.transport.handshake_policy` (no redirects, no cookies, no extensions,
bounded answer, no ``Origin`` header). Outbound frames are built (and masked) with
websocket-client's ``ABNF``; inbound frames are read by :class:`FrameReader` through one
large buffer. Text frames are decoded with Python's strict UTF-8 codec; binary frames are
returned as ``bytes``.

RFC 6455 failures: a frame that breaks the protocol (reserved bits or opcodes, bad control
frames, a stray continuation, a masked frame, a bad close frame) fails the connection with
close 1002; a text frame or close reason that is not UTF-8 fails it with 1007 (RFC 6455 8.1; the
log names the frame's size and the bad byte's position, never its bytes); a close frame is answered with the
same code, or with an empty close frame when it carried none (1005 is never sent).

``recv`` runs on the client's reader thread; ``send_text``, ``send_binary`` and ``close`` on the
client's writer thread (serialised here too); ``abort`` on any thread. The replies ``recv`` owes the peer (pong,
close echo) go to the control sink when one is set (the client's writer thread), so the reading
thread never blocks on a write; only failing the connection on a protocol violation writes from
the reader, with a bounded wait.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Callable

import websocket as wsc

from daemon_client._compiled import mypyc_attr
from daemon_client._wire import WireFrame
from daemon_client.transport.base import (
    ConnectParams,
    ProtocolViolation,
    TransportClosed,
    TransportError,
)
from daemon_client.transport.frames import (
    OP_BINARY,
    OP_CLOSE,
    OP_PING,
    OP_PONG,
    OP_TEXT,
    FrameReader,
    close_payload,
    invalid_text,
    parse_close,
)
from daemon_client.transport.handshake_policy import HandshakeLimits, parse_target
from daemon_client.transport.proxy import ProxyPolicy
from daemon_client.transport.resolver import SYSTEM_RESOLVER, AddrInfo, Resolver, ResolveTimeout
from daemon_client.transport.upgrade import open_websocket

_LINGER_SECONDS = 1.0  # after failing a connection: how long the peer may take to close
_DONTWAIT: int | None = getattr(socket, "MSG_DONTWAIT", None)  # not on Windows


def _frame(payload: bytes | str, opcode: int) -> bytes:
    return bytes(wsc.ABNF.create_frame(payload, opcode).format())


@mypyc_attr(allow_interpreted_subclasses=True)  # a transport may be specialised (tests, wrappers)
class WebSocketTransport:
    """A :class:`~daemon_client.transport.base.Transport` over a plain or TLS socket.

    ``resolver`` looks host names up (default: the process-wide
    :data:`~daemon_client.transport.resolver.SYSTEM_RESOLVER`).
    """

    def __init__(self, limits: HandshakeLimits | None = None, *, resolver: Resolver | None = None) -> None:
        self._limits = limits
        self._resolver = resolver or SYSTEM_RESOLVER
        self._wake: threading.Event | None = None  # set by abort(): ends a lookup being waited for
        self._sock: socket.socket | None = None
        self._reader: FrameReader | None = None
        self._subprotocol: str | None = None
        self._send_lock = threading.Lock()
        self._close_lock = threading.Lock()
        self._closed = False  # guarded by _close_lock
        self._connected = False
        self._control_sink: Callable[[Callable[[], None]], None] | None = None  # set before recv() runs

    def set_control_sink(self, sink: Callable[[Callable[[], None]], None]) -> None:
        """Hand the replies that ``recv`` owes the peer (pong, close echo) to ``sink``, which
        runs them later on the thread that writes; without a sink ``recv`` writes them itself."""
        self._control_sink = sink

    def _reply(self, frame: bytes, *, closing: bool = False) -> None:
        """Send a control frame ``recv`` owes the peer: through the sink if there is one."""

        def run() -> None:
            with contextlib.suppress(OSError, TransportError):
                self._send(frame, closing=closing)

        sink = self._control_sink
        if sink is None:
            run()
        else:
            sink(run)

    @property
    def selected_subprotocol(self) -> str | None:
        return self._subprotocol

    def _adopt(self, sock: socket.socket) -> None:
        """Upgrade thread: make ``sock`` reachable by ``abort()``; refuse it after an abort."""
        with self._close_lock:
            closed = self._closed
            if not closed:
                self._sock = sock
        if closed:
            with contextlib.suppress(OSError):
                sock.close()
            raise TransportClosed(None, "the connection was aborted")

    def _resolve(self, host: str, port: int, timeout: float) -> list[AddrInfo]:
        """Upgrade thread: the addresses of ``host``, within ``timeout``; ``abort()`` ends the wait."""
        wake = threading.Event()
        with self._close_lock:
            if self._closed:
                raise TransportClosed(None, "the connection was aborted")
            self._wake = wake
        return self._resolver.resolve(host, port, timeout=timeout, wake=wake)

    def connect(self, params: ConnectParams) -> None:
        with self._close_lock:
            if self._closed:  # aborted before it started: nothing is opened
                raise TransportError("aborted before connecting")
        try:
            target = parse_target(params.url, ssl_context=params.ssl_context)
        except ValueError as exc:
            raise TransportError(str(exc)) from None
        policy: ProxyPolicy | None = params.proxy
        proxy = policy.for_target(target) if policy is not None and params.unix_socket is None else None
        try:
            upgraded = open_websocket(
                target,
                unix_path=params.unix_socket,
                timeout=params.timeout,
                headers=params.headers,
                subprotocols=params.subprotocols,
                ssl_context=params.ssl_context,
                adopt=self._adopt,
                limits=self._limits,
                resolve=self._resolve,
                proxy=proxy,
            )
            upgraded.sock.settimeout(None)  # liveness is the heartbeat's job, not the socket's
        except TransportError:  # refused upgrade, refused tunnel, aborted
            self.abort()
            raise
        except TimeoutError as exc:
            self.abort()
            detail = f" ({exc})" if isinstance(exc, ResolveTimeout) else ""
            raise TimeoutError(f"no WebSocket connection within {params.timeout:g} s{detail}") from exc
        except (OSError, ValueError) as exc:
            self.abort()
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
            raise TransportError(detail) from exc
        self._subprotocol = upgraded.subprotocol
        self._reader = FrameReader(upgraded.sock, params.max_frame_bytes, initial=upgraded.rest, refuse_masked=True)
        self._connected = True

    def _send(self, data: bytes, *, closing: bool = False) -> None:
        """Write one frame. Once a close frame is on its way (``_closed`` is set before it is
        written, under the same send lock) no data frame may follow it (RFC 6455 5.5.1)."""
        sock = self._sock
        if sock is None or not self._connected:
            raise TransportClosed(None, "not connected")
        with self._send_lock:
            if self._closed and not closing:
                raise TransportClosed(None, "the connection is closing")
            sock.sendall(data)

    def send_text(self, text: str) -> None:
        try:
            self._send(_frame(text, OP_TEXT))
        except OSError as exc:
            raise TransportClosed(None, f"send failed: {exc}") from exc

    def try_send_text(self, text: str) -> bytes | None:
        """Write one text frame only as far as the socket takes it without waiting: ``None``
        when all of it went out, else the unsent tail (possibly the whole frame), which must be
        written next with :meth:`send_raw` before any other frame. Never blocks (the caller may be
        any thread); plain sockets only (TLS and platforms without ``MSG_DONTWAIT`` return the
        whole frame)."""
        frame = _frame(text, OP_TEXT)
        sock = self._sock
        if _DONTWAIT is None or sock is None or not self._connected or isinstance(sock, ssl.SSLSocket):
            return frame
        with self._send_lock:
            if self._closed:
                raise TransportClosed(None, "the connection is closing")
            try:
                sent = sock.send(frame, _DONTWAIT)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError as exc:
                raise TransportClosed(None, f"send failed: {exc}") from exc
        return None if sent == len(frame) else frame[sent:]

    def send_raw(self, data: bytes) -> None:
        """Write bytes that continue a frame :meth:`try_send_text` began (writer thread)."""
        try:
            self._send(data, closing=True)  # a frame already begun is finished even while closing
        except OSError as exc:
            raise TransportClosed(None, f"send failed: {exc}") from exc

    def send_binary(self, data: bytes) -> None:
        try:
            self._send(_frame(data, OP_BINARY))
        except OSError as exc:
            raise TransportClosed(None, f"send failed: {exc}") from exc

    def recv(self) -> WireFrame:
        reader = self._reader
        if reader is None:
            raise TransportError("not connected")
        while True:
            try:
                opcode, data = reader.next_message()
                closing = parse_close(data) if opcode == OP_CLOSE else None
            except ProtocolViolation as exc:
                self._fail(exc)
                raise
            if opcode == OP_TEXT:
                try:
                    return data.decode("utf-8")
                except UnicodeDecodeError as exc:
                    violation = invalid_text(len(data), exc)
                self._fail(violation)
                raise violation
            if closing is not None:
                self._answer_close(closing[0])
                raise TransportClosed(*closing)
            if opcode == OP_PING:
                self._reply(_frame(data, OP_PONG))
                continue
            if opcode == OP_BINARY:
                return data
            # a pong: nothing to do

    def _answer_close(self, code: int) -> None:
        """Reader thread: echo the peer's close code (an empty close frame when it sent none)."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._reply(_frame(close_payload(code), OP_CLOSE), closing=True)

    def _fail(self, violation: ProtocolViolation) -> None:
        """Reader thread: _Fail the WebSocket Connection_ (RFC 6455 7.1.7): send close with the
        violation's code, stop writing, and give the peer a moment to close before dropping."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        sock = self._sock
        if sock is None:
            return
        self._about_to_wait()  # the writes and the linger below wait on the network
        with contextlib.suppress(OSError, TransportError):
            sock.settimeout(_LINGER_SECONDS)  # a peer that does not read cannot hold the reader
            self._send(_frame(close_payload(violation.code, str(violation)), OP_CLOSE), closing=True)
        deadline = time.monotonic() + _LINGER_SECONDS
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)
            while (left := deadline - time.monotonic()) > 0:  # discard until the peer closes
                sock.settimeout(left)
                if not sock.recv(65536):
                    break

    def _about_to_wait(self) -> None:
        """Reader thread, about to wait on the socket outside the frame reader: the ``before``
        wait hook runs first, as before any read (what the reader queued is not held back)."""
        reader = self._reader
        hooks = reader.wait_hooks if reader is not None else None
        if hooks is not None:
            hooks[0]()

    def set_wait_hooks(self, before: Callable[[], None], after: Callable[[], None]) -> bool:
        """``before()`` runs on the reader thread each time ``recv`` is about to wait for bytes
        from the socket, ``after()`` once they came (see :class:`FrameReader`). False (nothing
        installed) before the transport is connected."""
        if self._reader is None:
            return False
        self._reader.wait_hooks = (before, after)
        return True

    def has_buffered_data(self) -> bool:
        """True when more received bytes wait to be read (a burst is in progress)."""
        return self._reader is not None and self._reader.buffered() > 0

    def abort(self) -> None:
        with self._close_lock:
            self._closed = True
            sock, wake = self._sock, self._wake
        if wake is not None:
            wake.set()
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()

    def close(self, code: int | None = 1000, reason: str = "") -> None:
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        if self._connected:
            with contextlib.suppress(OSError, TransportError):
                self._send(_frame(close_payload(code, reason), OP_CLOSE), closing=True)
        self.abort()
