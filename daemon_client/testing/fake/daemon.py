"""``FakeDaemon``: a scriptable daemon side of the Paseo protocol for tests.

The facade over the transport-neutral :class:`~daemon_client.testing.fake.engine.core.DaemonCore`
and its three frontends: in memory (:attr:`FakeDaemon.transport_factory`, one
``fake-daemon-mem-<n>`` reader thread per accepted connection), on a real loopback port
(:meth:`FakeDaemon.serve`, see :mod:`daemon_client.testing.fake.loopback`) and through a
relay, end-to-end encrypted (:meth:`FakeDaemon.serve_relay`, see
:mod:`daemon_client.testing.fake.relay`). Its methods are called
from the test thread; none of them holds the fake's lock while doing socket I/O, and
:meth:`FakeDaemon.close` joins every thread the fake started (bounded joins).
"""

from __future__ import annotations

import itertools
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from daemon_client.protocol.hosts import HostKind
from daemon_client.testing.fake.config import FakeDaemonConfig
from daemon_client.testing.fake.directory.observations import DirectoryObservation, FakeDirectory
from daemon_client.testing.fake.directory.stores import AgentStore, WorkspaceStore
from daemon_client.testing.fake.engine.connection import FakeConnection, SocketClosed, run_connection
from daemon_client.testing.fake.engine.core import (
    DEFAULT_FEATURES,
    DEFAULT_VERSIONS,
    DaemonCore,
    FakeConfig,
    FramePredicate,
    ReceivedFrame,
    Session,
    server_info_payload,
)
from daemon_client.testing.fake.engine.handlers import (
    KNOWN_REQUESTS,
    Handler,
    HandlerRegistry,
    RequestContext,
    RequestSchema,
    default_registry,
    register_extension,
    reply_type_for,
)
from daemon_client.testing.fake.engine.peer import Peer
from daemon_client.testing.fake.events import EventSubscription, FakeEvents
from daemon_client.testing.fake.loopback import LoopbackFrontend
from daemon_client.testing.fake.projects import FakeProjects
from daemon_client.testing.fake.provider_extras import FakeProviderExtras
from daemon_client.testing.fake.providers import FakeProviders
from daemon_client.testing.fake.runs.handlers import RunHandlers
from daemon_client.testing.fake.runs.runs import FakeRuns
from daemon_client.testing.fake.settings import FakeAgentSettings
from daemon_client.testing.fake.terminals import handlers as terminal_handlers
from daemon_client.testing.fake.terminals.store import FakeTerminal, FakeTerminals, TerminalInput
from daemon_client.testing.fake.timeline.store import FakeTimeline, TimelineSubscription
from daemon_client.testing.fake.upgrade import check_listen
from daemon_client.testing.fake.workspace_create import FakeWorktrees
from daemon_client.testing.fake.workspace_labels import FakeWorkspaceLabels
from daemon_client.transport.base import TransportClosed, TransportError
from daemon_client.transport.memory import MemoryServerEnd, MemoryTransport

if TYPE_CHECKING:
    from daemon_client.testing.fake.relay.daemon_side import RelayAttachment
    from daemon_client.testing.fake.relay.server import FakeRelay

__all__ = [
    "DEFAULT_FEATURES",
    "DEFAULT_VERSIONS",
    "KNOWN_REQUESTS",
    "AgentStore",
    "DirectoryObservation",
    "EventSubscription",
    "FakeAgentSettings",
    "FakeConfig",
    "FakeConnection",
    "FakeDaemon",
    "FakeDaemonConfig",
    "FakeEvents",
    "FakeProjects",
    "FakeProviderExtras",
    "FakeProviders",
    "FakeRuns",
    "FakeTerminal",
    "FakeTerminals",
    "FakeTimeline",
    "FakeWorkspaceLabels",
    "FakeWorktrees",
    "FramePredicate",
    "Handler",
    "HandlerRegistry",
    "ReceivedFrame",
    "RequestContext",
    "RequestSchema",
    "Session",
    "TerminalInput",
    "TimelineSubscription",
    "WorkspaceStore",
    "register_extension",
    "reply_type_for",
]

_JOIN_TIMEOUT = 5.0


