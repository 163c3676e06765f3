"""The real transport: a WebSocket over websocket-client (``ws://``, ``wss://``, unix sockets).

websocket-client opens the connection (TLS, upgrade, subprotocols, headers; no ``Origin``
header) and writes frames; inbound frames are read by :class:`FrameReader` through one
large buffer. Text frames are decoded with Python's strict UTF-8 codec (the same safety
as websocket-client's pure-Python validator at a fraction of the cost); binary frames are
returned as ``bytes``. ``recv`` runs on the client's reader thread; ``send_text`` and
``send_binary`` on any thread (serialised here too, since the reader answers pings and echoes
close frames); ``abort`` and ``close`` on any thread.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from typing import Any

import websocket as wsc

from daemon_client.transport.base import (
    ConnectParams,
    FrameRejected,
    TransportClosed,
    TransportError,
)
from daemon_client.transport.frames import OP_BINARY, OP_CLOSE, OP_PING, OP_TEXT, FrameReader
from daemon_client.transport.unix import open_unix_socket

_OP_TEXT = wsc.ABNF.OPCODE_TEXT
_OP_BINARY = wsc.ABNF.OPCODE_BINARY


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
        self._closed = False
        self._own_socket: socket.socket | None = None  # a unix socket, until websocket-client holds it

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
            options: dict[str, Any] = {}
            if params.unix_socket is not None:
                options["socket"] = self._open_unix(params.unix_socket, params.timeout)
            self._ws.connect(  # type: ignore[no-untyped-call]
                params.url,
                header=headers,
                timeout=params.timeout,
                suppress_origin=True,
                **options,
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

    def _open_unix(self, path: str, timeout: float) -> socket.socket:
        sock = open_unix_socket(path, timeout)
        with self._close_lock:
            self._own_socket = sock
            aborted = self._closed
        if aborted:
            raise TransportError("aborted while connecting")
        return sock

    def send_text(self, text: str) -> None:
        try:
            with self._send_lock:
                self._ws.send(text, _OP_TEXT)
        except (OSError, wsc.WebSocketException) as exc:
            raise TransportClosed(None, f"send failed: {exc}") from exc

    def send_binary(self, data: bytes) -> None:
        try:
            with self._send_lock:
                self._ws.send(data, _OP_BINARY)
        except (OSError, wsc.WebSocketException) as exc:
            raise TransportClosed(None, f"send failed: {exc}") from exc

    def recv(self) -> str | bytes:
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
                with contextlib.suppress(OSError, wsc.WebSocketException), self._send_lock:
                    self._ws.send_close(closed.code or 1000)
                raise closed
            if opcode == OP_PING:
                with contextlib.suppress(OSError, wsc.WebSocketException), self._send_lock:
                    self._ws.pong(data)
                continue
            if opcode == OP_BINARY:
                return data
            # a pong: nothing to do

    def has_buffered_data(self) -> bool:
        """True when more received bytes wait to be read (a burst is in progress)."""
        return self._reader is not None and self._reader.buffered() > 0

    def abort(self) -> None:
        with self._close_lock:
            self._closed = True
            own = self._own_socket
        for sock in {id(s): s for s in (self._ws.sock, own) if s is not None}.values():
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
