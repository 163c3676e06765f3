"""How a client dials its daemon: one address, or a host's several connections.

:func:`plan_dialing` turns what ``Client`` was given (an address, a :class:`RelayTarget`, a
:class:`~daemon_client.discovery.profiles.Host`, or nothing) into a :class:`Dialing`: where each
attempt goes (a target source) and, per target, its transport factory and credentials (a
:class:`~daemon_client.runtime.options.Route`). A relay target's route wraps the transport in
the relay's encryption and sends no password (the pairing offer is the credential); a direct
route carries the connection's password (else ``password=``, else ``PASEO_PASSWORD``) and the
credential plan of its URL (a warning, or a refusal, for credentials in clear).

Runs on the thread that constructs the client; a host's routes are built there too, except
that a relay route's encryption is set up on the reader thread at its first attempt (so that a
host whose relay needs a missing extra still reaches its direct connections).
"""

from __future__ import annotations

import logging
import ssl
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from daemon_client._values import Record
from daemon_client.client.credentials import plan_credentials
from daemon_client.config import password_from_env
from daemon_client.discovery import DaemonTarget, RelayTarget, TargetKind, Targets, TargetSource, resolve
from daemon_client.runtime.options import Route
from daemon_client.transport.base import Transport

if TYPE_CHECKING:
    from daemon_client.discovery.failover import Probe, Prober
    from daemon_client.discovery.profiles import Host, HostConnection
    from daemon_client.transport.relay import RelayStats, RelayTransportFactory


class Dialing(Record):
    """What :func:`plan_dialing` decided."""

    __slots__ = ("password", "relays", "route", "routes", "secrets", "targets")
    _unshown = frozenset({"password", "secrets"})

    targets: Targets
    route: Route
    """The route of the first target (the only one for a single address)."""
    routes: Callable[[DaemonTarget], Route] | None
    """Per target, for a host; ``None`` for a single address."""
    password: str | None
    secrets: tuple[str | None, ...]
    """Every credential the trace must scrub."""
    relays: RelayRoutes

    def __init__(  # noqa: PLR0917 - every field may be passed by position
        self,
        targets: Targets,
        route: Route,
        routes: Callable[[DaemonTarget], Route] | None,
        password: str | None,
        secrets: tuple[str | None, ...],
        relays: RelayRoutes,
    ) -> None:
        self.targets = targets
        self.route = route
        self.routes = routes
        self.password = password
        self.secrets = secrets
        self.relays = relays


class _Settings(Record):
    """What every route of one client is built with."""

    __slots__ = ("allow_insecure_credentials", "auth_header", "logger", "ssl_context", "transport_factory")
    _unshown = frozenset({"auth_header"})

    transport_factory: Callable[[], Transport]
    ssl_context: ssl.SSLContext | None
    auth_header: str | None
    allow_insecure_credentials: bool | None
    logger: logging.Logger

    def __init__(
        self,
        transport_factory: Callable[[], Transport],
        ssl_context: ssl.SSLContext | None,
        auth_header: str | None,
        allow_insecure_credentials: bool | None,
        logger: logging.Logger,
    ) -> None:
        self.transport_factory = transport_factory
        self.ssl_context = ssl_context
        self.auth_header = auth_header
        self.allow_insecure_credentials = allow_insecure_credentials
        self.logger = logger

    def refusal(self, target: DaemonTarget, password: str | None, *, host: bool) -> str | None:
        """The credential plan of ``target`` with ``password``: a refusal, or ``None`` (a warning is logged)."""
        return _credential_plan(
            target,
            ssl_context=self.ssl_context,
            has_credentials=bool(password or self.auth_header),
            allow_insecure_credentials=self.allow_insecure_credentials,
            logger=self.logger,
            host=host,
        )


class RelayRoutes:
    """The relay factories of a client, made when first used; their counters, summed."""

    def __init__(self, base: Callable[[], Transport], logger: logging.Logger) -> None:
        self._base = base
        self._log = logger
        self._lock = threading.Lock()
        self._factories: dict[bytes, RelayTransportFactory] = {}

    def factory(self, relay: RelayTarget) -> RelayTransportFactory:
        """The relay factory for ``relay``'s daemon key (``MissingExtra`` without PyNaCl)."""
        from daemon_client.transport.relay import RelayTransportFactory

        with self._lock:
            known = self._factories.get(relay.daemon_public_key)
            if known is None:
                known = self._factories[relay.daemon_public_key] = RelayTransportFactory(
                    self._base, relay.daemon_public_key, logger=self._log
                )
            return known

    def lazy(self, relay: RelayTarget) -> Callable[[], Transport]:
        """A transport factory that sets the relay up at its first call (reader thread)."""

        def make() -> Transport:
            return self.factory(relay)()

        return make

    @property
    def used(self) -> bool:
        with self._lock:
            return bool(self._factories)

    def stats(self) -> RelayStats | None:
        """The counters of the relay sockets; ``None`` when no relay was used."""
        with self._lock:
            factories = list(self._factories.values())
        if not factories:
            return None
        if len(factories) == 1:
            return factories[0].stats
        import attrs

        each = [factory.stats for factory in factories]
        return attrs.evolve(
            each[0],
            **{field.name: sum(getattr(s, field.name) for s in each) for field in attrs.fields(type(each[0]))},
        )


