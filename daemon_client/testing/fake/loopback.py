"""The loopback frontend of the fake daemon: a real WebSocket server on 127.0.0.1 or a unix socket.

Built on the threaded server of the ``websockets`` library (the optional ``test`` extra,
imported only here and only when a fake starts serving). Threads: one ``fake-daemon-serve``
thread runs ``serve_forever``; websockets starts one handler thread and one event-reader
thread per connection, which this module renames ``fake-daemon-ws-<n>`` /
``fake-daemon-ws-<n>-recv`` (they inherit the daemon flag from the serve thread). A
``fake-daemon-restart`` thread re-listens after a restart with downtime, and a short-lived
``fake-daemon-ws-<n>-close`` thread performs a close requested from another thread (websockets
blocks in ``close`` until the peer answers). Each handler thread
runs the shared engine (:func:`~daemon_client.testing.fake.engine.connection.run_connection`).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import socket
import ssl
import stat
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from daemon_client.testing.fake.engine.connection import FakeConnection, SocketClosed, run_connection
from daemon_client.testing.fake.engine.core import DaemonCore
from daemon_client.testing.fake.upgrade import upgrade_refusal

if TYPE_CHECKING:
    from websockets.http11 import Request, Response
    from websockets.sync.server import Server, ServerConnection
    from websockets.typing import Subprotocol

__all__ = ["LoopbackFrontend"]

_log = logging.getLogger("daemon_client.testing.fake.loopback")
_JOIN_TIMEOUT = 5.0
_BIND_RETRY_SECONDS = 2.0

Address = tuple[str, int] | str
"""``(host, port)`` of a TCP listener, or the path of a unix socket."""


_CREDENTIAL_MARKERS = (b'"auth"', b"password", b"paseo.bearer.", b"authorization")


def _redacted_frame(frame: Any) -> Any:
    """A websockets ``Frame`` for the frame log: as it is, unless its payload may carry credentials
    (the hello's ``auth``), which is then shown with the password replaced (or not at all)."""
    data = bytes(frame.data)
    if not any(marker in data.lower() for marker in _CREDENTIAL_MARKERS):
        return frame
    name = getattr(frame.opcode, "name", frame.opcode)
    try:
        decoded = json.loads(data)
    except ValueError:
        decoded = None
    auth = decoded.get("auth") if isinstance(decoded, dict) else None
    if isinstance(auth, dict) and set(auth) <= {"kind", "password"}:
        decoded["auth"] = {**auth, "password": "***"}
        shown = json.dumps(decoded, separators=(",", ":"))
        return f"{name} {shown[:300]} [{len(data)} bytes, password redacted]"
    return f"{name} [{len(data)} bytes, redacted: may carry credentials]"


class _NoCredentials(logging.Filter):
    """Keeps credentials out of websockets' logs: drops header lines that carry them
    (Authorization, bearer subprotocol) and redacts the hello's ``auth`` in the frame log."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and any(hasattr(a, "opcode") and hasattr(a, "data") for a in args):
            record.args = tuple(_redacted_frame(a) if hasattr(a, "opcode") and hasattr(a, "data") else a for a in args)
        text = record.getMessage().lower()
        return "authorization" not in text and "paseo.bearer." not in text


def _websockets_logger() -> logging.Logger:
    logger = logging.getLogger("daemon_client.testing.fake.loopback.websockets")
    if not any(isinstance(f, _NoCredentials) for f in logger.filters):
        logger.addFilter(_NoCredentials())
    return logger


class _WsSocket:
    """Adapts a websockets ``ServerConnection`` to the engine's ``ServerSocket``."""

    def __init__(self, ws: ServerConnection, frontend: LoopbackFrontend) -> None:
        self._ws = ws
        self._frontend = frontend
        self._handler_thread = threading.current_thread()

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
            self._frontend.spawn(f"{self._handler_thread.name}-close", self._ws.close, code, reason)

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self._ws.socket.shutdown(socket.SHUT_RDWR)  # FIN without a close frame


def _remove_stale_socket(path: str) -> None:
    """Unlink a unix socket file left at ``path`` (never a regular file)."""
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)


def _offered_subprotocols(request: Request) -> list[str]:
    return [
        name.strip()
        for value in request.headers.get_all("Sec-WebSocket-Protocol")
        for name in value.split(",")
        if name.strip()
    ]


