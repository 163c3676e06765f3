"""Transports: how frames reach the daemon.

``Transport`` is the protocol the connection supervisor uses; ``WebSocketTransport``
is the real one (its upgrade ruled by ``handshake_policy``) and ``MemoryTransport`` the
in-memory one for tests. Names are imported on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from daemon_client._wire import DEFAULT_MAX_FRAME_BYTES
from daemon_client.transport.base import (
    ConnectParams,
    FrameRejected,
    Transport,
    TransportClosed,
    TransportError,
    TransportFactory,
    TransportFailed,
)

if TYPE_CHECKING:
    from daemon_client.transport.memory import MemoryServerEnd, MemoryTransport
    from daemon_client.transport.websocket import WebSocketTransport

_LAZY = {
    "MemoryServerEnd": "daemon_client.transport.memory",
    "MemoryTransport": "daemon_client.transport.memory",
    "WebSocketTransport": "daemon_client.transport.websocket",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'daemon_client.transport' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


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
    "TransportFailed",
    "WebSocketTransport",
]
