"""``Client``: the user's entry point. Configuration, lifecycle and blocking requests.

Every public method is thread-safe. Blocking methods wait on the calling thread, always
with a timeout; they may be called from callbacks (replies are delivered by the reader
thread, not the callback thread). Callbacks run on the callback thread chosen by
``callback_executor`` (see :mod:`daemon_client.runtime.dispatch`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

from daemon_client._wire import DEFAULT_MAX_FRAME_BYTES
from daemon_client.config import DEFAULT_APP_VERSION
from daemon_client.state import ConnectionState

if TYPE_CHECKING:  # the layers are imported by the first client built (daemon_client.client.assembly)
    import logging
    import random
    import ssl
    from concurrent.futures import Future

    from daemon_client.api.agents.namespace import AgentsNamespace
    from daemon_client.api.daemon_config import ConfigNamespace
    from daemon_client.api.projects import ProjectsNamespace
    from daemon_client.api.providers.namespace import ProvidersNamespace
    from daemon_client.api.terminals.namespace import TerminalsNamespace
    from daemon_client.api.workspaces.namespace import WorkspacesNamespace
    from daemon_client.client.switches import ConnectionListener
    from daemon_client.config import Heartbeat, ReconnectPolicy
    from daemon_client.discovery import RelayTarget, Resolution
    from daemon_client.discovery.profiles import Host, HostConnection
    from daemon_client.protocol.hosts import HostKind
    from daemon_client.protocol.models import ServerInfo, SessionPong
    from daemon_client.runtime.dispatch import CallbackExecutor
    from daemon_client.runtime.flow_limits import FlowControl
    from daemon_client.runtime.pushes import PushHandler
    from daemon_client.state import StateListener
    from daemon_client.subscriptions.flow import ClientStats
    from daemon_client.transport.base import Transport
    from daemon_client.transport.proxy import ProxySetting
    from daemon_client.transport.relay import RelayStats
    from daemon_client.transport.trace import TraceTarget


class Client:
    """A synchronous, threaded client of one Paseo daemon.

    Raises ``ValueError`` for a URL that is not ``ws://``/``wss://``, carries
    ``user:password@`` (pass ``password=``), or is ``ws://`` with an ``ssl_context``.

    Args:
        url: the daemon's address: ``ws://host:port/ws`` (or ``wss://``), ``host:port``, a
            port, ``/path/to.sock`` or ``unix:///path``, ``tcp://host:port?ssl=true&password=…``
            (``pipe://name`` is parsed but cannot be dialled), a pairing-offer link
            (``https://app.paseo.sh/#offer=…``) or a :class:`RelayTarget` for a daemon behind a
            Paseo relay (needs the ``relay`` extra). Default: found the way Paseo's
            CLI finds it (``PASEO_HOST``, ``PASEO_LISTEN``, ``$PASEO_HOME/paseo.pid``, the
            daemon's config, ``localhost:6767``), and found again before every reconnect;
            ``PASEO_URL`` is not read. Raises ``ValueError`` for a malformed address.
        password: the daemon's password. Default: the ``password=`` of a ``tcp://`` address,
            else ``PASEO_PASSWORD``, else none. Never sent through a relay (the pairing offer
            is the credential there).
        auth_header: a complete ``Authorization`` header value (``"Bearer <token>"``,
            ``"Basic …"``) for a proxy in front of the daemon, sent verbatim on the WebSocket
            upgrade only when no password is set (a password wins, as in the TypeScript SDK).
            Never logged; hidden from reprs like the password.
        client_id: the id the daemon keys this client's session by; unique per
            instance and stable across its reconnects. Default ``daemon-client-<uuid4>``.
        app_version: the Paseo version announced in ``hello`` (not this package's).
        connect_timeout: seconds from opening the socket to ``server_info``.
        request_timeout: default timeout of requests without a per-family default.
        reconnect: the :class:`ReconnectPolicy`.
        heartbeat: the :class:`Heartbeat` settings.
        callback_executor: ``None`` (a dispatcher thread), ``"manual"`` (callbacks
            run inside :meth:`process_events`), or ``post(fn)`` for GUI loops.
        flow_control: how much the callback queue may hold (:class:`FlowControl`; default
            100,000 events or 256 MiB): over it, observations skip pushes and are told
            exactly what they missed (``lagged`` events, fresh snapshots). See
            ``docs/threading.md``. ``FlowControl(None, None)`` queues without bound.
        on_callback_error: called with every exception a callback raises.
        strict: keep callback errors and raise them from :meth:`raise_callback_errors`
            and :meth:`close` (for tests).
        transport_factory: makes the transport of each connection attempt (through a relay:
            the socket to the relay, which the client wraps in its encryption).
        ssl_context: the TLS settings of a ``wss://`` URL (e.g. a pinned CA); refused
            with a ``ws://`` URL. Default: the system's trusted CAs, hostname checked.
        max_frame_bytes: inbound frames larger than this are skipped.
        allow_insecure_credentials: credentials sent over ``ws://`` to a host that is not
            this machine travel unencrypted. ``None`` (default): allowed, with one
            WARNING; ``False``: refused, ``connect()`` raises ``InsecureCredentials``
            before anything is sent; ``True``: allowed silently.
        trace: write every frame in and out to this file (a path, or a writable text
            stream) as JSONL, credentials replaced by ``<redacted>``; default: the path in
            ``DAEMON_CLIENT_TRACE``, else no trace. Replay it with
            :class:`daemon_client.testing.ReplayDaemon`. Raises ``OSError`` if the file
            cannot be opened.
        trace_binary: record binary frames (terminal input and output, screen snapshots) in
            full. Off by default: they may carry what a person typed into a terminal (a
            password at a ``sudo`` prompt) and its echo, which no scrubbing can recognise, so
            each is recorded by its length and first two bytes (opcode and slot) only. Default:
            on when ``DAEMON_CLIENT_TRACE_BINARY=1``.
        thread_cpu: run the client's own threads (reader, callback, writer, timer) on this
            CPU only (Linux). They hand the interpreter lock to each other; on one CPU their
            data stays in its caches (about 1.6× the events per second of a busy stream on a
            2-CPU machine, docs/benchmarks.md). Leave it ``None`` (the default) when that CPU
            may be busy with other work. Raises ``ValueError`` for a CPU this process may not
            use, or where threads cannot be pinned.
        proxy: the HTTP proxy that TCP connections (``ws://``, ``wss://``, a relay) go through,
            by HTTP ``CONNECT`` (TLS to the daemon runs inside the tunnel). ``None`` (default):
            ``https_proxy`` for ``wss://``, ``http_proxy`` for ``ws://`` (or their upper-case
            forms); a URL ``"http://[user:password@]host[:port]"``: that proxy, whatever the
            environment says; ``False``: no proxy. ``no_proxy`` is honoured in both first cases;
            loopback hosts and unix sockets never go through a proxy. Proxy credentials go only
            into ``Proxy-Authorization``, never into logs, reprs or errors. Raises ``ValueError``
            for a URL that is not an ``http://`` proxy. A custom ``transport_factory`` is told
            the proxy in ``ConnectParams.proxy``.
    """

    def __init__(
        self,
        url: str | RelayTarget | Host | None = None,
        *,
        password: str | None = None,
        client_id: str | None = None,
        app_version: str = DEFAULT_APP_VERSION,
        connect_timeout: float = 15.0,
        request_timeout: float = 60.0,
        reconnect: ReconnectPolicy | None = None,
        heartbeat: Heartbeat | None = None,
        callback_executor: CallbackExecutor = None,
        flow_control: FlowControl | None = None,
        on_callback_error: Callable[[BaseException], None] | None = None,
        strict: bool = False,
        transport_factory: Callable[[], Transport] | None = None,
        ssl_context: ssl.SSLContext | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        logger: logging.Logger | None = None,
        rng: random.Random | None = None,
        auth_header: str | None = None,
        allow_insecure_credentials: bool | None = None,
        trace: TraceTarget | None = None,
        trace_binary: bool | None = None,
        thread_cpu: int | None = None,
        proxy: ProxySetting = None,
    ) -> None:
        if connect_timeout <= 0 or request_timeout <= 0:
            raise ValueError("timeouts must be > 0")
        # The connection machinery is imported with the first client, not with the class.
        from daemon_client.client.assembly import assemble

        parts = assemble(
            Client,
            url,
            password=password,
            client_id=client_id,
            app_version=app_version,
            connect_timeout=connect_timeout,
            request_timeout=request_timeout,
            reconnect=reconnect,
            heartbeat=heartbeat,
            callback_executor=callback_executor,
            flow_control=flow_control,
            on_callback_error=on_callback_error,
            strict=strict,
            transport_factory=transport_factory,
            ssl_context=ssl_context,
            max_frame_bytes=max_frame_bytes,
            logger=logger,
            rng=rng,
            auth_header=auth_header,
            allow_insecure_credentials=allow_insecure_credentials,
            trace=trace,
            trace_binary=trace_binary,
            thread_cpu=thread_cpu,
            proxy=proxy,
        )
        self._log = parts.log
        self._name = parts.name
        self._dialing = parts.dialing
        self._connect_limit = parts.connect_limit
        self._targets = parts.dialing.targets
        self._client_id = parts.client_id
        self._request_timeout = request_timeout
        self._dispatcher = parts.dispatcher
        self._timers = parts.timers
        self._requests = parts.requests
        self._pushes = parts.pushes
        self._trace = parts.trace
        self._connection = parts.connection
        self._context = parts.context
        self._namespaces = parts.namespaces
        self._switches = parts.switches

    @property
    def agents(self) -> AgentsNamespace:
        """The agent directory, its observations, agent handles and timelines."""
        return self._namespaces.agents()

    @property
    def workspaces(self) -> WorkspacesNamespace:
        """The workspace directory, its observations and workspace handles."""
        return self._namespaces.workspaces()

    @property
    def providers(self) -> ProvidersNamespace:
        """The provider catalog: reads, updates, ``wait_for_ready``."""
        return self._namespaces.providers()

    @property
    def projects(self) -> ProjectsNamespace:
        """The project list, its updates and a live cache."""
        return self._namespaces.projects()

    @property
    def config(self) -> ConfigNamespace:
        """The daemon's mutable configuration: ``get``, ``patch``, ``subscribe``."""
        return self._namespaces.config()

    @property
    def terminals(self) -> TerminalsNamespace:
        """The daemon's terminals: create, list, follow; handles with input, capture and live output."""
        return self._namespaces.terminals()

    # ------------------------------------------------------------------ lifecycle
    def connect(self, timeout: float | None = None) -> ServerInfo:
        """Connect and complete the handshake; return the daemon's ``server_info``.

        Blocks the calling thread up to ``timeout`` (default: ``connect_timeout`` plus a
        grace; for a host of several connections, a whole round: the probes and one attempt
        on each connection, plus the grace). If this first attempt fails it raises (``ConnectionLost``,
        ``ConnectTimeout``, ``AuthenticationError``, ``ProtocolError``) and the client
        stays disconnected, unless ``ReconnectPolicy(retry_initial_connect=True)``.
        Once connected, drops are healed by automatic reconnects.
        """
        return self._connection.connect(timeout if timeout is not None else self._connect_limit)

    def close(self, timeout: float = 5.0) -> None:
        """Close for good. Idempotent; safe from any thread, including callbacks.

        Sends close 1000, fails pending requests with :class:`ClientClosed`, delivers the
        last state change, and stops every thread the client started. Returns within
        ``timeout`` even when the daemon stopped reading (the socket is aborted first if a
        write is stuck); the calling thread is never joined. In strict mode, raises
        :class:`~daemon_client.errors.CallbackError` for callback errors not raised yet.
        """
        deadline = time.monotonic() + timeout  # every step shares the one timeout
        self._switches.stop(0.0)  # no more checks of the preferred connection
        self._connection.close(timeout)  # ends a check's probe in progress
        self._switches.stop(max(0.0, deadline - time.monotonic()))
        if self._trace is not None:
            self._trace.close(timeout)
        self._namespaces.dispose()
        self._timers.stop(deadline - time.monotonic())
        self._dispatcher.stop(deadline - time.monotonic())
        if not self._dispatcher.on_dispatch_thread():
            self._dispatcher.raise_errors()

    def __enter__(self) -> Client:
        if self.state is ConnectionState.IDLE:
            try:
                self.connect()
            except BaseException:
                self.close()
                raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ state
    @property
    def url(self) -> str:
        """The daemon's address: ``ws://…``/``wss://…``, ``unix:///path`` or ``pipe://name``."""
        return self._targets.current.url

    @property
    def resolution(self) -> Resolution:
        """How the daemon was found: the address, its source, and every place looked at."""
        return self._targets.resolution

    @property
    def relay_stats(self) -> RelayStats | None:
        """Counters of the end-to-end-encrypted relay sockets; ``None`` while no relay was used."""
        return self._dialing.relays.stats()

    @property
    def host(self) -> Host | None:
        """The :class:`Host` this client was made for (with its ``serverId`` once learned);
        ``None`` for a client of one address."""
        return self._targets.host

    @property
    def active_connection(self) -> HostConnection | None:
        """The host connection the live session uses; ``None`` while not connected, and for a
        client of one address."""
        return self._targets.active

    def on_connection_change(self, callback: ConnectionListener) -> Callable[[], None]:
        """A host's client: call ``callback(previous, current, reason)`` on the callback thread
        whenever a session starts on another connection than the last one (the first included,
        with ``previous=None``); ``reason`` says why (``the preferred connection answered``,
        ``failover: direct:… was lost (…)``). Returns a function that removes it. For a client of
        one address it is never called."""
        return self._switches.add(callback)

    @property
    def client_id(self) -> str:
        return self._client_id

    @property
    def state(self) -> ConnectionState:
        """The current :class:`ConnectionState`."""
        return self._connection.state

    @property
    def server_info(self) -> ServerInfo | None:
        """The ``server_info`` of the current connection; ``None`` while not connected."""
        return self._connection.server_info

    @property
    def host_kind(self) -> HostKind | None:
        """How the connected daemon routes observations; decided once per connection."""
        return self._connection.host_kind

    @property
    def last_error(self) -> BaseException | None:
        """Why the last connection or connection attempt ended."""
        return self._connection.last_error

    def on_state_change(self, callback: StateListener) -> Callable[[], None]:
        """Call ``callback(old, new, reason)`` on the callback thread: once with the current
        state, then on every transition. Returns a function that removes it."""
        return self._connection.add_state_listener(callback)

    def add_push_listener(self, handler: PushHandler, message_types: Iterable[str] | None = None) -> Callable[[], None]:
        """Low level: call ``handler(SessionMessage)`` on the callback thread for every daemon
        push (not replies) of the given types, or of every type. Returns the remover."""
        return self._pushes.add(handler, message_types)

    # ------------------------------------------------------------------ callbacks
    def process_events(self, timeout: float | None = 0.0, max_events: int | None = None) -> int:
        """With ``callback_executor="manual"``: run pending callbacks on this thread.

        Waits up to ``timeout`` s for the first (``None``: until one arrives); returns
        how many ran. Calls from two threads never overlap (the second waits, within its
        ``timeout``, for the first).
        """
        return self._dispatcher.process_events(timeout, max_events)

    def flush_callbacks(self, timeout: float = 5.0) -> bool:
        """Wait until every callback queued so far has run; False on timeout.

        Raises :class:`~daemon_client.errors.WouldDeadlock` on the callback thread (with a
        ``callback_executor``: also on the executor's thread, e.g. a GUI thread). In
        manual mode callbacks only ever run inside ``process_events()``: called on the thread
        that runs ``process_events()`` (or when no live thread does), this drains the queue
        there; called from another thread, it waits for that loop to run them.
        """
        return self._dispatcher.flush(timeout)

    def stats(self) -> ClientStats:
        """Flow control now: ``queued_events``/``queued_bytes`` admitted to the callback queue
        and not yet run, whether it is lagging, and per observation how many pushes were
        skipped (``observations``). Any thread; cheap."""
        return self._namespaces.stats()

    def raise_callback_errors(self) -> None:
        """Strict mode: raise ``CallbackError`` for the first callback error not raised yet."""
        self._dispatcher.raise_errors()

    # ------------------------------------------------------------------ requests
    def request_async(self, message: Mapping[str, Any], *, timeout: float | None = None) -> Future[dict[str, Any]]:
        """Send a request and return a future of its reply payload. Never blocks.

        ``message`` is the session message with its fields flat beside ``type``; a
        ``requestId`` is added unless given. The frame is queued for the socket's writer
        thread. The future fails with ``RpcError``, ``RequestTimeout``, ``ConnectionLost``
        (also at once when the daemon stopped reading and 64 MiB already wait to be sent)
        or ``ClientClosed``; its done-callbacks run on the callback thread, or at once on
        the adding thread once the client is closed. Raises ``NotConnected`` / ``ClientClosed`` at once when
        the client is idle, disconnected or closed; while connecting the request waits.
        """
        return self._context.request_async(message, timeout)

    def request(self, message: Mapping[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        """Send a request and block until its reply payload (see :meth:`request_async`)."""
        return self._context.request(message, timeout)

    def ping(self, timeout: float = 5.0) -> SessionPong:
        """Measure the round trip with a session ``ping``; ``round_trip`` is in seconds."""
        from daemon_client.protocol.codec import structure
        from daemon_client.protocol.models import SessionPong

        started = time.monotonic()
        payload = self.request({"type": "ping", "clientSentAt": int(time.time() * 1000)}, timeout=timeout)
        pong = structure(payload, SessionPong)
        return SessionPong(
            request_id=pong.request_id,
            server_received_at=pong.server_received_at,
            server_sent_at=pong.server_sent_at,
            client_sent_at=pong.client_sent_at,
            round_trip=time.monotonic() - started,
        )

    def __repr__(self) -> str:
        return f"<Client {self.url} {self.state.value}>"


def connect(url: str | RelayTarget | Host | None = None, *, timeout: float | None = None, **options: Any) -> Client:
    """Create a :class:`Client`, connect it, and return it (use it as a context manager)."""
    client = Client(url, **options)
    try:
        client.connect(timeout)
    except BaseException:
        client.close()
        raise
    return client
