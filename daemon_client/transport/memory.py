"""An in-memory transport pair for tests: no sockets, same behaviour as a WebSocket.

``MemoryTransport`` is the client end and satisfies :class:`Transport`. Its
``connect()`` hands a fresh :class:`MemoryServerEnd` to an *acceptor* callable (the
fake daemon), which may refuse the connection by raising :class:`TransportError`.
Frames travel through thread-safe queues, so either end may be used from any thread;
``recv`` blocks the calling thread (the client's reader, or the fake daemon's
connection thread).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Mapping, Sequence

import attrs

from daemon_client._wire import WireFrame
from daemon_client.transport.base import (
    ConnectParams,
    FrameRejected,
    TransportClosed,
    TransportError,
)
from daemon_client.transport.frames import invalid_text


@attrs.frozen
class _Close:
    code: int | None
    reason: str


@attrs.frozen
class _RawText:
    """Text frame payload as bytes, possibly not valid UTF-8 (fault injection)."""

    data: bytes


@attrs.frozen
class _Binary:
    data: bytes


_Item = str | _Close | _RawText | _Binary

_DROPPED = _Close(None, "connection dropped")


class _Endpoint:
    """One end of an in-memory WebSocket."""

    def __init__(self) -> None:
        self._inbox: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._peer: _Endpoint | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.max_frame_bytes: int | None = None

    def _link(self, peer: _Endpoint) -> None:
        self._peer = peer

    @property
    def closed(self) -> bool:
        return self._closed

    def _deliver(self, item: _Item) -> None:
        with self._lock:
            if self._closed:
                raise TransportClosed(None, "connection is closed")
            peer = self._peer
        if peer is None:
            raise TransportError("not connected")
        peer._inbox.put(item)

    def send_text(self, text: str) -> None:
        self._deliver(text)

    def send_binary(self, data: bytes) -> None:
        """Send one binary frame."""
        self._deliver(_Binary(bytes(data)))

    def _recv_item(self, timeout: float | None) -> _Item:
        try:
            item = self._inbox.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError("no frame within timeout") from None
        if isinstance(item, _Close):
            with self._lock:
                self._closed = True
            self._inbox.put(item)  # every later recv sees the close too
            raise TransportClosed(item.code, item.reason)
        return item

    def close(self, code: int = 1000, reason: str = "") -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            peer = self._peer
        if peer is not None:
            peer._inbox.put(_Close(code, reason))
        self._inbox.put(_Close(code, reason))

    def abort(self) -> None:
        with self._lock:
            already = self._closed
            self._closed = True
            peer = self._peer
        if peer is not None and not already:
            peer._inbox.put(_DROPPED)
        self._inbox.put(_DROPPED)


class MemoryServerEnd(_Endpoint):
    """The daemon's end of an in-memory connection."""

    def __init__(self, params: ConnectParams) -> None:
        super().__init__()
        self.params = params
        self.selected_subprotocol: str | None = None

    @property
    def headers(self) -> Mapping[str, str]:
        return self.params.headers

    @property
    def subprotocols(self) -> Sequence[str]:
        return self.params.subprotocols

    def recv(self, timeout: float | None = None) -> str | bytes:
        """Next frame from the client (``bytes``: a binary frame); ``TimeoutError`` after ``timeout`` s."""
        item = self._recv_item(timeout)
        if isinstance(item, str):
            return item
        if isinstance(item, _RawText):
            return item.data.decode("utf-8", errors="replace")
        if isinstance(item, _Binary):
            return item.data
        raise TransportError(f"unexpected item {item!r}")

    def send_raw_text(self, data: bytes) -> None:
        """Send a text frame whose payload bytes are given as is (may be invalid UTF-8)."""
        self._deliver(_RawText(data))


Acceptor = Callable[[MemoryServerEnd], None]


class MemoryTransport(_Endpoint):
    """Client end of an in-memory WebSocket; implements :class:`Transport`."""

    def __init__(self, acceptor: Acceptor) -> None:
        super().__init__()
        self._acceptor = acceptor
        self._server: MemoryServerEnd | None = None

    @property
    def selected_subprotocol(self) -> str | None:
        return self._server.selected_subprotocol if self._server else None

    def connect(self, params: ConnectParams) -> None:
        server = MemoryServerEnd(params)
        self.max_frame_bytes = params.max_frame_bytes
        self._link(server)
        server._link(self)
        self._server = server
        self._acceptor(server)  # may raise TransportError to refuse

    def recv(self) -> WireFrame:
        item = self._recv_item(None)
        limit = self.max_frame_bytes
        if isinstance(item, str):
            if limit is not None and len(item) > limit // 4 and len(item.encode("utf-8")) > limit:
                raise FrameRejected(f"frame of more than {limit} bytes skipped", preview=item[:200].encode())
            return item
        if isinstance(item, _Binary):
            if limit is not None and len(item.data) > limit:
                raise FrameRejected(f"frame of {len(item.data)} bytes exceeds {limit} bytes", preview=item.data[:200])
            return item.data
        if not isinstance(item, _RawText):
            raise TransportError(f"unexpected item {item!r}")
        if limit is not None and len(item.data) > limit:
            raise FrameRejected(f"frame of {len(item.data)} bytes exceeds {limit} bytes", preview=item.data[:200])
        try:
            return item.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            violation = invalid_text(len(item.data), exc)
        self.close(violation.code, "invalid UTF-8")  # as a socket fails the connection (RFC 6455 8.1)
        raise violation
