"""What the handshake sends and how its failures are read (protocol 1.3, 1.4, 1.8, 10.4).

Pure functions used by the connection supervisor's reader thread: the ``hello``, the
authentication carriers of the upgrade request (per route, :class:`Carriers`), and the mapping of close codes and
``hello.rejected`` to exceptions that say what to do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from daemon_client._values import Record
from daemon_client.config import is_token_safe
from daemon_client.errors import (
    AuthenticationError,
    ConnectionLost,
    DaemonClientError,
    ProtocolError,
    ProtocolVersionError,
)
from daemon_client.protocol.codec import encode_hello
from daemon_client.protocol.hosts import CLIENT_CAPABILITIES

if TYPE_CHECKING:
    from daemon_client.protocol.frame_models import Hello, HelloRejected
    from daemon_client.runtime.options import Route

CLOSE_HELLO_TIMEOUT = 4001
CLOSE_INVALID = 4002
CLOSE_INCOMPATIBLE = 4003
CLOSE_UNAUTHORIZED = 4401


def build_hello(client_id: str, app_version: str, password: str | None) -> Hello:
    """The hello this client sends on every socket."""
    from daemon_client.protocol.frame_models import Hello, PasswordAuth  # imported by the first client

    return Hello(
        client_id=client_id,
        client_type="cli",
        protocol_version=1,
        app_version=app_version,
        capabilities=dict(CLIENT_CAPABILITIES),
        auth=PasswordAuth(password) if password else None,
    )


def auth_carriers(password: str | None, auth_header: str | None = None) -> tuple[dict[str, str], tuple[str, ...]]:
    """Upgrade headers and subprotocols carrying ``password`` (only if it is token-safe), or,
    when no password is set, ``auth_header`` as the ``Authorization`` header (for a proxy)."""
    if not password:
        return ({"Authorization": auth_header} if auth_header else {}), ()
    if not is_token_safe(password):
        return {}, ()
    return {"Authorization": f"Bearer {password}"}, (f"paseo.bearer.{password}",)


class Carriers:
    """Per route (a host's connections differ in password): the upgrade headers, subprotocols
    and encoded ``hello``, built once each. Made with the client (its first route's at once),
    then used by the reader thread only."""

    def __init__(self, client_id: str, app_version: str, auth_header: str | None, first: Route) -> None:
        self._client_id, self._app_version, self._auth_header = client_id, app_version, auth_header
        self._known: dict[int, tuple[Route, dict[str, str], tuple[str, ...], str]] = {}
        self.of(first)  # the first hello is built with the client, as it always was

    def of(self, route: Route) -> tuple[dict[str, str], tuple[str, ...], str]:
        known = self._known.get(id(route))
        if known is None or known[0] is not route:
            headers, subprotocols = auth_carriers(route.password, self._auth_header)
            hello = encode_hello(build_hello(self._client_id, self._app_version, route.password))
            known = self._known[id(route)] = (route, headers, subprotocols, hello)
        return known[1], known[2], known[3]


class Failure(Record):
    """Why a connection attempt or connection ended, and whether to stop reconnecting (never
    changed once built)."""

    __slots__ = ("error", "terminal")

    error: DaemonClientError
    terminal: bool

    def __init__(self, error: DaemonClientError, terminal: bool = False) -> None:
        self.error = error
        self.terminal = terminal


def _auth_error(reason: str, password: str | None) -> AuthenticationError:
    if not password:
        hint = "The daemon requires a password: pass password=... or set PASEO_PASSWORD."
    elif not is_token_safe(password):
        hint = (
            "This password has characters that cannot travel in the WebSocket subprotocol, the only carrier "
            "older daemons (0.1.65) read; use letters, digits and !#$%&'*+-.^_`|~ only, or update the daemon."
        )
    else:
        hint = "Check the password (PASEO_PASSWORD) and call connect() again."
    return AuthenticationError(f"The daemon rejected the credentials: {reason}. {hint}", reason=reason)


def failure_for_rejection(rejection: HelloRejected, password: str | None) -> Failure:
    """``hello.rejected`` → the terminal failure it means."""
    if rejection.reason == "incompatible_protocol":
        return Failure(
            ProtocolVersionError(
                "The daemon does not accept protocol version 1 (hello.rejected: incompatible_protocol); "
                "update the daemon or this client."
            ),
            terminal=True,
        )
    readable = {"password_required": "password required", "incorrect_password": "incorrect password"}
    return Failure(_auth_error(readable.get(rejection.reason, rejection.reason), password), terminal=True)


def failure_for_close(
    code: int | None, reason: str, *, rejection: HelloRejected | None, password: str | None
) -> Failure:
    """A close from the daemon → the failure it means (protocol 1.8 and 10.4)."""
    if rejection is not None and code in (None, CLOSE_UNAUTHORIZED, CLOSE_INCOMPATIBLE):
        return failure_for_rejection(rejection, password)
    if code == CLOSE_UNAUTHORIZED:
        return Failure(_auth_error(reason or "unauthorized (4401)", password), terminal=True)
    if code == CLOSE_INCOMPATIBLE:
        return Failure(
            ProtocolVersionError(
                f"The daemon closed the connection: {reason or 'Incompatible protocol version'} (4003); "
                "update the daemon or this client."
            ),
            terminal=True,
        )
    if code == CLOSE_INVALID:
        return Failure(
            ProtocolError(
                f"The daemon rejected a frame from this client: {reason or 'invalid'} (4002). "
                "This is a daemon_client defect; please report it with a debug log."
            ),
            terminal=True,
        )
    if code is None:
        return Failure(ConnectionLost(reason or "Connection lost"))
    detail = f"{reason} ({code})" if reason else f"close code {code}"
    return Failure(ConnectionLost(f"The daemon closed the connection: {detail}"))
