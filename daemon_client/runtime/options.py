"""``ConnectionOptions``: what the connection supervisor needs to open connections.

A plain slotted record (:mod:`daemon_client._values`), never changed once built; read by every
thread of the connection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from daemon_client._values import Record
from daemon_client.config import Heartbeat, ReconnectPolicy
from daemon_client.discovery import DaemonTarget, Targets
from daemon_client.transport.base import Transport

if TYPE_CHECKING:
    import random

    from daemon_client.transport.proxy import ProxyPolicy


class Route(Record):
    """How one target is dialled: its transport factory and credentials (never in the repr)."""

    __slots__ = ("insecure_refusal", "password", "transport_factory")
    _unshown = frozenset({"password"})

    transport_factory: Callable[[], Transport]
    password: str | None
    insecure_refusal: str | None
    """When set, every attempt fails with ``InsecureCredentials(insecure_refusal)`` before connecting."""

    def __init__(
        self, transport_factory: Callable[[], Transport], password: str | None, insecure_refusal: str | None = None
    ) -> None:
        self.transport_factory = transport_factory
        self.password = password
        self.insecure_refusal = insecure_refusal


class ConnectionOptions(Record):
    """What the supervisor needs to open connections (the credentials never in the repr)."""

    __slots__ = (
        "_default_route",
        "app_version",
        "auth_header",
        "client_id",
        "connect_timeout",
        "heartbeat",
        "insecure_refusal",
        "max_frame_bytes",
        "password",
        "proxy",
        "reconnect",
        "rng",
        "routes",
        "ssl_context",
        "targets",
        "thread_cpu",
        "transport_factory",
    )
    _unshown = frozenset({"password", "auth_header", "_default_route"})

    targets: Targets
    """Where to connect; looked up again before every attempt when the daemon was discovered."""
    client_id: str
    app_version: str
    password: str | None
    connect_timeout: float
    reconnect: ReconnectPolicy
    heartbeat: Heartbeat
    transport_factory: Callable[[], Transport]
    ssl_context: Any
    max_frame_bytes: int
    rng: random.Random | None
    auth_header: str | None
    insecure_refusal: str | None
    """When set, every attempt fails with ``InsecureCredentials(insecure_refusal)`` before connecting."""
    thread_cpu: int | None
    """The CPU the reader and writer threads run on (see :mod:`daemon_client.runtime.affinity`)."""
    proxy: ProxyPolicy | None
    """Which HTTP proxy each connection goes through (``Client(proxy=...)``); ``None``: none."""
    routes: Callable[[DaemonTarget], Route] | None
    """The route of each target (a host's connections differ); ``None``: the fields above."""
    _default_route: Route

    def __init__(  # noqa: PLR0917 - every field may be passed by position
        self,
        targets: Targets,
        client_id: str,
        app_version: str,
        password: str | None,
        connect_timeout: float,
        reconnect: ReconnectPolicy,
        heartbeat: Heartbeat,
        transport_factory: Callable[[], Transport],
        ssl_context: Any = None,
        max_frame_bytes: int = 64 * 1024 * 1024,
        rng: random.Random | None = None,
        auth_header: str | None = None,
        insecure_refusal: str | None = None,
        thread_cpu: int | None = None,
        proxy: ProxyPolicy | None = None,
        routes: Callable[[DaemonTarget], Route] | None = None,
    ) -> None:
        self.targets = targets
        self.client_id = client_id
        self.app_version = app_version
        self.password = password
        self.connect_timeout = connect_timeout
        self.reconnect = reconnect
        self.heartbeat = heartbeat
        self.transport_factory = transport_factory
        self.ssl_context = ssl_context
        self.max_frame_bytes = max_frame_bytes
        self.rng = rng
        self.auth_header = auth_header
        self.insecure_refusal = insecure_refusal
        self.thread_cpu = thread_cpu
        self.proxy = proxy
        self.routes = routes
        self._default_route = Route(transport_factory, password, insecure_refusal)

    def route(self, target: DaemonTarget) -> Route:
        """Reader thread, before an attempt: how ``target`` is dialled."""
        return self._default_route if self.routes is None else self.routes(target)

    @property
    def write_stall_limit(self) -> float:
        """Seconds one socket write may take before the connection is declared dead: the
        heartbeat's bound (``interval + timeout * max_misses``), whether or not it is enabled."""
        beat = self.heartbeat
        return beat.interval + beat.timeout * max(1, beat.max_misses)
