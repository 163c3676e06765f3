"""The real transport: a WebSocket over websocket-client (``ws://`` and ``wss://``).

The TCP connect (and TLS) is made by :class:`~daemon_client.transport.dial.Dialer`, so that
``abort()`` ends it at once; websocket-client then performs the upgrade (subprotocols,
headers; no ``Origin`` header) and writes frames; inbound frames are read by
:class:`FrameReader` through one large buffer. Text frames are decoded with Python's strict
UTF-8 codec (the same safety as websocket-client's pure-Python validator at a fraction of
the cost). ``recv`` runs on the client's reader thread; ``send_text`` and ``close`` on the
client's writer thread (serialised here too); ``abort`` on any thread. The replies ``recv``
owes the peer (pong, close echo) go to the control sink when one is set (the client's
writer thread), so the reading thread never writes.
"""

from __future__ import annotations

import contextlib
import functools
import socket
import ssl
import struct
import threading
from collections.abc import Callable

import websocket as wsc
from websocket import _url as wsc_url

from daemon_client.transport.base import (
    ConnectParams,
    FrameRejected,
    TransportClosed,
    TransportError,
)
from daemon_client.transport.dial import Dialer
from daemon_client.transport.frames import OP_BINARY, OP_CLOSE, OP_PING, OP_TEXT, FrameReader

_OP_TEXT = wsc.ABNF.OPCODE_TEXT


def _parse_close(data: bytes) -> TransportClosed:
    if len(data) >= 2:
        (code,) = struct.unpack("!H", data[:2])
        return TransportClosed(code, data[2:].decode("utf-8", errors="replace"))
    return TransportClosed(1005, "")


class WebSocketTransport:
    """A :class:`~daemon_client.transport.base.Transport` over websocket-client."""

    def __init__(self) -> None:
        self._ws = wsc.WebSocket(skip_utf8_validation=True, enable_multithread=False)
        self._max_frame_bytes: int | None = None
        self._reader: FrameReader | None = None
        self._send_lock = threading.Lock()
        self._close_lock = threading.Lock()
        self._closed = False  # guarded by _close_lock
        self._dialer = Dialer(wsc.DEFAULT_SOCKET_OPTION)
        self._control_sink: Callable[[Callable[[], None]], None] | None = None  # set before recv() runs

    def set_control_sink(self, sink: Callable[[Callable[[], None]], None]) -> None:
        """Hand the replies that ``recv`` owes the peer (pong, close echo) to ``sink``, which
        runs them later on the thread that writes; without a sink ``recv`` writes them itself."""
        self._control_sink = sink

    def _reply(self, send: Callable[[], object]) -> None:
        """Send a control frame ``recv`` owes the peer: through the sink if there is one."""

        def run() -> None:
            with contextlib.suppress(OSError, wsc.WebSocketException), self._send_lock:
                send()

        sink = self._control_sink
        if sink is None:
            run()
        else:
            sink(run)

    @property
    def selected_subprotocol(self) -> str | None:
        headers = self._ws.getheaders() if self._ws.connected else None
        value = headers.get("sec-websocket-protocol") if headers else None
        return str(value) if value is not None else None

    def connect(self, params: ConnectParams) -> None:
        self._max_frame_bytes = params.max_frame_bytes
        headers = [f"{name}: {value}" for name, value in params.headers.items()]
        if params.subprotocols:  # as a plain header: websocket-client would log a mismatch, password and all
            headers.append(f"Sec-WebSocket-Protocol: {', '.join(params.subprotocols)}")
        if params.ssl_context is not None:
            self._ws = wsc.WebSocket(
                sslopt={"context": params.ssl_context}, skip_utf8_validation=True, enable_multithread=False
            )
        try:
            with self._close_lock:
                if self._closed:
                    raise TransportError("aborted before connecting")
            sock = self._dial(params)
            self._ws.connect(  # type: ignore[no-untyped-call]
                params.url,
                header=headers,
                timeout=params.timeout,
                suppress_origin=True,
                **({"socket": sock} if sock is not None else {}),
            )
            self._ws.settimeout(None)  # liveness is the heartbeat's job, not the socket's
            sock = self._ws.sock
            if sock is None:
                raise TransportError("the connection closed during the upgrade")
            self._reader = FrameReader(sock, params.max_frame_bytes)
        except wsc.WebSocketBadStatusException as exc:
            self.abort()
            raise TransportError(f"the server refused the WebSocket upgrade (HTTP {exc.status_code})") from exc
        except (TimeoutError, wsc.WebSocketTimeoutException) as exc:
            self.abort()
            raise TimeoutError(f"no WebSocket connection within {params.timeout:g} s") from exc
        except (OSError, wsc.WebSocketException, ValueError) as exc:
            self.abort()
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
            raise TransportError(detail) from exc

    def _dial(self, params: ConnectParams) -> socket.socket | None:
        """The connected socket, made abortable by the dialer; ``None`` when websocket-client
        must dial itself (a proxy is configured for this URL: that connect is not abortable)."""
        host, port, _, secure = wsc_url.parse_url(params.url)
        try:
            proxy_host = wsc_url.get_proxy_info(host, secure)[0]
        except Exception:  # noqa: BLE001 - an API change: let websocket-client decide
            return None
        if proxy_host:
            return None
        context = (params.ssl_context or ssl.create_default_context()) if secure else None
        return self._dialer.dial(host, port, params.timeout, tls=context)

    def send_text(self, text: str) -> None:
        try:
            with self._send_lock:
                self._ws.send(text, _OP_TEXT)
        except (OSError, wsc.WebSocketException) as exc:
            raise TransportClosed(None, f"send failed: {exc}") from exc

    def recv(self) -> str:
        reader = self._reader
        if reader is None:
            raise TransportError("not connected")
        while True:
            opcode, data = reader.next_message()
            if opcode == OP_TEXT:
                try:
                    return data.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise FrameRejected(f"text frame is not valid UTF-8 ({exc.reason})", preview=data[:200]) from None
            if opcode == OP_CLOSE:
                closed = _parse_close(data)
                self._reply(functools.partial(self._ws.send_close, closed.code or 1000))
                raise closed
            if opcode == OP_PING:
                self._reply(functools.partial(self._ws.pong, data))
                continue
            if opcode == OP_BINARY:
                raise FrameRejected(f"binary frame of {len(data)} bytes ignored", preview=data[:200])
            # a pong: nothing to do

    def has_buffered_data(self) -> bool:
        """True when more received bytes wait to be read (a burst is in progress)."""
        return self._reader is not None and self._reader.buffered() > 0

    def abort(self) -> None:
        with self._close_lock:
            self._closed = True
        self._dialer.abort()
        sock = self._ws.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()

    def close(self, code: int = 1000, reason: str = "") -> None:
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        if self._ws.connected:
            with contextlib.suppress(OSError, wsc.WebSocketException), self._send_lock:
                self._ws.send_close(code, reason.encode("utf-8"))
        self.abort()
