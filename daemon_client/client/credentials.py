"""Where a client's credentials may go: decided once, when the client is built.

The URL is read by the transport's handshake policy (no user-info, no ``ssl_context`` with
``ws://``). Credentials (a password, or an ``auth_header`` for a proxy) sent over ``ws://`` to
a host that is not this machine travel unencrypted: by default the client logs one WARNING
naming ``wss://`` as the fix; ``allow_insecure_credentials=False`` refuses instead (the
connection fails with :class:`~daemon_client.errors.InsecureCredentials` before any socket is
opened), ``True`` allows it silently. Loopback hosts are never warned about.

Pure functions, called on the thread that constructs the client.
"""

from __future__ import annotations

import ssl

from daemon_client._values import Record
from daemon_client.transport.handshake_policy import credentials_in_clear, parse_target


class CredentialPlan(Record):
    """What :func:`plan_credentials` decided: a warning to log once, or a refusal."""

    __slots__ = ("refusal", "warning")

    warning: str | None
    refusal: str | None
    """The message of the ``InsecureCredentials`` every connection attempt fails with."""

    def __init__(self, warning: str | None = None, refusal: str | None = None) -> None:
        self.warning = warning
        self.refusal = refusal


def check_auth_header(auth_header: str | None) -> str | None:
    """``auth_header`` if it can travel as one header line; ``ValueError`` (without its value) if not."""
    if auth_header is None:
        return None
    if not isinstance(auth_header, str) or not auth_header.strip():
        raise ValueError("auth_header must be a non-empty string (a complete Authorization header value)")
    if any(ch in auth_header for ch in "\r\n\0"):
        raise ValueError("auth_header cannot contain line breaks or NUL characters")
    return auth_header


def plan_credentials(
    url: str,
    *,
    ssl_context: ssl.SSLContext | None,
    has_credentials: bool,
    allow_insecure_credentials: bool | None,
) -> CredentialPlan:
    """Check ``url`` (``ValueError`` says what is wrong) and decide about clear-text credentials."""
    target = parse_target(url, ssl_context=ssl_context)
    if not credentials_in_clear(target, has_credentials) or allow_insecure_credentials is True:
        return CredentialPlan()
    where = f"ws://{target.host_header}"
    if allow_insecure_credentials is False:
        return CredentialPlan(
            refusal=(
                f"Refused to send credentials unencrypted to {where}, which is not this machine "
                "(allow_insecure_credentials=False); nothing was sent. Use wss:// (the daemon behind a TLS proxy)."
            )
        )
    return CredentialPlan(
        warning=(
            f"credentials will travel unencrypted to {where}, which is not this machine: anyone on the network "
            "path can read them. Use wss:// (the daemon behind a TLS proxy); allow_insecure_credentials=False "
            "refuses instead, True silences this warning"
        )
    )
