"""The fake daemon's guards at the edge: upgrade checks (protocol.md 1.1) and where it may listen.

* :func:`upgrade_refusal`: the checks the real daemon makes before upgrading, answered with
  HTTP 403 by the loopback frontend. ``Host`` must be ``localhost``, ``*.localhost``, an IP
  literal or a configured name (so DNS rebinding cannot reach the fake); an ``Origin``, when
  present, must be a configured origin or name the same host and port as ``Host`` (so a web
  page cannot drive the fake from a browser). Clients that send no ``Origin`` (this package,
  the Paseo CLI) are accepted.
* :func:`check_listen`: serving on an address that is not loopback logs a WARNING (anyone who
  can reach the address can drive the fake), and serving a password there without TLS is
  refused unless explicitly allowed (it would cross the network in clear).

Pure functions, called on websockets' handler threads and on the thread calling ``serve()``.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Sequence
from urllib.parse import urlsplit

from daemon_client.transport.handshake_policy import is_loopback_host

_log = logging.getLogger("daemon_client.testing.fake.loopback")


def _split_host(host_header: str) -> str:
    """``Host`` header → host name or address, without port or brackets, lower case."""
    value = host_header.strip().lower()
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def host_allowed(host_header: str | None, hostnames: Sequence[str] = ()) -> bool:
    """``localhost``, ``*.localhost`` and IP literals always; other names only if configured."""
    if not host_header:
        return False
    host = _split_host(host_header)
    if host == "localhost" or host.endswith(".localhost") or _is_ip_literal(host):
        return True
    return host in {name.strip().lower() for name in hostnames}


def origin_allowed(origin: str | None, host_header: str | None, cors_origins: Sequence[str] = ()) -> bool:
    """No ``Origin``: allowed. Else a configured origin, or one naming the same host and port as ``Host``."""
    if origin is None:
        return True
    wanted = origin.strip().rstrip("/").lower()
    if wanted in {allowed.strip().rstrip("/").lower() for allowed in cors_origins}:
        return True
    try:
        netloc = urlsplit(wanted).netloc
    except ValueError:
        return False
    return bool(netloc) and host_header is not None and netloc == host_header.strip().lower()


def upgrade_refusal(
    host_header: str | None,
    origin: str | None,
    *,
    hostnames: Sequence[str] = (),
    cors_origins: Sequence[str] = (),
) -> str | None:
    """Why the real daemon would answer this upgrade with 403, or ``None`` to accept it."""
    if not host_allowed(host_header, hostnames):
        return "Host not allowed"
    if not origin_allowed(origin, host_header, cors_origins):
        return "Origin not allowed"
    return None


def check_listen(host: str, *, password: bool, tls: bool, allow_insecure_password: bool) -> None:
    """Warn about a non-loopback address; refuse a password there without TLS unless allowed."""
    if is_loopback_host(host):
        return
    if password and not tls and not allow_insecure_password:
        raise ValueError(
            f"refusing to serve a password without TLS on {host}, which is not a loopback address: it would "
            "cross the network in clear. Serve with an ssl_context, bind 127.0.0.1, or pass "
            "allow_insecure_password=True"
        )
    _log.warning(
        "fake daemon: serving on %s, which is not a loopback address: anyone who can reach it can drive this "
        "fake daemon%s",
        host,
        "" if tls else " (and read its traffic: no TLS)",
    )
