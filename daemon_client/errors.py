"""The exception hierarchy of daemon_client.

Every exception the client raises on purpose derives from :class:`DaemonClientError`.
Each message says what happened and, where there is something to do, what to do.
Pure data: no thread runs code here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class DaemonClientError(Exception):
    """Base class of every error raised by daemon_client."""


class ConnectionUnavailable(DaemonClientError):
    """Base of the errors that mean "no usable connection": :class:`NotConnected`,
    :class:`ConnectionLost` and :class:`ClientClosed`. Catch it where any of them means
    "try again later, or give up", and never compare error texts."""


class ConnectionLost(ConnectionUnavailable):
    """The connection dropped while a request was in flight, or a connect attempt failed.

    Requests are never re-sent automatically; retry the call once the client is
    connected again (``client.state``/``client.on_state_change``).
    """

    code = "DAEMON_CONNECTION_LOST"


class NotConnected(ConnectionUnavailable):
    """A request was made while the client is idle or disconnected (not while connecting)."""


class ClientClosed(ConnectionUnavailable):
    """The client was closed: pending work failed, later calls are refused."""

    def __init__(self, message: str = "Daemon client closed") -> None:
        super().__init__(message)


class ConnectTimeout(DaemonClientError):
    """``connect()`` got no ``server_info`` from the daemon in time."""


class RequestTimeout(DaemonClientError):
    """No reply arrived within the request's timeout.

    Attributes name the request so that logs say which call timed out.
    """

    def __init__(
        self,
        message: str,
        *,
        request_type: str | None = None,
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> None:
        super().__init__(message)
        self.request_type = request_type
        self.request_id = request_id
        self.timeout = timeout


class ProvidersNotReady(RequestTimeout):
    """``providers.wait_for_ready`` timed out; the message names the providers still loading."""


class RpcError(DaemonClientError):
    """The daemon answered a request with an error (``rpc_error`` or an error field)."""

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        request_type: str | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.request_type = request_type
        self.request_id = request_id

    def __str__(self) -> str:
        parts = [self.message]
        if self.code:
            parts.append(f"code={self.code}")
        if self.request_type:
            parts.append(f"request={self.request_type}")
        return " ".join([parts[0]] + ([f"({', '.join(parts[1:])})"] if len(parts) > 1 else []))


class AgentCreateError(RpcError):
    """The daemon refused to create an agent (``agent_create_failed``)."""

    def __init__(
        self,
        message: str,
        *,
        error_code: str | None = None,
        request_type: str | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message, code=error_code, request_type=request_type, request_id=request_id)
        self.error_code = error_code


class AuthenticationError(DaemonClientError):
    """The daemon rejected the credentials (close 4401 or ``hello.rejected``).

    The client does not retry: fix the password and call ``connect()`` again.
    """

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason


class InsecureCredentials(AuthenticationError):
    """Credentials would travel unencrypted (``ws://`` to a host that is not this machine) and
    ``allow_insecure_credentials=False`` forbids it. Nothing was sent: use ``wss://``."""


class ProtocolError(DaemonClientError):
    """The daemon and the client disagree about the protocol.

    Raised for close 4002 (the daemon judged a client frame invalid), and for a reply
    that cannot be parsed or has the wrong type for its request.
    """


class ProtocolVersionError(ProtocolError):
    """The daemon does not accept this client's protocol version (close 4003)."""


class PairingError(DaemonClientError):
    """A relay connection cannot work with this pairing offer: it is malformed, names an
    unusable daemon key, or is stale (the daemon now has another key).

    The client does not retry. Pair again: run ``paseo daemon pair`` on the daemon's machine
    and use the new link.
    """


class ServerMismatch(ConnectionLost):
    """A host's connection reached a daemon with another ``serverId`` than the host's (a stale
    address, or a daemon pretending to be another): the connection is refused, never merged.
    ``expected`` and ``found`` are the two ``serverId`` values; ``connection`` the one refused."""

    def __init__(self, message: str, *, expected: str, found: str, connection: str) -> None:
        super().__init__(message)
        self.expected = expected
        self.found = found
        self.connection = connection


class MissingExtra(DaemonClientError, ImportError):
    """A feature needs an optional dependency that is not installed; the message names the
    extra to install (e.g. ``pip install 'daemon-client[relay]'``)."""


class UnsupportedByHost(DaemonClientError):
    """The call needs a daemon feature that this host lacks: update the host.

    ``feature`` names the ``server_info.features`` flag the call needs (``None`` when the
    need is not a flag) and ``version`` the first Paseo version known to have it.
    """

    def __init__(self, message: str, *, feature: str | None = None, version: str | None = None) -> None:
        super().__init__(message)
        self.feature = feature
        self.version = version


class UnknownConfigKeys(UnsupportedByHost):
    """A config patch names keys the daemon does not report in its configuration.

    Older daemons (0.1.65) keep such keys in memory and echo them back without saving them,
    so the write would look like success. ``keys`` lists them as dotted paths
    (``relay.enabled``); nothing was sent. Pass ``allow_unknown_keys=True`` to send anyway.
    """

    def __init__(self, message: str, keys: tuple[str, ...]) -> None:
        super().__init__(message)
        self.keys = keys


class SubscriptionReleased(DaemonClientError):
    """The subscription was released before it became ready."""


class TerminalExited(DaemonClientError):
    """A terminal's process ended (or the terminal was killed) before what was awaited arrived.

    ``output`` is the text received and not matched.
    """

    def __init__(self, message: str, *, output: str = "") -> None:
        super().__init__(message)
        self.output = output


class ExpectTimeout(DaemonClientError, TimeoutError):
    """``expect()`` saw no match in time; ``output`` is the text received and not matched."""

    def __init__(self, message: str, *, output: str = "") -> None:
        super().__init__(message)
        self.output = output


class WouldDeadlock(DaemonClientError):
    """A wait on the callback thread for something only that thread can deliver.

    The callback thread is the dispatcher thread, or with a ``callback_executor`` (a GUI
    executor, ``"manual"``) your own thread that runs the callbacks, outside callbacks too.
    Waiting there would hang forever; do the wait from another thread, or react in a
    callback instead of waiting.
    """


class CallbackError(DaemonClientError):
    """A user callback raised; re-raised in strict mode so that tests see it."""


DEFAULT_REPLY_ERROR_CODE = "request_failed"
"""The ``code`` of an :class:`RpcError` whose reply named no code of its own."""


def error_in_reply(
    payload: Mapping[str, Any],
    request_type: str,
    *,
    accepted_field: str | None = None,
    required_field: str | None = None,
    missing: str = "the daemon did not perform the request",
) -> RpcError | None:
    """The :class:`RpcError` a reply reports in its payload, or ``None`` if it reports none.

    A reply reports an error when it carries a truthy ``error``, when ``accepted_field`` is
    given and not ``True``, or when ``required_field`` is given and absent. The error always
    has ``request_type``, ``request_id`` (the reply's ``requestId``) and ``code`` (the reply's
    ``errorCode`` or ``code``, else :data:`DEFAULT_REPLY_ERROR_CODE`).
    """
    error = payload.get("error")
    failed = bool(error)
    if accepted_field is not None and payload.get(accepted_field) is not True:
        failed = True
    if required_field is not None and payload.get(required_field) is None:
        failed = True
    if not failed:
        return None
    code = payload.get("errorCode") or payload.get("code")
    if isinstance(error, Mapping):  # some replies nest {message, code}
        code = code or error.get("code")
        error = error.get("message") or error.get("error")
    request_id = payload.get("requestId")
    return RpcError(
        str(error) if error else missing,
        code=str(code) if isinstance(code, (str, int)) and code != "" else DEFAULT_REPLY_ERROR_CODE,
        request_type=request_type,
        request_id=str(request_id) if request_id is not None else None,
    )


def check_reply(
    payload: dict[str, Any],
    request_type: str,
    *,
    accepted_field: str | None = None,
    required_field: str | None = None,
    missing: str = "the daemon did not perform the request",
) -> dict[str, Any]:
    """Return ``payload``, or raise the :class:`RpcError` it reports (see :func:`error_in_reply`)."""
    error = error_in_reply(
        payload, request_type, accepted_field=accepted_field, required_field=required_field, missing=missing
    )
    if error is not None:
        raise error
    return payload
