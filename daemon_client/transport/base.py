"""The ``Transport`` protocol: the only thing the client needs from a WebSocket.

A transport carries whole frames: text frames as ``str``, binary frames as ``bytes`` (the one
frame type of the pipeline, ``daemon_client._wire.WireFrame``: the Python type is the opcode). The
connection supervisor's reader thread is the only caller of :meth:`Transport.recv`; every
other method may be called from any thread (the client calls ``send_text``, ``send_binary``
and ``close`` from one writer thread per socket, and ``abort`` from any thread; ``abort`` must
end a ``connect``, ``send_text`` or ``recv`` in progress).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from daemon_client._wire import DEFAULT_MAX_FRAME_BYTES, WireFrame
from daemon_client.errors import DaemonClientError


class TransportError(Exception):
    """The transport failed (connect refused, socket error, protocol violation)."""


class TransportClosed(TransportError):
    """The peer closed the connection; ``code``/``reason`` come from its close frame.

    ``code`` is ``None`` when the socket dropped without a close frame.
    """

    def __init__(self, code: int | None = None, reason: str = "") -> None:
        self.code = code
        self.reason = reason
        super().__init__(f"closed ({code}{': ' + reason if reason else ''})" if code else "connection dropped")


class ProtocolViolation(TransportError):
    """The peer broke RFC 6455: the connection must fail with close ``code`` (1002, or 1007
    for a close reason that is not UTF-8). The transport sends that close frame itself."""

    def __init__(self, message: str, code: int = 1002) -> None:
        super().__init__(message)
        self.code = code


class TransportFailed(TransportError):
    """The transport knows that reconnecting cannot help: ``error`` is what the user must see
    (the connection gives up with it instead of retrying)."""

    def __init__(self, error: DaemonClientError) -> None:
        super().__init__(str(error))
        self.error = error


class FrameRejected(TransportError):
    """One inbound frame could not be used (invalid UTF-8, binary, too large).

    The connection stays usable: the reader logs the frame and reads on. ``binary`` marks a
    binary frame that a transport chose not to deliver (the built-in transports return binary
    frames from :meth:`Transport.recv` as ``bytes`` instead); ``data`` is its whole payload (for
    the wire trace).
    """

    def __init__(self, message: str, *, preview: bytes = b"", binary: bool = False, data: bytes = b"") -> None:
        super().__init__(message)
        self.preview = preview
        self.binary = binary
        self.data = data


@attrs.frozen
class ConnectParams:
    """Everything a transport needs to open one connection (public: every custom transport's
    ``connect`` gets one, and may derive another with ``attrs.evolve``)."""

    url: str
    timeout: float
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)  # may carry credentials
    subprotocols: Sequence[str] = attrs.field(default=(), repr=False)
    ssl_context: ssl.SSLContext | None = None
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    unix_socket: str | None = None
    """Open this unix socket and upgrade ``url`` over it, instead of dialling ``url``'s host."""
    proxy: Any = attrs.field(default=None, repr=False)
    """Which HTTP proxy reaches ``url``: a :class:`~daemon_client.transport.proxy.ProxyPolicy`
    (typed ``Any`` here: that module builds on this one), or ``None`` for none."""

    def without_credentials(self) -> ConnectParams:
        """These parameters with no extra headers and no subprotocols (for an untrusted hop)."""
        return attrs.evolve(self, headers={}, subprotocols=())


class Transport(Protocol):
    """A connected (or connectable) WebSocket carrying text and binary frames."""

    def connect(self, params: ConnectParams) -> None:
        """Open the connection; raise :class:`TransportError` on failure.

        Must return or raise within ``params.timeout`` seconds.
        """

    def send_text(self, text: str) -> None:
        """Send one text frame; raise :class:`TransportError` if the socket is gone."""

    def send_binary(self, data: bytes) -> None:
        """Send one binary frame; raise :class:`TransportError` if the socket is gone."""

    def recv(self) -> WireFrame:
        """Block until the next data frame: a text frame strictly UTF-8 decoded (``str``), or a
        binary frame's payload (``bytes``).

        Raises :class:`TransportClosed` when the connection ends, :class:`FrameRejected`
        for a frame that must be skipped (the connection stays usable), and
        :class:`TransportError` for anything else.
        """

    def abort(self) -> None:
        """Drop the connection at once, from any thread; a blocked ``recv`` raises."""

    def close(self, code: int = 1000, reason: str = "") -> None:
        """Send a close frame (best effort) and release the socket. Idempotent."""

    @property
    def selected_subprotocol(self) -> str | None:
        """The subprotocol the server chose, if any."""


TransportFactory = Callable[[], Transport]
