"""One threaded WebSocket server for the test helpers: the fake daemon's loopback frontend, the
replay's loopback and the fake relay all listen through :class:`WsServer`.

Built on the threaded server of the ``websockets`` library (the ``test`` extra, imported only
when a server starts listening). :class:`WsServer` owns listening (TCP, TLS or a unix socket),
the threads and their names, stopping, and restarting with downtime; its owner gives the
connection handler and, if it checks upgrades, the request and subprotocol callbacks.

Threads, for a server named ``<name>``: one ``<name>-serve`` thread runs ``serve_forever``;
websockets starts one handler thread and one event-reader thread per connection, renamed
``<name>-ws-<n>`` / ``<name>-ws-<n>-recv`` (they inherit the daemon flag from the serve thread);
a ``<name>-restart`` thread listens again after a restart with downtime; :meth:`WsServer.spawn`
runs short-lived tracked threads (closes requested from another thread: websockets blocks in
``close`` until the peer answers). :meth:`WsServer.stop_listening` joins them all (bounded).
Public methods are called from the owner's threads; the callbacks run on handler threads.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import socket
import ssl
import stat
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from websockets.http11 import Request, Response
    from websockets.sync.server import Server, ServerConnection
    from websockets.typing import Subprotocol

__all__ = ["Address", "ConnectionEnd", "WsServer"]

_JOIN_TIMEOUT = 5.0
_BIND_RETRY_SECONDS = 2.0

Address = tuple[str, int] | str
"""``(host, port)`` of a TCP listener, or the path of a unix socket."""

ProcessRequest = Callable[["ServerConnection", "Request"], "Response | None"]
SelectSubprotocol = Callable[["ServerConnection", "Sequence[Subprotocol]"], "Subprotocol | None"]


def _remove_stale_socket(path: str) -> None:
    """Unlink a unix socket file left at ``path`` (never a regular file)."""
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)


class WsServer:
    """A threaded WebSocket server; see the module docstring.

    ``handle`` serves one connection on its handler thread. ``process_request`` may answer the
    upgrade request with an HTTP response (refusing it); ``select_subprotocol`` picks the
    subprotocol. ``logger`` receives websockets' logs. ``max_queue`` is websockets' incoming
    frame queue (``None``: unbounded). A restart stops trying to listen again once ``stopping``
    is set, or the server is closed; ``label`` names the server in the error it then logs on
    ``log``.
    """

    def __init__(
        self,
        name: str,
        handle: Callable[[ServerConnection], None],
        *,
        logger: logging.Logger,
        log: logging.Logger,
        label: str,
        process_request: ProcessRequest | None = None,
        select_subprotocol: SelectSubprotocol | None = None,
        max_queue: int | None = 16,
        stopping: threading.Event | None = None,
    ) -> None:
        self._name = name
        self._handle = handle
        self._logger = logger
        self._log = log
        self._label = label
        self._process_request = process_request
        self._select_subprotocol = select_subprotocol
        self._max_queue = max_queue
        self._stopping = stopping
        self._lock = threading.Lock()
        self._ssl_context: ssl.SSLContext | None = None
        self._server: Server | None = None
        self._serve_thread: threading.Thread | None = None
        self._pending: tuple[threading.Thread, threading.Event] | None = None
        self._threads: list[threading.Thread] = []
        self._sockets: list[ServerConnection] = []
        self._address: Address | None = None
        self._serving = threading.Event()
        self._numbers = itertools.count(1)
        self._closed = False

    # -- addresses -------------------------------------------------------------------------------

    @property
    def address(self) -> Address | None:
        """Where the server listens (the bound port for TCP), or last listened; ``None`` before."""
        return self._address

    @property
    def tls(self) -> bool:
        return self._ssl_context is not None

    def start(self, address: Address, ssl_context: ssl.SSLContext | None = None) -> None:
        """Listen on ``address`` (port 0: any free port; a relative unix path is made absolute)
        with TLS if ``ssl_context`` (a server context) is given, unless already started.
        ``RuntimeError`` once closed."""
        with self._lock:
            if self._closed:
                raise RuntimeError(f"the {self._label} is closed")
            if self._address is None:
                self._ssl_context = ssl_context
                self._listen(os.path.abspath(address) if isinstance(address, str) else address)

    def wait_serving(self, timeout: float) -> bool:
        """Block until the server listens (e.g. after a restart's downtime)."""
        return self._serving.wait(timeout)

    def _listen(self, address: Address) -> None:
        """Start the server on ``address``; the caller holds ``_lock``."""
        from websockets.sync.server import serve, unix_serve

        if isinstance(address, str):
            _remove_stale_socket(address)
            where: dict[str, Any] = {"path": address}
            listen: Callable[..., Server] = unix_serve
        else:
            where, listen = {"host": address[0], "port": address[1]}, serve
        server = listen(
            self._handle,
            **where,
            process_request=self._on_request,
            select_subprotocol=self._select_subprotocol,
            compression=None,
            ping_interval=None,
            max_size=None,
            max_queue=self._max_queue,
            open_timeout=5.0,
            close_timeout=2.0,
            ssl=self._ssl_context,
            logger=self._logger,
        )
        original = server.handler

        def handler(sock: socket.socket, addr: Any) -> None:
            thread = threading.current_thread()
            thread.name = f"{self._name}-ws-{next(self._numbers)}"
            self._track(thread)
            original(sock, addr)

        server.handler = handler
        bound = server.socket.getsockname()
        self._address = address if isinstance(address, str) else (str(bound[0]), int(bound[1]))
        self._server = server
        self._serve_thread = threading.Thread(target=server.serve_forever, name=f"{self._name}-serve", daemon=True)
        self._serve_thread.start()
        self._serving.set()

    def _on_request(self, ws: ServerConnection, request: Request) -> Response | None:
        """Handler thread: name the event reader, track the socket, then ask the owner."""
        ws.recv_events_thread.name = f"{threading.current_thread().name}-recv"
        with self._lock:
            self._sockets = [w for w in self._sockets if w.recv_events_thread.is_alive()]
            self._sockets.append(ws)
        return None if self._process_request is None else self._process_request(ws, request)

    # -- threads ---------------------------------------------------------------------------------

    def next_number(self) -> int:
        """The next number of the series that numbers the handler threads."""
        return next(self._numbers)

    def _track(self, thread: threading.Thread) -> None:
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)

    def spawn(self, name: str, target: Callable[..., object], *args: object) -> None:
        """Run ``target`` on a tracked daemon thread (joined by :meth:`stop_listening`)."""
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._track(thread)
        thread.start()

    # -- stopping --------------------------------------------------------------------------------

    def connections(self) -> list[ServerConnection]:
        """The sockets accepted so far whose event reader still runs (or has not been joined)."""
        with self._lock:
            return list(self._sockets)

    def drop_all(self) -> None:
        """Drop every socket without a close frame."""
        for ws in self.connections():
            with contextlib.suppress(OSError):
                ws.socket.shutdown(socket.SHUT_RDWR)

    def stop_listening(self) -> None:
        """Close the listening socket (websockets refuses handshakes in progress with 503 and
        closes open sockets with 1001) and wait (bounded) for every thread of this server."""
        with self._lock:
            server, self._server = self._server, None
            serve_thread, self._serve_thread = self._serve_thread, None
        self._serving.clear()
        if server is None:
            return
        server.shutdown()
        if isinstance(self._address, str):
            _remove_stale_socket(self._address)
        deadline = time.monotonic() + _JOIN_TIMEOUT
        if serve_thread is not None:
            serve_thread.join(max(0.0, deadline - time.monotonic()))
        while True:  # a handler may start a close thread while it ends: join until none is left
            with self._lock:
                threads, self._threads = self._threads, []
            if not threads or time.monotonic() >= deadline:
                break
            for thread in threads:
                thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for ws in sockets:
            ws.recv_events_thread.join(max(0.0, deadline - time.monotonic()))

    def restart(
        self,
        downtime: float,
        move_to: Address | None = None,
        *,
        drop: bool = False,
        on_stopped: Callable[[], None] | None = None,
    ) -> None:
        """Stop listening (first dropping every socket if ``drop``), call ``on_stopped``, and
        listen again on the same address (or ``move_to``: a unix socket path, or
        ``(host, port)`` with 0 for any free port) after ``downtime`` seconds. With downtime
        it returns at once (see :meth:`wait_serving`)."""
        self._cancel_pending_restart()
        address = self._address
        if drop:
            self.drop_all()
        self.stop_listening()
        if on_stopped is not None:
            on_stopped()
        if move_to is not None and address is not None:
            address = os.path.abspath(move_to) if isinstance(move_to, str) else move_to
            with self._lock:
                self._address = address
        if address is None:
            return
        cancel = threading.Event()
        if downtime <= 0:
            self._relisten(address, cancel)
            return
        thread = threading.Thread(
            target=self._relisten_later, args=(address, downtime, cancel), name=f"{self._name}-restart", daemon=True
        )
        with self._lock:
            self._pending = (thread, cancel)
        thread.start()

    def _cancel_pending_restart(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, None
        if pending is not None:
            pending[1].set()
            if pending[0] is not threading.current_thread():
                pending[0].join(_JOIN_TIMEOUT)

    def _relisten_later(self, address: Address, downtime: float, cancel: threading.Event) -> None:
        if not cancel.wait(downtime):
            self._relisten(address, cancel)

    def _given_up(self, cancel: threading.Event) -> bool:
        return cancel.is_set() or self._closed or (self._stopping is not None and self._stopping.is_set())

    def _relisten(self, address: Address, cancel: threading.Event) -> None:
        deadline = time.monotonic() + _BIND_RETRY_SECONDS
        while not self._given_up(cancel):
            try:
                with self._lock:
                    if self._server is None and not self._closed:
                        self._listen(address)
                return
            except OSError as exc:  # the port may linger briefly; retry within a bound
                if time.monotonic() >= deadline:
                    self._log.error("%s: cannot listen again on %s: %s", self._label, address, exc)
                    return
                cancel.wait(0.05)

    def close(self, *, drop: bool = False) -> None:
        """Stop for good: cancel a pending restart, drop every socket if ``drop``, and stop
        listening. Idempotent."""
        with self._lock:
            self._closed = True
        self._cancel_pending_restart()
        if drop:
            self.drop_all()
        self.stop_listening()


class ConnectionEnd:
    """The server's end of one websockets connection, as the fake's engine and the replay's
    player send on it and receive from it.

    ``closed`` makes the exception :meth:`recv` raises when the connection has ended, from the
    code and reason of the peer's close frame (``None``: no close frame).
    """

    def __init__(
        self, ws: ServerConnection, server: WsServer, closed: Callable[[int | None, str | None], Exception]
    ) -> None:
        self._ws = ws
        self._server = server
        self._closed = closed
        self._handler_thread = threading.current_thread()

    def recv(self, timeout: float) -> str | bytes:
        """The next frame (``bytes``: binary); ``TimeoutError`` when none came in time."""
        from websockets.exceptions import ConnectionClosed

        try:
            return self._ws.recv(timeout)
        except ConnectionClosed as exc:
            rcvd = exc.rcvd
            raise self._closed(rcvd.code, rcvd.reason) if rcvd is not None else self._closed(None, None) from None

    def send_text(self, text: str) -> None:
        self._ws.send(text)

    def send_raw_text(self, data: bytes) -> None:
        self._ws.send(data, text=True)  # payload bytes as given, possibly invalid UTF-8

    def send_binary(self, data: bytes) -> None:
        self._ws.send(data)

    def close(self, code: int = 1000, reason: str = "") -> None:
        # websockets' close() blocks until the peer completes the closing handshake (at most
        # close_timeout). The handler thread may block; any other thread (the test's) must not.
        if threading.current_thread() is self._handler_thread:
            self._ws.close(code, reason)
        else:
            self._server.spawn(f"{self._handler_thread.name}-close", self._ws.close, code, reason)

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self._ws.socket.shutdown(socket.SHUT_RDWR)  # FIN without a close frame
