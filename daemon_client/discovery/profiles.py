"""Host profiles: one daemon, known by its ``serverId``, and the several ways to reach it.

A :class:`Host` is what the Paseo app calls a host profile: a label, the daemon's
``serverId`` (given, read from a pairing offer, or learned at the first connection) and its
:class:`HostConnection` values, each one address the client can dial (TCP or WebSocket with
TLS and a password, a unix socket, a Windows pipe, a relay target or pairing-offer link), with
a preferred one. Connection ids follow the app's: ``direct:host:port``, ``socket:/path``,
``pipe:name``, ``relay:endpoint``.

Frozen values and pure functions; any thread may use them. Passwords and offer keys are
credentials: they never appear in a repr or an error message.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Union
from urllib.parse import urlsplit

import attrs

from daemon_client.discovery.hosts import DaemonTarget, TargetKind, parse_target, redact_address, relay_target
from daemon_client.discovery.offer import RelayTarget

Address = Union[str, RelayTarget]  # noqa: UP007 - a runtime alias, evaluated on Python 3.10 too
"""What a connection is made from: any address ``Client`` takes, or a :class:`RelayTarget`."""


def _connection_id(target: DaemonTarget) -> str:
    if target.kind is TargetKind.RELAY:
        assert target.relay is not None
        return f"relay:{target.relay.endpoint}"
    if target.kind is TargetKind.UNIX:
        return f"socket:{target.path}"
    if target.kind is TargetKind.PIPE:
        return f"pipe:{target.path}"
    parts = urlsplit(target.ws_url)
    scheme = "wss" if parts.scheme == "wss" else "ws"
    path = parts.path if parts.path not in ("", "/ws") else ""
    return f"direct:{parts.netloc}{path}" if scheme == "ws" else f"direct:{parts.netloc}{path}?tls"


@attrs.frozen(eq=False)
class HostConnection:
    """One way to reach a host's daemon.

    ``address``: any address :class:`~daemon_client.Client` takes (``host:port``,
    ``ws://…``/``wss://…``, ``tcp://host:port?ssl=true&password=…``, a unix socket path,
    ``pipe://name``, a pairing-offer link) or a :class:`RelayTarget`. ``password``: the daemon
    password for a direct connection (default: the ``password=`` of a ``tcp://`` address);
    refused for a relay, whose offer is the credential. Raises ``ValueError`` for an address
    that is none. Two connections are equal when they dial the same place with the same
    credentials.
    """

    address: Address = attrs.field(repr=False)
    password: str | None = attrs.field(default=None, repr=False, kw_only=True)
    target: DaemonTarget = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if isinstance(self.address, RelayTarget):
            target = relay_target(self.address)
        elif isinstance(self.address, str):
            target = parse_target(self.address)
        else:
            raise TypeError(f"a connection's address is a string or a RelayTarget, not {type(self.address).__name__}")
        if self.password is not None and not isinstance(self.password, str):
            raise TypeError("password must be a string")
        if target.kind is TargetKind.RELAY and self.password is not None:
            raise ValueError("a relay connection takes no password: the pairing offer is the credential")
        object.__setattr__(self, "target", target)

    @property
    def id(self) -> str:
        """``direct:host:port`` (``…?tls`` over TLS), ``socket:/path``, ``pipe:name`` or ``relay:endpoint``."""
        return _connection_id(self.target)

    @property
    def kind(self) -> TargetKind:
        return self.target.kind

    @property
    def server_id(self) -> str | None:
        """The daemon's ``serverId`` when the address says it (a relay target or offer)."""
        return self.target.relay.server_id if self.target.relay is not None else None

    @property
    def effective_password(self) -> str | None:
        """The password sent on this connection: ``password``, else the address's own."""
        return self.password if self.password is not None else self.target.password

    @property
    def url(self) -> str:
        """How the connection is shown (``ws://…``, ``unix:///…``, ``relay://endpoint/serverId``): no credentials."""
        return self.target.url

    def stored_address(self) -> str:
        """The address as text, credentials included (for the host store only)."""
        if isinstance(self.address, RelayTarget):
            return self.address.offer_link()
        return self.address.strip()

    def _key(self) -> tuple[object, ...]:
        relay = self.target.relay
        return (self.id, self.target.ws_url, self.target.path, self.effective_password, relay)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HostConnection) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"HostConnection({self.url!r})"


def as_connection(value: HostConnection | Address) -> HostConnection:
    """``value`` as a :class:`HostConnection` (an address is parsed; ``ValueError`` if it is none)."""
    return value if isinstance(value, HostConnection) else HostConnection(value)


def _connections(values: Iterable[HostConnection | Address]) -> tuple[HostConnection, ...]:
    if isinstance(values, (str, RelayTarget, HostConnection)):
        values = [values]
    unique: list[HostConnection] = []
    for value in values:
        connection = as_connection(value)
        if connection not in unique:
            unique.append(connection)
    return tuple(unique)


def _given_preference(value: HostConnection | Address | None) -> HostConnection | None:
    """``Host(preferred=...)`` takes a connection, its address or its id; it is resolved to one
    of the host's connections once they are known (``__attrs_post_init__``)."""
    return value  # type: ignore[return-value]  # an address or id until __attrs_post_init__ resolves it


@attrs.frozen
class Host:
    """A daemon reached by any of several connections; see the module docstring.

    ``label``: how the host is shown (``laptop``). ``connections``: its
    :class:`HostConnection` values, or addresses (at least one; duplicates are dropped).
    ``preferred``: the connection to use whenever it answers (a connection, its address or
    its id); default: none, the fastest one that answers is used. ``server_id``: the daemon's
    ``serverId``; default: the one a relay connection carries, else learned at the first
    connection. A connection that reaches a daemon with another ``serverId`` is refused
    (:class:`~daemon_client.errors.ServerMismatch`). ``probe_interval``: while a session runs
    on another connection than the preferred one, the preferred one is probed every that many
    seconds, and the client moves back to it once it answers (a reconnect like any other);
    ``None``: only when the session in use is lost. Raises ``ValueError`` for connections
    whose offers name different daemons, two connections to one place (one id) with different
    credentials, or a ``preferred`` that is not one of them.
    """

    label: str = attrs.field()
    connections: tuple[HostConnection, ...] = attrs.field(converter=_connections)
    preferred: HostConnection | None = attrs.field(default=None, converter=_given_preference)
    server_id: str | None = attrs.field(default=None)
    probe_interval: float | None = attrs.field(default=30.0, kw_only=True)

    @probe_interval.validator
    def _check_interval(self, _attribute: object, value: object) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or not value > 0):
            raise ValueError(f"probe_interval must be a number of seconds > 0, or None, not {value!r}")

    @label.validator
    def _check_label(self, _attribute: object, value: object) -> None:
        if not isinstance(value, str) or not value.strip():
            raise ValueError("a host needs a label (its name, e.g. 'laptop')")
        if any(ch in value for ch in ":/\\\n\r\t\x00") or value.strip() != value:
            raise ValueError(f"a host label may not hold ':', slashes, control characters or edge spaces: {value!r}")
        if value.isdigit() or value.startswith("~"):
            raise ValueError(f"a host label may not look like an address (a port or a path): {value!r}")

    def __attrs_post_init__(self) -> None:
        if not self.connections:
            raise ValueError(f"host {self.label!r} has no connection")
        named = {c.server_id for c in self.connections if c.server_id is not None}
        if self.server_id is not None:
            if not isinstance(self.server_id, str) or not self.server_id.strip():
                raise ValueError("server_id must be a non-empty string")
            named.add(self.server_id)
        if len(named) > 1:
            raise ValueError(
                f"host {self.label!r}: its connections reach different daemons (serverIds {', '.join(sorted(named))})"
            )
        ids = [c.id for c in self.connections]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:  # the same place with other credentials: which one is meant is unclear
            raise ValueError(
                f"host {self.label!r}: two connections to {', '.join(twice)} with different credentials; keep one"
            )
        if self.server_id is None and named:
            object.__setattr__(self, "server_id", next(iter(named)))
        preferred = self.preferred
        if preferred is not None:
            object.__setattr__(self, "preferred", self._find(preferred))

    def _find(self, wanted: object) -> HostConnection:
        for connection in self.connections:
            if wanted in (connection, connection.id):
                return connection
        if isinstance(wanted, (str, RelayTarget)):
            try:
                parsed = HostConnection(wanted)
            except ValueError:
                parsed = None
            for connection in self.connections:
                if parsed is not None and connection.id == parsed.id:
                    return connection
        shown = redact_address(wanted) if isinstance(wanted, str) else repr(wanted)
        raise ValueError(f"host {self.label!r}: the preferred connection {shown} is not one of its connections")

    def connection(self, wanted: HostConnection | Address) -> HostConnection:
        """The connection given by value, address or id; ``ValueError`` if it is not one."""
        return self._find(wanted)

    def ordered(self) -> tuple[HostConnection, ...]:
        """The connections, the preferred one first."""
        if self.preferred is None:
            return self.connections
        return (self.preferred, *(c for c in self.connections if c is not self.preferred))

    def with_connection(self, value: HostConnection | Address) -> Host:
        """This host with one more connection (unchanged if it has it already)."""
        return attrs.evolve(self, connections=(*self.connections, as_connection(value)))

    def with_server_id(self, server_id: str) -> Host:
        return attrs.evolve(self, server_id=server_id)

    def __repr__(self) -> str:
        ids = ", ".join(c.id for c in self.connections)
        return f"Host({self.label!r}, server_id={self.server_id!r}, connections=[{ids}])"


def is_label(value: str) -> bool:
    """Whether ``value`` may be a host's label (a label never looks like an address)."""
    try:
        Host(value, (HostConnection("127.0.0.1:1"),))
    except ValueError:
        return False
    return True


def host_of(value: Host | Sequence[HostConnection | Address]) -> Host:
    """Internal helper for callers that take a host or a list of connections."""
    return value if isinstance(value, Host) else Host("host", value)
