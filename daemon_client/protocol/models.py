"""attrs models of the frames the core client exchanges with the daemon.

Attribute names are snake_case; the converter in :mod:`daemon_client.protocol.codec`
owns the mapping to the wire's camelCase. Models of daemon objects keep unknown wire fields
in ``extra_fields``; the others ignore them (the raw payload stays available where a model
keeps it). Pure data: no thread runs code here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import attrs


@attrs.frozen
class PasswordAuth:
    """``hello.auth``: the password carrier for daemons that read it (protocol 1.3)."""

    password: str = attrs.field(repr=False)
    kind: str = "password"


@attrs.frozen
class Hello:
    """The first frame on every socket (protocol 1.4)."""

    client_id: str
    client_type: str = "cli"
    protocol_version: int = 1
    app_version: str | None = None
    capabilities: Mapping[str, bool] = attrs.field(factory=dict)
    auth: PasswordAuth | None = None
    type: str = "hello"


@attrs.frozen
class HelloRejected:
    """``hello.rejected``: the daemon refuses the hello (newer daemons, protocol 1.3)."""

    reason: str
    accepts: tuple[str, ...] = ()
    type: str = "hello.rejected"


@attrs.frozen
class Ping:
    """Top-level heartbeat probe ``{"type":"ping"}`` (protocol 1.6)."""

    type: str = "ping"


@attrs.frozen
class Pong:
    """Top-level heartbeat answer ``{"type":"pong"}``; carries no correlation id."""

    type: str = "pong"


@attrs.frozen
class ServerInfo:
    """The ``status``/``server_info`` payload that completes a handshake (protocol 1.5)."""

    server_id: str
    status: str = "server_info"
    hostname: str | None = None
    version: str | None = None
    protocol_version: int | None = None
    permissions: tuple[str, ...] = ()
    desktop_managed: bool | None = None
    capabilities: Mapping[str, Any] = attrs.field(factory=dict)
    features: Mapping[str, bool] = attrs.field(factory=dict)
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)

    def feature(self, name: str) -> bool:
        """``True`` only when the daemon reports the flag as ``true`` (absent means ``False``)."""
        return self.features.get(name) is True


@attrs.frozen
class SessionPing:
    """Session ``ping`` request for round-trip measurement (protocol 1.6)."""

    request_id: str
    client_sent_at: int | None = None
    type: str = "ping"


@attrs.frozen
class SessionPong:
    """Session ``pong`` reply; times are epoch milliseconds from the daemon's clock."""

    request_id: str
    server_received_at: int | None = None
    server_sent_at: int | None = None
    client_sent_at: int | None = None
    round_trip: float | None = None
    """Seconds from sending the ping to reading the pong, measured by this client."""


@attrs.frozen
class RpcErrorPayload:
    """``rpc_error``: the daemon could not handle a request (protocol 2.4)."""

    request_id: str
    error: str
    request_type: str | None = None
    code: str | None = None


@attrs.frozen
class StatusPayload:
    """Any ``status`` message; ``status`` discriminates, the rest stays in ``raw``."""

    status: str
    raw: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


class SessionMessage(NamedTuple):
    """A daemon → client session message: its ``type`` and its ``payload`` dict.

    This is the envelope every push and reply travels in; typed models are built from
    ``payload`` by the code that needs them (a tuple keeps the reader thread cheap).
    """

    type: str
    payload: dict[str, Any]


@attrs.frozen
class UnknownMessage:
    """A top-level frame of a type this client does not know, kept as the raw dict."""

    raw: Mapping[str, Any]

    @property
    def type(self) -> str | None:
        value = self.raw.get("type")
        return value if isinstance(value, str) else None


InboundFrame = Pong | HelloRejected | SessionMessage | UnknownMessage