def _credential_plan(
    target: DaemonTarget,
    *,
    ssl_context: ssl.SSLContext | None,
    has_credentials: bool,
    allow_insecure_credentials: bool | None,
    logger: logging.Logger,
    host: bool,
) -> str | None:
    """The refusal of ``target``'s route (a warning is logged here), ``None`` if it may go."""
    url = target.ws_url if target.kind is TargetKind.TCP else "ws://localhost/ws"  # a socket is this machine
    if host and not url.startswith("wss://"):
        ssl_context = None  # a host's TLS settings are for its wss:// connections
    plan = plan_credentials(
        url,
        ssl_context=ssl_context,
        has_credentials=has_credentials,
        allow_insecure_credentials=allow_insecure_credentials,
    )
    if plan.warning:
        logger.warning("%s", plan.warning)
    return plan.refusal


def plan_dialing(
    url: str | RelayTarget | Host | None,
    *,
    password: str | None,
    transport_factory: Callable[[], Transport],
    ssl_context: ssl.SSLContext | None,
    auth_header: str | None,
    allow_insecure_credentials: bool | None,
    logger: logging.Logger,
    prober: Prober,
    probe_timeout: float,
    on_learn: Callable[[str], None] | None = None,
) -> Dialing:
    """Decide how the client dials (see the module docstring); ``ValueError`` for a bad address."""
    relays = RelayRoutes(transport_factory, logger.getChild("relay"))
    settings = _Settings(transport_factory, ssl_context, auth_header, allow_insecure_credentials, logger)
    if url is not None and not isinstance(url, (str, RelayTarget)):
        return _plan_host(url, settings, password, relays, prober, probe_timeout, on_learn)
    resolution = resolve(url or None)
    target = resolution.target
    chosen = password_from_env(password if password is not None else target.password)
    factory = transport_factory
    if target.relay is not None:
        factory = relays.factory(target.relay)  # MissingExtra at once: the only way to this daemon
        if chosen is not None:
            logger.info("the password is not sent through the relay: the pairing offer is the credential")
            chosen = None
    refusal = settings.refusal(target, chosen, host=False)
    targets = TargetSource(resolution, resolve, logger.getChild("discovery"))
    return Dialing(targets, Route(factory, chosen, refusal), None, chosen, (chosen, auth_header), relays)


def _plan_host(  # noqa: PLR0917 - one caller, in order
    host: Host,
    settings: _Settings,
    password: str | None,
    relays: RelayRoutes,
    prober: Prober,
    probe_timeout: float,
    on_learn: Callable[[str], None] | None,
) -> Dialing:
    from daemon_client.discovery.failover import HostTargets
    from daemon_client.discovery.profiles import Host

    if not isinstance(host, Host):
        raise TypeError(f"a daemon address is a string, a RelayTarget or a Host, not {type(host).__name__}")
    fallback = password_from_env(password)
    by_target: dict[DaemonTarget, Route] = {}
    secrets: list[str | None] = [fallback, settings.auth_header]
    for connection in host.connections:
        by_target[connection.target] = _route(connection, settings, fallback, relays)
        secrets.append(by_target[connection.target].password)
    logger = settings.logger.getChild("hosts")
    targets = HostTargets(host, prober, logger, probe_timeout=probe_timeout, on_learn=on_learn)
    first = by_target[host.ordered()[0].target]

    def route(target: DaemonTarget) -> Route:
        return by_target[target]

    return Dialing(targets, first, route, first.password, tuple(secrets), relays)


def _route(connection: HostConnection, settings: _Settings, fallback: str | None, relays: RelayRoutes) -> Route:
    target = connection.target
    if target.relay is not None:
        return Route(relays.lazy(target.relay), None)
    own = connection.effective_password
    chosen = own if own is not None else fallback
    return Route(settings.transport_factory, chosen, settings.refusal(target, chosen, host=True))


PROBE_TIMEOUT = 3.0
"""Seconds each probe of a host's connection may take (a handshake and a ping), at most."""


def connect_limit(dialing: Dialing, connect_timeout: float) -> float | None:
    """``connect()``'s default bound for a host of several connections: a whole round (its
    probes, then one attempt on each connection) plus the usual grace; ``None`` otherwise."""
    host = dialing.targets.host
    if host is None or len(host.connections) < 2:
        return None
    from daemon_client.discovery.failover import PROBE_GRACE  # imported already: a host's targets

    return min(connect_timeout, PROBE_TIMEOUT) + PROBE_GRACE + connect_timeout * len(host.connections) + 5.0


def probe_lazily(
    connection: HostConnection,
    timeout: float,
    on_cancel: Callable[[Callable[[], None]], None],
    *,
    make_client: Callable[..., Any],
    **options: Any,
) -> Probe:
    """Probe one connection of a host with a client made by ``make_client`` (the probing
    module is imported when a host first probes)."""
    from daemon_client.client.probing import probe_with

    return probe_with(make_client, connection, timeout, on_cancel, **options)


def traced_routes(
    dialing: Dialing, wrap: Callable[[Callable[[], Transport]], Callable[[], Transport]]
) -> Callable[[DaemonTarget], Route] | None:
    """A host's routes with every transport recorded into the trace (``wrap``); ``None`` for one address."""
    routes = dialing.routes
    if routes is None:
        return None
    wrapped: dict[int, Route] = {}

    def traced(target: DaemonTarget) -> Route:
        route = routes(target)
        known = wrapped.get(id(route))
        if known is None:
            known = Route(wrap(route.transport_factory), route.password, route.insecure_refusal)
            wrapped[id(route)] = known
        return known

    return traced
