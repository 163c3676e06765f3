"""The exception hierarchy of daemon_client.

Every exception the client raises on purpose derives from :class:`DaemonClientError`.
Each message says what happened and, where there is something to do, what to do.
Pure data: no thread runs code here.
"""

from __future__ import annotations


class DaemonClientError(Exception):
    """Base class of every error raised by daemon_client."""


class ConnectionLost(DaemonClientError):
    """The connection dropped while a request was in flight, or a connect attempt failed.

    Requests are never re-sent automatically; retry the call once the client is
    connected again (``client.state``/``client.on_state_change``).
    """

    code = "DAEMON_CONNECTION_LOST"


class NotConnected(DaemonClientError):
    """A request was made while the client is idle or disconnected (not while connecting)."""


class ClientClosed(DaemonClientError):
    """The client was closed: pending work failed, later calls are refused."""


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


class UnsupportedByHost(DaemonClientError):
    """The call needs a daemon feature that this host lacks: update the host."""


class SubscriptionReleased(DaemonClientError):
    """The subscription was released before it became ready."""


class WouldDeadlock(DaemonClientError):
    """A wait on the callback thread for something only that thread can deliver.

    Waiting there would hang forever; do the wait from another thread, or react in a
    callback instead of waiting.
    """


class CallbackError(DaemonClientError):
    """A user callback raised; re-raised in strict mode so that tests see it."""