class LoopbackFrontend:
    """Serves a :class:`DaemonCore` on a TCP port; see the module docstring."""

    def __init__(self, core: DaemonCore) -> None:
        self._core = core
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

    @property
    def url(self) -> str | None:
        address = self._address
        if isinstance(address, str):
            return f"unix://{address}"
        scheme = "wss" if self._ssl_context is not None else "ws"
        return None if address is None else f"{scheme}://{address[0]}:{address[1]}/ws"

    @property
    def port(self) -> int | None:
        return None if self._address is None or isinstance(self._address, str) else self._address[1]

    def start(
        self, host: str, port: int, ssl_context: ssl.SSLContext | None = None, unix_path: str | None = None
    ) -> str:
        """Listen on ``host:port`` (0 = any free port), or on the unix socket ``unix_path``, unless
        already started; return the URL (``unix:///path`` for a unix socket).

        With ``ssl_context`` (a server context) the server speaks TLS and the URL is ``wss://``.
        """
        if unix_path is not None and ssl_context is not None:
            raise ValueError("the fake daemon speaks TLS on TCP only")
        with self._lock:
            if self._address is None:
                self._ssl_context = ssl_context
                self._listen(os.path.abspath(unix_path) if unix_path is not None else (host, port))
            assert self.url is not None
            return self.url

    def wait_serving(self, timeout: float) -> bool:
        """Block until the server listens (e.g. after a restart's downtime)."""
        return self._serving.wait(timeout)

    def _listen(self, address: Address) -> None:
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
            process_request=self._process_request,
            select_subprotocol=self._select_subprotocol,
            compression=None,
            ping_interval=None,
            max_size=None,
            open_timeout=5.0,
            close_timeout=2.0,
            ssl=self._ssl_context,
            logger=_websockets_logger(),
        )
        original = server.handler

        def handler(sock: socket.socket, addr: Any) -> None:
            thread = threading.current_thread()
            thread.name = f"fake-daemon-ws-{next(self._numbers)}"
            with self._lock:
                self._threads = [t for t in self._threads if t.is_alive()]
                self._threads.append(thread)
            original(sock, addr)

        server.handler = handler
        bound = server.socket.getsockname()
        self._address = address if isinstance(address, str) else (str(bound[0]), int(bound[1]))
        self._server = server
        self._serve_thread = threading.Thread(target=server.serve_forever, name="fake-daemon-serve", daemon=True)
        self._serve_thread.start()
        self._serving.set()

    # -- websockets callbacks (handler threads) ------------------------------------------------

    def _process_request(self, ws: ServerConnection, request: Request) -> Response | None:
        ws.recv_events_thread.name = f"{threading.current_thread().name}-recv"
        with self._lock:
            self._sockets = [w for w in self._sockets if w.recv_events_thread.is_alive()]
            self._sockets.append(ws)
        if request.path.split("?", 1)[0] != "/ws":
            return ws.respond(404, "Not Found\n")
        config = self._core.config
        refusal = upgrade_refusal(
            request.headers.get("Host"),
            request.headers.get("Origin"),
            hostnames=config.hostnames,
            cors_origins=config.cors_origins,
        )
        if refusal is not None:
            _log.info("fake daemon: upgrade refused with 403: %s", refusal)
            return ws.respond(403, f"Forbidden: {refusal}\n")
        if self._core.refusing():
            return ws.respond(503, "Service Unavailable\n")
        return None

    def _select_subprotocol(self, ws: ServerConnection, offered: Sequence[Subprotocol]) -> Subprotocol | None:
        from websockets.typing import Subprotocol

        chosen = self._core.choose_subprotocol(list(offered))
        return None if chosen is None else Subprotocol(chosen)

    def _handle(self, ws: ServerConnection) -> None:
        from websockets.exceptions import ConnectionClosed

        request = ws.request
        assert request is not None
        headers: dict[str, str] = {}
        for name, value in request.headers.raw_items():
            headers.setdefault(name, value)
        connection = FakeConnection(
            self._core,
            _WsSocket(ws, self),
            headers=headers,
            subprotocols=_offered_subprotocols(request),
            selected_subprotocol=ws.subprotocol,
        )

        def recv(timeout: float) -> str | bytes:
            try:
                return ws.recv(timeout)
            except ConnectionClosed as exc:
                rcvd = exc.rcvd
                raise SocketClosed(rcvd.code, rcvd.reason) if rcvd is not None else SocketClosed() from None

        run_connection(connection, recv)

    def spawn(self, name: str, target: Callable[..., object], *args: object) -> None:
        """Run ``target`` on a tracked daemon thread (joined by :meth:`stop_listening`)."""
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()

    # -- stopping ------------------------------------------------------------------------------

    def stop_listening(self) -> None:
        """Close the listening socket and wait (bounded) for every thread of this server."""
        with self._lock:
            server, self._server = self._server, None
            serve_thread, self._serve_thread = self._serve_thread, None
        self._serving.clear()
        if server is None:
            return
        server.shutdown()  # refuses handshakes in progress with 503, closes open sockets (1001)
        if isinstance(self._address, str):
            _remove_stale_socket(self._address)
        deadline = time.monotonic() + _JOIN_TIMEOUT
        if serve_thread is not None:
            serve_thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            threads, self._threads = self._threads, []
            sockets, self._sockets = self._sockets, []
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        for ws in sockets:
            ws.recv_events_thread.join(max(0.0, deadline - time.monotonic()))

    def restart(self, downtime: float, move_to: Address | None = None) -> None:
        """Stop listening and listen again on the same address (or ``move_to``: a unix socket
        path, or ``(host, port)`` with 0 for any free port) after ``downtime`` seconds."""
        self._cancel_pending_restart()
        address = self._address
        self.stop_listening()
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
            target=self._relisten_later, args=(address, downtime, cancel), name="fake-daemon-restart", daemon=True
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

    def _relisten(self, address: Address, cancel: threading.Event) -> None:
        deadline = time.monotonic() + _BIND_RETRY_SECONDS
        while not cancel.is_set() and not self._core.stopping.is_set():
            try:
                with self._lock:
                    if self._server is None:
                        self._listen(address)
                return
            except OSError as exc:  # the port may linger briefly; retry within a bound
                if time.monotonic() >= deadline:
                    _log.error("fake daemon: cannot listen again on %s: %s", address, exc)
                    return
                cancel.wait(0.05)

    def close(self) -> None:
        """Stop for good: cancel a pending restart and stop listening. Idempotent."""
        self._cancel_pending_restart()
        self.stop_listening()