class FakeDaemon:
    """A fake Paseo daemon serving in memory and, after :meth:`serve`, on loopback.

    ``host_kind`` selects the ``server_info`` shape, authentication carriers and routing of
    the daemon generation it imitates (protocol.md section 3). Use as a context manager or
    call :meth:`close`.
    """

    def __init__(
        self,
        host_kind: HostKind = HostKind.CAPABLE,
        *,
        password: str | None = None,
        server_id: str = "srv-fake",
        hostname: str = "fakehost",
        version: str | None = None,
        features: Mapping[str, bool] | None = None,
        hello_timeout: float = 15.0,
        session_ttl: float = 90.0,
        hostnames: Sequence[str] = (),
        cors_origins: Sequence[str] = (),
    ) -> None:
        self.config = FakeConfig(
            host_kind=host_kind,
            password=password,
            server_id=server_id,
            hostname=hostname,
            version=version,
            features=dict(features) if features is not None else None,
            hello_timeout=hello_timeout,
            session_ttl=session_ttl,
            hostnames=tuple(hostnames),
            cors_origins=tuple(cors_origins),
        )
        self.registry: HandlerRegistry = default_registry(host_kind, self.config.effective_features)
        """The request handlers by type: ``handler_for(type)`` gives the installed one (to wrap
        it in a replacement given to :meth:`on_request`); see also :meth:`after_request`."""
        self.core = DaemonCore(self.config, self.registry, self)
        self.directory = FakeDirectory(self.core)
        """Agent and workspace directories: stores, observations, handlers (fake_directory)."""
        self.directory.install(self.registry)
        self.agents: AgentStore = self.directory.agents
        """Agents served by the directory requests; mutations notify observations."""
        self.workspaces: WorkspaceStore = self.directory.workspaces
        """Workspaces served by the directory requests; mutations notify observations."""
        self.timeline = FakeTimeline(self.core, self.directory)
        """Agent timelines: rows, live ``agent_stream``, subscriptions, reads (fake_timeline)."""
        self.timeline.install(self.registry)
        self.runs = FakeRuns(self.core, self.directory, self.timeline)
        """Simulated runs: create, send, wait, cancel, archive, permissions (fake_runs)."""
        RunHandlers(self.runs).install(self.registry)
        self.events = FakeEvents(self.core, self.directory)
        """Event subscriptions and the delivery of event pushes per host kind (fake_events)."""
        self.events.install(self.registry)
        self.providers = FakeProviders(self.core, self.events)
        """The provider catalog, snapshot updates and provider requests (fake_providers)."""
        self.providers.install(self.registry)
        self.projects = FakeProjects(self.core, self.events)
        """Projects, ``project.update`` and ``project.list.request`` on projectList hosts (fake_projects)."""
        self.projects.install(self.registry)
        self.daemon_config = FakeDaemonConfig(self)
        """The daemon's mutable configuration, its get/set handlers and pushes (fake_config)."""
        self.daemon_config.install(self.registry)
        self.settings = FakeAgentSettings(self)
        """Agent settings: commands, mode/model/thinking/feature, update, attention, delete (fake_settings)."""
        self.settings.install(self.registry)
        self.worktrees = FakeWorktrees(self)
        """Workspace creation, titles and Paseo worktrees (fake_workspace_create)."""
        self.worktrees.install(self.registry)
        self.workspace_labels = FakeWorkspaceLabels(self, self.worktrees)
        """Label assignments of workspaces, in the catalog of ``worktrees.labels`` (fake_workspace_labels)."""
        self.workspace_labels.install(self.registry)
        self.provider_extras = FakeProviderExtras(self)
        """Provider features, diagnostics of unknown providers and usage (fake_provider_extras)."""
        self.provider_extras.install(self.registry)
        self.terminals = FakeTerminals(self.core)
        """Terminals with scripted shells, stream slots, binary frames, faults (fake terminals)."""
        terminal_handlers.install(self.registry, self.terminals)
        self._loopback = LoopbackFrontend(self.core)
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._numbers = itertools.count(1)
        self._closed = False
        self._factory = _MemoryFactory(self)
        self._relay: RelayAttachment | None = None

    # -- configuration -------------------------------------------------------------------------

    @property
    def host_kind(self) -> HostKind:
        return self.config.host_kind

    @property
    def server_info(self) -> dict[str, Any]:
        """The ``server_info`` status payload this fake sends after a valid hello."""
        return server_info_payload(self.config)

    # -- memory frontend -----------------------------------------------------------------------

    @property
    def transport_factory(self) -> _MemoryFactory:
        """``Callable[[], Transport]``: each call returns a new MemoryTransport connected to this fake."""
        return self._factory

    def _accept_memory(self, end: MemoryServerEnd) -> None:
        """MemoryTransport acceptor; runs on the thread calling ``transport.connect``."""

        def recv(timeout: float) -> str | bytes:
            try:
                return end.recv(timeout)
            except TransportClosed as exc:  # the close frame of the fake's own close() is no peer close
                mine = connection.close_code is not None or connection.dropped
                raise SocketClosed(None if mine else exc.code, exc.reason) from None

        with self._lock:  # no blocking I/O below; close() cannot miss the new thread
            if self._closed or self.core.refusing():
                raise TransportError("connection refused")
            end.selected_subprotocol = self.core.choose_subprotocol(list(end.subprotocols))
            connection = FakeConnection(
                self.core,
                end,
                headers=end.headers,
                subprotocols=end.subprotocols,
                selected_subprotocol=end.selected_subprotocol,
            )
            thread = threading.Thread(
                target=run_connection,
                args=(connection, recv),
                name=f"fake-daemon-mem-{next(self._numbers)}",
                daemon=True,
            )
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
            thread.start()

    # -- loopback frontend ---------------------------------------------------------------------

    def serve(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        ssl_context: ssl.SSLContext | None = None,
        unix_path: str | None = None,
        allow_insecure_password: bool = False,
    ) -> str:
        """Start the loopback server (idempotent) and return its ``ws://host:port/ws`` URL.

        With a server ``ssl_context`` it speaks TLS and returns a ``wss://`` URL. With
        ``unix_path`` it listens on that unix socket instead and returns ``unix:///path``
        (a stale socket file there is replaced; the file is removed when it stops). Like the
        real daemon it answers 403 to a ``Host`` or ``Origin`` it does not accept
        (``hostnames``, ``cors_origins``). On an address that is not loopback it logs a
        WARNING, and refuses (``ValueError``) to serve a password without TLS unless
        ``allow_insecure_password``.
        """
        if self._closed:
            raise RuntimeError("the fake daemon is closed")
        if unix_path is None:
            check_listen(
                host,
                password=self.config.password is not None,
                tls=ssl_context is not None,
                allow_insecure_password=allow_insecure_password,
            )
        return self._loopback.start(host, port, ssl_context, unix_path)

    @property
    def url(self) -> str:
        url = self._loopback.url
        if url is None:
            raise RuntimeError("the fake daemon is not serving on loopback; call serve() first")
        return url

    def wait_serving(self, timeout: float = 5.0) -> None:
        """Block until the loopback server listens again after :meth:`restart` with downtime."""
        if not self._loopback.wait_serving(timeout):
            raise TimeoutError(f"the fake daemon was not listening again within {timeout:g} s")

    # -- relay frontend ------------------------------------------------------------------------

    def serve_relay(self, relay: FakeRelay | None = None) -> str:
        """Attach to ``relay`` (default: a new :class:`FakeRelay` on loopback, closed with this
        fake) as a daemon does, and return this fake's pairing-offer link. Idempotent.

        Clients given the link connect through the relay, end-to-end encrypted; everything
        else (scripting, ``received``, ``restart``) works as on the other frontends. Needs the
        ``test`` and ``relay`` extras.
        """
        from daemon_client.testing.fake.relay.daemon_side import RelayAttachment
        from daemon_client.testing.fake.relay.server import FakeRelay

        if self._closed:
            raise RuntimeError("the fake daemon is closed")
        with self._lock:
            attachment = self._relay
            if attachment is None:
                owned = relay is None
                hub = relay if relay is not None else FakeRelay()
                hub.start()
                attachment = self._relay = RelayAttachment(self.core, hub, self.config.server_id, owns_relay=owned)
                start = True
            else:
                start = False
        if start:
            attachment.start()
        return attachment.offer_link

    @property
    def relay(self) -> RelayAttachment:
        """This fake's side of the relay (key, offer, fault injection) after :meth:`serve_relay`."""
        if self._relay is None:
            raise RuntimeError("the fake daemon is not attached to a relay; call serve_relay() first")
        return self._relay

    # -- observation ---------------------------------------------------------------------------

    @property
    def connections(self) -> list[FakeConnection]:
        """Live server connections (handshaken or not), in accept order."""
        return _own(self.core.connections())

    @property
    def accepted_count(self) -> int:
        return self.core.accepted_count

    @property
    def received(self) -> list[ReceivedFrame]:
        """Every decoded client frame in arrival order; ``frame.connection`` says where it came from."""
        return self.core.received()

    @property
    def sessions(self) -> dict[str, Session]:
        """Live server-side sessions by ``clientId`` (expired ones removed)."""
        return self.core.sessions()

    def directory_observations(self, *, include_released: bool = False) -> list[DirectoryObservation]:
        """Live server-side agent/workspace observations (capable: per socket; legacy: per session
        slot), in creation order; ``include_released`` adds released and replaced ones."""
        return self.directory.observations(include_released=include_released)

    def wait_for_frame(
        self,
        match: str | FramePredicate,
        timeout: float = 5.0,
        *,
        since: int = 0,
        connection: Peer | None = None,
    ) -> ReceivedFrame:
        """First received frame (from index ``since``) matching a type or predicate.

        A string matches the top-level ``type`` or the inner type of a ``session`` frame.
        Raises ``TimeoutError`` naming what was received instead.
        """
        return self.core.wait_for_frame(match, timeout, since, connection)

    def wait_for_connections(self, n: int, timeout: float = 5.0) -> list[FakeConnection]:
        """Block until ``n`` live connections completed the handshake; return them.

        ``n == 0`` instead waits until every connection has ended.
        """
        return _own(self.core.wait_for_connections(n, timeout))

    # -- scripting -----------------------------------------------------------------------------

    def on_request(self, request_type: str, handler: Handler) -> None:
        """Replace the handler of ``request_type`` (validation of a known type is kept).
        ``fake.registry.handler_for(request_type)`` gives the one installed, to wrap it."""
        self.registry.register(request_type, handler)

    def after_request(self, request_type: str, hook: Handler) -> Callable[[], None]:
        """Run ``hook(ctx)`` right after each ``request_type`` request was handled (answered by
        its handler, whichever is installed), on that connection's thread, before the
        connection's next frame is read: whatever the hook sends or changes in a store reaches
        the client after the reply and before the reply to the client's next request on that
        connection. Not run for requests answered by :meth:`fail_next`, ignored, or refused as
        unknown. Returns a function that removes the hook.

        Before the hook runs, every frame the stores had queued (the reply among them) has been
        written, so a :meth:`push` from the hook follows the reply too. A hook that raises is
        logged as an ``activity_log`` error, as a failing handler is; the reply stands."""

        def after(ctx: RequestContext) -> None:
            for store in (self.directory, self.timeline, self.events):
                store.wait_idle()
            hook(ctx)

        return self.registry.add_after_hook(request_type, after)

    def push(self, message_type: str, payload: Mapping[str, Any], *, connection: Peer | None = None) -> int:
        """Send ``{"type":"session","message":{"type":..,"payload":..}}`` to one or every handshaken
        connection; returns how many sockets it was written to."""
        frame = {"type": "session", "message": {"type": message_type, "payload": dict(payload)}}
        targets = [connection] if connection is not None else self.core.connections(handshaken_only=True)
        return sum(target.send_frame(frame) for target in targets)

    def send_raw(self, data: str | bytes, *, binary: bool = False, connection: Peer | None = None) -> int:
        """Send a raw text frame (``str``), raw text bytes that may be invalid UTF-8 (``bytes``)
        or, with ``binary=True``, a binary frame, to one or every handshaken connection."""
        targets = [connection] if connection is not None else self.core.connections(handshaken_only=True)
        return sum(target.send_raw(data, binary=binary) for target in targets)

    # -- fault injection -----------------------------------------------------------------------

    @property
    def refuse_connections(self) -> bool:
        """Memory: ``connect`` raises ``TransportError("connection refused")``; loopback: HTTP 503."""
        return self.core.refuse_connections

    @refuse_connections.setter
    def refuse_connections(self, value: bool) -> None:
        self.core.refuse_connections = value

    @property
    def stall_handshake(self) -> bool:
        """Accept a valid hello but never send ``server_info``."""
        return self.core.stall_handshake

    @stall_handshake.setter
    def stall_handshake(self, value: bool) -> None:
        self.core.stall_handshake = value

    @property
    def answer_pings(self) -> bool:
        """``False``: top-level pings get no pong (a half-open daemon); session pings unaffected."""
        return self.core.answer_pings

    @answer_pings.setter
    def answer_pings(self, value: bool) -> None:
        self.core.answer_pings = value

    def fail_next(self, request_type: str, error: str = "Injected failure", code: str = "handler_error") -> None:
        """Answer the next request of that type (with a ``requestId``) with ``rpc_error``."""
        self.core.fail_next(request_type, error, code)

    def ignore(self, request_type: str, enabled: bool = True) -> None:
        """Never answer requests of that type (while enabled)."""
        self.core.ignore(request_type, enabled)

    def drop_connections(self) -> None:
        """Abort every connection without a close frame."""
        for connection in self.core.connections():
            connection.abort()

    def close_connections(self, code: int = 1001, reason: str = "") -> None:
        """Close every connection with a close frame."""
        for connection in self.core.connections():
            connection.close(code, reason)

    def restart(self, downtime: float = 0.0, *, unix_path: str | None = None, port: int | None = None) -> None:
        """Imitate a daemon restart: drop every connection, forget the sessions, and refuse
        connections for ``downtime`` seconds (loopback: the port stops listening and listens
        again on the same port; see :meth:`wait_serving`). Returns at once.

        ``unix_path`` or ``port`` (on 127.0.0.1; 0: any free port) moves the loopback server
        there, as a daemon restarted with another listen address; :attr:`url` reports it.
        """
        if self._closed:
            raise RuntimeError("the fake daemon is closed")
        if unix_path is not None and port is not None:
            raise ValueError("give unix_path or port, not both")
        move_to: str | tuple[str, int] | None = unix_path
        if port is not None:
            move_to = ("127.0.0.1", port)
        self.core.refuse_for(downtime)
        self.drop_connections()
        self.core.clear_sessions()
        self._loopback.restart(downtime, move_to)
        if self._relay is not None:
            self._relay.restart(downtime)

    def interrupt_loopback(self, downtime: float) -> None:
        """Take the loopback frontend down for ``downtime`` seconds: its sockets are dropped
        without a close frame and its address refuses connections, then listens again (see
        :meth:`wait_serving`). The relay frontend and the sessions stay up: a direct route to
        the daemon lost while the relay still reaches it. Returns at once."""
        if self._closed:
            raise RuntimeError("the fake daemon is closed")
        self._loopback.interrupt(downtime)

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """Stop everything and join every thread the fake started. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.core.stopping.set()
        self.drop_connections()
        self.runs.close()
        self._loopback.close()
        if self._relay is not None:
            self._relay.close()
        with self._lock:
            threads, self._threads = self._threads, []
        deadline = time.monotonic() + _JOIN_TIMEOUT
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> FakeDaemon:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _own(connections: list[Peer]) -> list[FakeConnection]:
    """The core's connections as the class every frontend creates them with."""
    return [connection for connection in connections if isinstance(connection, FakeConnection)]


class _MemoryFactory:
    """``transport_factory`` of a fake: a callable returning connected-on-demand MemoryTransports."""

    def __init__(self, daemon: FakeDaemon) -> None:
        self.daemon = daemon

    def __call__(self) -> MemoryTransport:
        return MemoryTransport(self.daemon._accept_memory)

    def __repr__(self) -> str:
        return f"<transport factory of {self.daemon!r}>"
