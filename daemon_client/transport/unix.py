"""Unix-socket connections for :class:`~daemon_client.transport.websocket.WebSocketTransport`.

A daemon listening on a unix socket is reached by opening the socket here; the upgrade
(:mod:`daemon_client.transport.upgrade`) then runs over it. Everything after that (frames,
timeouts, ``abort``, ``close``) is the TCP code path. Runs on the thread
that calls ``connect`` (the client's reader thread).
"""

from __future__ import annotations

import contextlib
import socket


def open_unix_socket(path: str, timeout: float) -> socket.socket:
    """A stream socket connected to ``path`` within ``timeout`` s, left in ``timeout`` mode.

    Raises ``OSError`` (``FileNotFoundError``, ``ConnectionRefusedError``, ``TimeoutError``, or
    one saying that this platform has no unix sockets).
    """
    family = getattr(socket, "AF_UNIX", None)
    if family is None:
        raise OSError(f"unix sockets are not available on this platform ({path})")
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(path)
    except BaseException:
        with contextlib.suppress(OSError):
            sock.close()
        raise
    return sock
