"""attrs models of the frames only the connection machinery builds or reads: the hello and its
refusal, heartbeats, and the status and error payloads.

Imported on first use (a client built, which prepares its hello at once, or a rare top-level
frame decoded) rather than at ``import daemon_client``: each attrs class costs the compilation
of its generated methods, and a program that only imports the package needs none of these.
:mod:`daemon_client.protocol.models` re-exports them under their old names. Naming as in that
module (snake_case here, camelCase on the wire through :mod:`daemon_client.protocol.codec`).
Pure data: no thread runs code here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
class SessionPing:
    """Session ``ping`` request for round-trip measurement (protocol 1.6)."""

    request_id: str
    client_sent_at: int | None = None
    type: str = "ping"


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
