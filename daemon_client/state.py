"""``ConnectionState``: the states of a client's connection (protocol.md 10.1). Pure data."""

from __future__ import annotations

import enum
from collections.abc import Callable


class ConnectionState(enum.Enum):
    """The client's connection state (protocol 10.1)."""

    IDLE = "idle"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    DISCONNECTED = "disconnected"
    DISPOSED = "disposed"


StateListener = Callable[[ConnectionState, ConnectionState, str], None]
"""``listener(old, new, reason)``, called on the callback thread."""
