"""The real transport: a WebSocket over websocket-client (``ws://`` and ``wss://``).

Text frames are decoded with Python's strict UTF-8 codec instead of websocket-client's
pure-Python validator (same safety, a fraction of the cost). No ``Origin`` header is
sent. ``recv`` runs on the client's reader thread; ``send_text`` on whichever thread
holds the client's send lock; ``abort`` and ``close`` on any thread.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading

import websocket as wsc

from daemon_client.transport.base import (
    ConnectParams,
    FrameRejected,
    TransportClosed,
    TransportError,
)

_OP_TEXT = wsc.ABNF.OPCODE_TEXT
_OP_BINARY = wsc.ABNF.OPCODE_BINARY
_OP_CLOSE = wsc.ABNF.OPCODE_CLOSE


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
        self._close_lock = threading.Lock()
        self._closed = False

    @property
    def selected_subprotocol(self) -> str | None:
        sub = self._ws.getsubprotocol() if self._ws.connected else None
        return str(sub) if sub is not None else None

    def connect(self, params: ConnectParams) -> None:
        self._max_frame_bytes = params.max_frame_bytes
        headers = [f"{name}: {value}" for name, value in params.headers.items()]
        if params.ssl_context is not None:
            self._ws = wsc.WebSocket(
                sslopt={"context": params.ssl_context}, skip_utf8_validation=True, enable_multithread=False
            )
        try:
            self._ws.connect(  # type: ignore[no-untyped-call]
                params.url,
                header=headers,
                subprotocols=list(params.subprotocols) or None,
                timeout=params.timeout,
                suppress_origin=True,
            )
            self._ws.settimeout(None)  # liveness is the heartbeat's job, not the socket's
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

    def send_text(self, text: str) -> None:
        try:
            self._ws.send(text, _OP_TEXT)
        except (OSError, wsc.WebSocketException) as exc:
            raise TransportClosed(None, f"send failed: {exc}") from exc

    def recv(self) -> str:
        try:
            opcode, data = self._ws.recv_data()
        except wsc.WebSocketConnectionClosedException:
            raise TransportClosed(None, "connection dropped") from None
        except wsc.WebSocketProtocolException as exc:
            raise TransportError(f"WebSocket protocol violation: {exc}") from exc
        except (OSError, wsc.WebSocketException) as exc:
            raise TransportClosed(None, str(exc) or "connection dropped") from exc
        if opcode == _OP_TEXT:
            limit = self._max_frame_bytes
            if limit is not None and len(data) > limit:
                raise FrameRejected(f"frame of {len(data)} bytes exceeds {limit} bytes", preview=data[:200])
            try:
                return bytes(data).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise FrameRejected(f"text frame is not valid UTF-8 ({exc.reason})", preview=data[:200]) from None
        if opcode == _OP_CLOSE:
            raise _parse_close(bytes(data))
        if opcode == _OP_BINARY:
            raise FrameRejected(f"binary frame of {len(data)} bytes ignored", preview=bytes(data[:200]))
        raise FrameRejected(f"unexpected opcode {opcode}")

    def abort(self) -> None:
        with self._close_lock:
            self._closed = True
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
            with contextlib.suppress(OSError, wsc.WebSocketException):
                self._ws.send_close(code, reason.encode("utf-8"))
        self.abort()
