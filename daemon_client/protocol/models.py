"""attrs models of the frames the core client exchanges with the daemon that programs see: the
``server_info`` payload, a session ping's answer, unknown frames, and the session envelope.
The models only the connection machinery needs live in
:mod:`daemon_client.protocol.frame_models`, imported on first use; they are reachable here too.

Attribute names are snake_case; the converter in :mod:`daemon_client.protocol.codec`
owns the mapping to the wire's camelCase. Models of daemon objects keep unknown wire fields
in ``extra_fields``; the others ignore them (the raw payload stays available where a model
keeps it). Pure data: no thread runs code here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import attrs


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
class SessionPong:
    """Session ``pong`` reply; times are epoch milliseconds from the daemon's clock."""

    request_id: str
    server_received_at: int | None = None
    server_sent_at: int | None = None
    client_sent_at: int | None = None
    round_trip: float | None = None
    """Seconds from sending the ping to reading the pong, measured by this client."""


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


LAZY_NAMES = frozenset({"Hello", "HelloRejected", "InboundFrame", "PasswordAuth", "Ping", "Pong", "RpcErrorPayload",
                        "SessionPing", "StatusPayload"})  # fmt: skip
"""The names this module gives from :mod:`daemon_client.protocol.frame_models`, on first use."""

if TYPE_CHECKING:
    from daemon_client.protocol.frame_models import (
        Hello,
        HelloRejected,
        PasswordAuth,
        Ping,
        Pong,
        RpcErrorPayload,
        SessionPing,
        StatusPayload,
    )

    InboundFrame = Pong | HelloRejected | SessionMessage | UnknownMessage


def __getattr__(name: str) -> Any:
    """The models of :mod:`daemon_client.protocol.frame_models`, imported on first use."""
    if name not in LAZY_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from daemon_client.protocol import frame_models

    if name == "InboundFrame":
        value: Any = frame_models.Pong | frame_models.HelloRejected | SessionMessage | UnknownMessage
    else:
        value = getattr(frame_models, name)
    globals()[name] = value
    return value


__all__ = [
    "Hello",
    "HelloRejected",
    "InboundFrame",
    "PasswordAuth",
    "Ping",
    "Pong",
    "RpcErrorPayload",
    "ServerInfo",
    "SessionMessage",
    "SessionPing",
    "SessionPong",
    "StatusPayload",
    "UnknownMessage",
]
