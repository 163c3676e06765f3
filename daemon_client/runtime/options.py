"""``ConnectionOptions``: what the connection supervisor needs to open connections.

Immutable; read by every thread of the connection.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import attrs

from daemon_client.config import Heartbeat, ReconnectPolicy
from daemon_client.discovery import TargetSource
from daemon_client.transport.base import Transport


@attrs.frozen
class ConnectionOptions:
    """What the supervisor needs to open connections."""

    targets: TargetSource
    """Where to connect; looked up again before every attempt when the daemon was discovered."""
    client_id: str
    app_version: str
    password: str | None = attrs.field(repr=False)
    connect_timeout: float
    reconnect: ReconnectPolicy
    heartbeat: Heartbeat
    transport_factory: Callable[[], Transport]
    ssl_context: Any = None
    max_frame_bytes: int = 64 * 1024 * 1024
    rng: random.Random | None = None
    auth_header: str | None = attrs.field(default=None, repr=False)
    insecure_refusal: str | None = None
    """When set, every attempt fails with ``InsecureCredentials(insecure_refusal)`` before connecting."""
    thread_cpu: int | None = None
    """The CPU the reader and writer threads run on (see :mod:`daemon_client.runtime.affinity`)."""

    @property
    def write_stall_limit(self) -> float:
        """Seconds one socket write may take before the connection is declared dead: the
        heartbeat's bound (``interval + timeout * max_misses``), whether or not it is enabled."""
        beat = self.heartbeat
        return beat.interval + beat.timeout * max(1, beat.max_misses)
