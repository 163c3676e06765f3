"""A relay for the relay benchmark: the pairing of relay protocol v2 on plain sockets, then the
bytes of each paired connection copied as they come.

It answers the upgrades of ``/ws?serverId=S&role=server&v=2`` (the daemon's control socket),
``/ws?serverId=S&role=client&v=2`` (a client) and ``/ws?serverId=S&role=server&v=2&connectionId=C``
(the daemon's data socket for client ``C``), tells the control socket about each client (``sync``
when it attaches, ``connected`` for each new client, protocol-relay.md 4.1-4.3), and once the data
socket of a client arrived copies bytes both ways with ``recv``/``sendall`` of up to 256 KiB, never
looking into a frame. So the daemon behind it writes the frames the client reads (unmasked), and
the client's masked frames reach the daemon as the client wrote them.

Why not :class:`~daemon_client.testing.FakeRelay`: it is built on the threaded server of the
``websockets`` library, which hands every message between two threads of its own and sends it
with a write of its own; under a stream of small frames it ran at about 20,000 frames per second
with the relay process and the client each busy less than half the time, so the figure measured
the fake relay's hand-overs instead of the client. A relay that copies bytes is never the
bottleneck, as the other benchmarks' servers are not.

Threads: ``bench-relay-accept`` accepts; a ``bench-relay-conn`` thread reads each socket's upgrade;
two ``bench-relay-pump`` threads copy each pair's bytes. :meth:`ForwardingRelay.close` shuts every
socket and joins them (bounded). One server ID, any number of clients one after another.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

from bench.servers import accept_connections
from bench.wire import accept_upgrade, text_frame

_CHUNK = 256 * 1024
_JOIN_TIMEOUT = 2.0


def _copy(source: socket.socket, target: socket.socket) -> None:
    """Copy ``source``'s bytes to ``target`` until either ends; then end both."""
    with contextlib.suppress(OSError):
        while chunk := source.recv(_CHUNK):
            target.sendall(chunk)
    for sock in (source, target):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


class ForwardingRelay:
    """See the module docstring."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"127.0.0.1:{self._listener.getsockname()[1]}"
        """``host:port``, as a pairing offer names a relay."""
        self._lock = threading.Lock()
        self._control: socket.socket | None = None  # guarded by _lock, as are the two below
        self._waiting: dict[str, tuple[socket.socket, bytes]] = {}  # client sockets without a data socket
        self._clients = 0
        self._control_ready = threading.Event()
        self._control_sending = threading.Lock()  # one frame at a time on the control socket
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._start(self._accept, "bench-relay-accept")

    def _start(self, target: Callable[..., object], name: str, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def wait_for_daemon(self, timeout: float = 5.0) -> None:
        """Until the daemon's control socket attached; ``TimeoutError`` otherwise."""
        if not self._control_ready.wait(timeout):
            raise TimeoutError(f"no daemon attached to the relay within {timeout:g} s")

    def _accept(self) -> None:
        accept_connections(self._listener, self._accepted)

    def _accepted(self, sock: socket.socket) -> None:
        self._sockets.append(sock)
        self._start(self._attach, "bench-relay-conn", sock)

    def _attach(self, sock: socket.socket) -> None:
        buffer = bytearray()
        try:
            target = accept_upgrade(sock, buffer)
        except (ConnectionError, OSError):
            sock.close()
            return
        query = {key: values[-1] for key, values in parse_qs(urlsplit(target).query).items()}
        cid = query.get("connectionId")
        if query.get("role") == "client":
            with self._lock:
                self._clients += 1
                cid = f"conn-{self._clients}"
                self._waiting[cid] = (sock, bytes(buffer))
                control = self._control
            if control is not None:
                with self._control_sending, contextlib.suppress(OSError):
                    control.sendall(text_frame({"type": "connected", "connectionId": cid}))
        elif cid is None:  # the daemon's control socket
            with self._lock:
                self._control = sock
                pending = list(self._waiting)
            with self._control_sending, contextlib.suppress(OSError):
                sock.sendall(text_frame({"type": "sync", "connectionIds": pending}))
            self._control_ready.set()
        else:  # the daemon's data socket for client ``cid``
            with self._lock:
                client, early = self._waiting.pop(cid, (None, b""))
            if client is None:
                sock.close()
                return
            try:  # what each side sent right after its upgrade goes first
                sock.sendall(early)
                client.sendall(bytes(buffer))
            except OSError:
                return
            self._start(_copy, "bench-relay-pump", client, sock)
            self._start(_copy, "bench-relay-pump", sock, client)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self._listener.close()
        for sock in list(self._sockets):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
        for thread in self._threads:
            thread.join(_JOIN_TIMEOUT)
