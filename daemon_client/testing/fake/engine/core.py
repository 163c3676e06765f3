"""Transport-neutral state of the fake daemon, shared by the memory and loopback frontends.

Owns the configuration and per-kind defaults (the ``server_info`` examples of protocol.md 11.1),
the live connections, the server-side sessions keyed by ``clientId`` (protocol.md 1.7), the log
of received frames and the fault-injection switches. Every method is thread-safe: connection
reader threads record frames and join sessions, the test thread observes and scripts. The lock
is never held while calling a handler or doing socket I/O.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from daemon_client.protocol.hosts import HostKind
from daemon_client.testing.fake.engine.handlers import DaemonHandle, HandlerRegistry
from daemon_client.testing.fake.engine.peer import FramePredicate, Peer, ReceivedFrame, Session

__all__ = [
    "BEARER_PREFIX",
    "DEFAULT_FEATURES",
    "DEFAULT_VERSIONS",
    "DaemonCore",
    "FakeConfig",
    "FramePredicate",
    "ReceivedFrame",
    "Session",
    "server_info_payload",
]

BEARER_PREFIX = "paseo.bearer."

DEFAULT_VERSIONS: Mapping[HostKind, str] = {
    HostKind.CAPABLE: "0.9.3",
    HostKind.SELECTIVE: "0.1.108",
    HostKind.BROADCAST: "0.1.65-beta.5",
}

DEFAULT_FEATURES: Mapping[HostKind, Mapping[str, bool]] = {
    HostKind.CAPABLE: {
        "ownedSubscriptions": True,
        "explicitEventSubscriptions": True,
        "selectiveAgentTimeline": True,
        "creationLifecycle": True,
        "agentRequestReceipts": True,
        "projectList": True,
        "providersSnapshot": True,
        "providersSnapshotCwd": True,
        "workspaceMultiplicity": True,
        "directorySync": True,
        # newest SDK gates (protocol.md 12.1)
        "agentDetach": True,
        "agentForkContext": True,
        "agentForkContextCursor": True,
        "providerUsageList": True,
        "relayConfig": True,
        "workspaceTerminals": True,
        "workspaceLabels": True,
        "agentProfiles": True,
        "agentProfileWorkflows": True,
    },
    HostKind.SELECTIVE: {
        "selectiveAgentTimeline": True,
        "explicitEventSubscriptions": True,
        "providersSnapshot": True,
        "workspaceMultiplicity": True,
        "agentDetach": True,
        "agentForkContext": True,
        "agentForkContextCursor": True,
        "providerUsageList": True,
    },
    HostKind.BROADCAST: {"providersSnapshot": True},
}

_VOICE_CAPABILITIES: Mapping[str, Any] = {
    "voice": {
        "dictation": {"enabled": False, "reason": "Dictation is disabled in daemon config."},
        "voice": {"enabled": False, "reason": "Realtime voice is disabled in daemon config."},
    }
}


@attrs.frozen
class FakeConfig:
    """Fixed identity and timing of one fake daemon."""

    host_kind: HostKind = HostKind.CAPABLE
    password: str | None = None
    server_id: str = "srv-fake"
    hostname: str = "fakehost"
    version: str | None = None
    features: Mapping[str, bool] | None = None
    hello_timeout: float = 15.0
    session_ttl: float = 90.0
    hostnames: tuple[str, ...] = ()
    """Host names accepted in the ``Host`` header besides localhost and IP literals (protocol.md 1.1)."""
    cors_origins: tuple[str, ...] = ()
    """Origins accepted besides one naming the ``Host`` itself."""

    @property
    def effective_version(self) -> str:
        return self.version if self.version is not None else DEFAULT_VERSIONS[self.host_kind]

    @property
    def effective_features(self) -> dict[str, bool]:
        return {**DEFAULT_FEATURES[self.host_kind], **(self.features or {})}


def server_info_payload(config: FakeConfig) -> dict[str, Any]:
    """The ``status`` payload sent after a valid hello, shaped per host kind."""
    kind = config.host_kind
    payload: dict[str, Any] = {"status": "server_info"}
    if kind is HostKind.CAPABLE:
        payload["protocolVersion"] = 1
    payload.update(serverId=config.server_id, hostname=config.hostname, version=config.effective_version)
    if kind is HostKind.CAPABLE:
        payload["permissions"] = ["daemon.read", "workspace.read", "workspace.write"]
        payload["desktopManaged"] = False
    if kind is HostKind.BROADCAST:
        payload["capabilities"] = {key: dict(value) for key, value in _VOICE_CAPABILITIES.items()}
    payload["features"] = config.effective_features
    return payload


class DaemonCore:
    """Everything both frontends share; see the module docstring."""

    def __init__(self, config: FakeConfig, registry: HandlerRegistry, daemon: DaemonHandle) -> None:
        self.config = config
        self.registry = registry
        self.daemon = daemon
        self.state: dict[str, Any] = {}
        """Free storage for extensions (agents, timelines ...)."""
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._connections: list[Peer] = []
        self._sessions: dict[str, Session] = {}
        self._received: list[ReceivedFrame] = []
        self._accepted = 0
        self._next_id = 0
        self._failures: dict[str, list[tuple[str, str]]] = {}
        self._ignored: set[str] = set()
        self._down_until = 0.0
        self.refuse_connections = False
        self.stall_handshake = False
        self.answer_pings = True

    @property
    def host_kind(self) -> HostKind:
        return self.config.host_kind

    # -- connections ---------------------------------------------------------------------------

    def refusing(self) -> bool:
        """Whether new connections are refused (switch, restart downtime or shutdown)."""
        return self.refuse_connections or self.stopping.is_set() or time.monotonic() < self._down_until

    def refuse_for(self, downtime: float) -> None:
        with self._lock:
            self._down_until = max(self._down_until, time.monotonic() + downtime)

    def add_connection(self, connection: Peer) -> int:
        """Register an accepted connection; returns its id."""
        with self._changed:
            self._next_id += 1
            self._accepted += 1
            self._connections.append(connection)
            self._changed.notify_all()
            return self._next_id

    def remove_connection(self, connection: Peer) -> None:
        with self._changed:
            if connection in self._connections:
                self._connections.remove(connection)
            session = connection.session
            if session is not None and connection in session.connections:
                session.connections.remove(connection)
                if not session.connections:
                    session.detached_at = time.monotonic()
            self._changed.notify_all()

    def connections(self, *, handshaken_only: bool = False) -> list[Peer]:
        with self._lock:
            return [c for c in self._connections if c.handshaken or not handshaken_only]

    @property
    def accepted_count(self) -> int:
        with self._lock:
            return self._accepted

    def mark_handshaken(self, connection: Peer) -> None:
        with self._changed:
            connection.handshaken = True
            self._changed.notify_all()

    def wait_for_connections(self, n: int, timeout: float) -> list[Peer]:
        """At least ``n`` handshaken connections; ``n == 0`` waits until no connection is left."""

        def done() -> bool:
            if n == 0:
                return not self._connections
            return sum(c.handshaken for c in self._connections) >= n

        with self._changed:
            if not self._changed.wait_for(done, timeout):
                live = sum(c.handshaken for c in self._connections)
                wanted = "no connection" if n == 0 else f"{n} handshaken connection(s)"
                raise TimeoutError(
                    f"expected {wanted} within {timeout:g} s, have {live} handshaken of {len(self._connections)} live"
                )
            return [c for c in self._connections if c.handshaken]

    def choose_subprotocol(self, offered: Sequence[str]) -> str | None:
        """Broadcast hosts echo the first offered subprotocol; others prefer the bearer one."""
        if not offered:
            return None
        if self.config.host_kind is not HostKind.BROADCAST:
            for name in offered:
                if name.lower().startswith(BEARER_PREFIX):
                    return name
        return offered[0]

    # -- sessions ------------------------------------------------------------------------------

    def join_session(self, connection: Peer, client_id: str) -> Session:
        """Attach ``connection`` to the live session of ``client_id`` or to a new one."""
        with self._changed:
            self._prune_sessions()
            session = self._sessions.get(client_id)
            if session is None:
                session = self._sessions[client_id] = Session(client_id)
            session.connections.append(connection)
            session.detached_at = None
            connection.session = session
            self._changed.notify_all()
            return session

    def _prune_sessions(self) -> None:
        now = time.monotonic()
        ttl = self.config.session_ttl
        for client_id, session in list(self._sessions.items()):
            if not session.connections and session.detached_at is not None and now - session.detached_at >= ttl:
                del self._sessions[client_id]

    def sessions(self) -> dict[str, Session]:
        with self._lock:
            self._prune_sessions()
            return dict(self._sessions)

    def session_connections(self, session: Session) -> list[Peer]:
        with self._lock:
            return list(session.connections)

    def clear_sessions(self) -> None:
        with self._lock:
            self._sessions.clear()

    # -- received frames -----------------------------------------------------------------------

    def record(self, frame: ReceivedFrame) -> None:
        with self._changed:
            self._received.append(frame)
            frame.connection.frames.append(frame)
            self._changed.notify_all()

    def received(self) -> list[ReceivedFrame]:
        with self._lock:
            return list(self._received)

    def wait_for_frame(
        self, match: str | FramePredicate, timeout: float, since: int, connection: Peer | None
    ) -> ReceivedFrame:
        predicate: FramePredicate = (lambda f: f.matches(match)) if isinstance(match, str) else match
        found: list[ReceivedFrame] = []

        def scan() -> bool:
            for frame in self._received[since:]:
                if (connection is None or frame.connection is connection) and predicate(frame):
                    found.append(frame)
                    return True
            return False

        with self._changed:
            if self._changed.wait_for(scan, timeout):
                return found[0]
            seen = [f.message_type or next(iter(f), "?") for f in self._received[since:]][-20:]
        wanted = repr(match) if isinstance(match, str) else getattr(match, "__name__", "predicate")
        raise TimeoutError(f"no client frame matching {wanted} within {timeout:g} s; last types received: {seen}")

    # -- fault injection -----------------------------------------------------------------------

    def fail_next(self, request_type: str, error: str, code: str) -> None:
        with self._lock:
            self._failures.setdefault(request_type, []).append((error, code))

    def take_failure(self, request_type: str) -> tuple[str, str] | None:
        with self._lock:
            queued = self._failures.get(request_type)
            if not queued:
                return None
            failure = queued.pop(0)
            if not queued:
                del self._failures[request_type]
            return failure

    def ignore(self, request_type: str, enabled: bool) -> None:
        with self._lock:
            if enabled:
                self._ignored.add(request_type)
            else:
                self._ignored.discard(request_type)

    def is_ignored(self, request_type: str) -> bool:
        with self._lock:
            return request_type in self._ignored
