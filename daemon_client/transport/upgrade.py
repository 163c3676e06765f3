"""Opening one WebSocket: name lookup, TCP connect, a proxy's tunnel, TLS, the HTTP upgrade,
all within one deadline.

The host name (the daemon's, or the proxy's when the connection goes through one, see
:mod:`daemon_client.transport.proxy`) is resolved by the ``resolve`` the transport passes,
which waits within the deadline and ends when the transport is aborted
(:mod:`daemon_client.transport.resolver`). Through a proxy, TLS to the daemon runs inside the
tunnel, checked against the daemon's host name. Runs on the thread that calls
:meth:`WebSocketTransport.connect` (the client's reader thread). Every rule (URL, redirects,
cookies, extensions, header limits) comes from :mod:`daemon_client.transport.handshake_policy`;
this module only does the I/O. Each socket is handed to ``adopt`` as soon as it exists (and
again once TLS wraps it), so that the transport's ``abort()`` from another thread can interrupt
a connect in progress.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from daemon_client._values import Record
from daemon_client.transport.handshake_policy import (
    HandshakeLimits,
    HeadReader,
    Target,
    build_request,
    check_answer,
    new_key,
)

if TYPE_CHECKING:
    from daemon_client.transport.proxy import Proxy
    from daemon_client.transport.resolver import AddrInfo

Resolve = Callable[[str, int, float], "list[AddrInfo]"]
"""``resolve(host, port, timeout)``: the addresses of ``host`` (see the module docstring)."""

_READ_SIZE = 4096
_SOCKET_OPTIONS = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1), (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)] + [
    (socket.IPPROTO_TCP, getattr(socket, name), value)
    for name, value in (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3))
    if hasattr(socket, name)
]
"""No Nagle delay; TCP keepalive probes after 30 s idle (the JSON heartbeat is the real liveness check)."""


class Upgraded(Record):
    """An open WebSocket: its socket, the chosen subprotocol, and bytes read past the answer
    (never changed once built)."""

    __slots__ = ("rest", "sock", "subprotocol")

    sock: socket.socket
    subprotocol: str | None
    rest: bytes

    def __init__(self, sock: socket.socket, subprotocol: str | None, rest: bytes) -> None:
        self.sock = sock
        self.subprotocol = subprotocol
        self.rest = rest


class _Deadline:
    def __init__(self, timeout: float) -> None:
        self._end = time.monotonic() + timeout
        self.timeout = timeout

    def remaining(self) -> float:
        left = self._end - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no WebSocket connection within {self.timeout:g} s")
        return left


def open_websocket(
    target: Target,
    *,
    unix_path: str | None = None,
    timeout: float,
    headers: Mapping[str, str],
    subprotocols: Sequence[str],
    ssl_context: ssl.SSLContext | None,
    adopt: Callable[[socket.socket], None],
    limits: HandshakeLimits | None = None,
    resolve: Resolve | None = None,
    proxy: Proxy | None = None,
) -> Upgraded:
    """Connect to ``target`` and complete the upgrade, or raise (``OSError``, ``TimeoutError``,
    ``ssl.SSLError``, :class:`~daemon_client.transport.handshake_policy.HandshakeRefused`).

    With ``unix_path`` the upgrade runs over that unix socket instead of TCP (``target`` then
    names the ``Host`` and path of the request). With ``proxy`` the TCP connection goes to the
    proxy, which is asked for a tunnel to ``target``. The caller closes the adopted socket on failure.
    """
    deadline = _Deadline(timeout)
    if resolve is None:
        resolve = _unabortable
    if unix_path is not None:
        from daemon_client.transport.unix import open_unix_socket  # only clients of a unix socket need it

        sock = open_unix_socket(unix_path, deadline.remaining())
        adopt(sock)
    elif proxy is not None:
        from daemon_client.transport.proxy import ProxyError, open_tunnel  # only proxied clients need it

        try:
            sock = _connect_tcp(proxy.host, proxy.port, deadline, adopt, resolve)
        except OSError as exc:
            if isinstance(exc, TimeoutError):
                raise
            detail = exc.strerror or str(exc) or type(exc).__name__
            raise ProxyError(f"cannot reach the proxy {proxy.display}: {detail}") from exc
        open_tunnel(sock, proxy, target, deadline.remaining, limits)
    else:
        sock = _connect_tcp(target.host, target.port, deadline, adopt, resolve)
    if target.secure and unix_path is None:
        context = ssl_context or ssl.create_default_context()
        sock = context.wrap_socket(sock, server_hostname=target.host, do_handshake_on_connect=False)
        adopt(sock)
        sock.settimeout(deadline.remaining())
        sock.do_handshake()
    key = new_key()
    sock.settimeout(deadline.remaining())
    sock.sendall(build_request(target, key, headers, subprotocols))
    reader = HeadReader(limits)
    while True:
        sock.settimeout(deadline.remaining())
        chunk = sock.recv(_READ_SIZE)
        if not chunk:
            raise ConnectionError("the server closed the connection during the WebSocket upgrade")
        answer = reader.feed(chunk)
        if answer is not None:
            break
    selected = check_answer(answer, key, subprotocols)
    return Upgraded(sock, selected, reader.rest)


def _unabortable(host: str, port: int, timeout: float) -> list[AddrInfo]:
    """Resolve with the process-wide resolver, within ``timeout`` only (nothing aborts it)."""
    from daemon_client.transport.resolver import SYSTEM_RESOLVER

    return SYSTEM_RESOLVER.resolve(host, port, timeout=timeout, wake=threading.Event())


def _connect_tcp(
    host: str, port: int, deadline: _Deadline, adopt: Callable[[socket.socket], None], resolve: Resolve
) -> socket.socket:
    """The first address of ``host`` that accepts a TCP connection (as ``socket.create_connection``)."""
    failure: OSError | None = None
    for family, kind, proto, _name, address in resolve(host, port, deadline.remaining()):
        sock = socket.socket(family, kind, proto)
        adopt(sock)
        for level, option, value in _SOCKET_OPTIONS:
            with contextlib.suppress(OSError):
                sock.setsockopt(level, option, value)
        try:
            sock.settimeout(deadline.remaining())
            sock.connect(address)
        except OSError as exc:
            with contextlib.suppress(OSError):
                sock.close()
            if isinstance(exc, TimeoutError):
                raise
            failure = exc
            continue
        return sock
    raise failure or OSError(f"no address found for {host}")
