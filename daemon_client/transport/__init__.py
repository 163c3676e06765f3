"""Transports: how frames reach the daemon.

``Transport`` is the protocol the connection supervisor uses; ``WebSocketTransport``
is the real one (websocket-client) and ``MemoryTransport`` the in-memory one for tests.
"""

from daemon_client.transport.base import (
    DEFAULT_MAX_FRAME_BYTES,
    ConnectParams,
    FrameRejected,
    Transport,
    TransportClosed,
    TransportError,
    TransportFactory,
)
from daemon_client.transport.memory import MemoryServerEnd, MemoryTransport
from daemon_client.transport.websocket import WebSocketTransport

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "ConnectParams",
    "FrameRejected",
    "MemoryServerEnd",
    "MemoryTransport",
    "Transport",
    "TransportClosed",
    "TransportError",
    "TransportFactory",
    "WebSocketTransport",
]
