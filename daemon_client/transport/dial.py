"""An abortable TCP connect (plus TLS) for the WebSocket transport.

:meth:`Dialer.dial` runs on the thread that calls ``Transport.connect`` (the client's
reader thread). :meth:`Dialer.abort` may be called from any thread: it ends a connect in
progress at once (a SYN nobody answers included), and the TLS handshake and the HTTP
upgrade that follow, so that ``close()`` never waits for a connect timeout. Only the DNS
look-up (``getaddrinfo``) cannot be interrupted.
"""

from __future__ import annotations

import contextlib
import errno
import os
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Sequence

_IN_PROGRESS = {errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN, getattr(errno, "WSAEWOULDBLOCK", -1)}


class Dialer:
    """Opens one TCP connection that another thread can abort. See the module docstring."""

    def __init__(self, socket_options: Sequence[tuple[int, int, int]] = ()) -> None:
        self._options = tuple(socket_options)
        self._lock = threading.Lock()
        self._aborted = False  # guarded by _lock
        self._sock: socket.socket | None = None  # the socket being connected; guarded by _lock
        self._wake: socket.socket | None = None  # written to by abort(); guarded by _lock

    def dial(self, host: str, port: int, timeout: float, *, tls: ssl.SSLContext | None = None) -> socket.socket:
        """A connected socket (TLS-wrapped with ``tls``) whose timeout is what is left of
        ``timeout``. Raises ``TimeoutError``, ``ConnectionAbortedError`` after :meth:`abort`,
        or the ``OSError`` of the last address tried."""
        deadline = time.monotonic() + timeout
        infos = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
        error: OSError = OSError(f"no address for {host}")
        for family, kind, proto, _, address in infos:
            try:
                sock = self._connect(family, kind, proto, address, deadline)
            except (TimeoutError, ConnectionAbortedError):
                raise
            except OSError as exc:
                error = exc
                continue
            try:
                sock.settimeout(max(0.001, deadline - time.monotonic()))
                if tls is not None:
                    # Wrapping takes the file descriptor over: abort() must shut the new
                    # socket down, so the handshake starts only once it can reach it.
                    sock = tls.wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)
                    with self._lock:
                        self._sock = sock
                        aborted = self._aborted
                    if aborted:
                        raise ConnectionAbortedError("connect aborted")
                    sock.do_handshake()
            except BaseException:
                sock.close()
                raise
            return sock
        raise error

    def _connect(
        self, family: int, kind: int, proto: int, address: tuple[object, ...] | str, deadline: float
    ) -> socket.socket:
        sock = socket.socket(family, kind, proto)
        wake_read, wake_write = socket.socketpair()
        with self._lock:
            aborted = self._aborted
            if not aborted:
                self._sock, self._wake = sock, wake_write
        try:
            if aborted:
                raise ConnectionAbortedError("connect aborted")
            for option in self._options:
                with contextlib.suppress(OSError):
                    sock.setsockopt(*option)
            sock.setblocking(False)
            code = sock.connect_ex(address)
            if code in _IN_PROGRESS:
                with selectors.DefaultSelector() as selector:
                    selector.register(sock, selectors.EVENT_WRITE)
                    selector.register(wake_read, selectors.EVENT_READ)
                    while True:
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            raise TimeoutError("TCP connect timed out")
                        events = selector.select(remaining)
                        with self._lock:
                            if self._aborted:
                                raise ConnectionAbortedError("connect aborted")
                        if any(key.fileobj is sock for key, _ in events):
                            break
                code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                raise OSError(code, os.strerror(code))
            return sock
        except BaseException:
            sock.close()
            raise
        finally:
            with self._lock:
                self._wake = None
            wake_read.close()
            wake_write.close()

    def abort(self) -> None:
        """Any thread: end the connect in progress (and refuse any later one)."""
        with self._lock:
            self._aborted = True
            sock, wake = self._sock, self._wake
            if wake is not None:
                with contextlib.suppress(OSError):
                    wake.send(b"x")
        if sock is not None:
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the descriptor, also of a TLS socket
