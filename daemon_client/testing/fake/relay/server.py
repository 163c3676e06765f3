"""``FakeRelay``: a Paseo relay (protocol v2) on a loopback port, for tests of relay code.

It forwards frames between client sockets (``/ws?serverId=S&role=client&v=2``) and a daemon's
control and data sockets (``role=server``) by the rules of protocol-relay.md 4.1-4.3 (see
:mod:`~daemon_client.testing.fake.relay.links`), never looking into a data frame, and records
every frame it forwards (:attr:`FakeRelay.forwarded`) so that tests can check that no
plaintext crosses it. It answers ``GET /health``, refuses a bad query with HTTP 400 and any
other path with 404; it serves relay protocol v2 only (``v=1`` and a missing ``v`` get 400).

Listens through the shared :class:`~daemon_client.testing.ws_server.WsServer` (the ``test``
extra), named ``fake-relay``: a ``fake-relay-serve`` thread; each socket has a handler thread
``fake-relay-ws-<n>`` and an event reader ``fake-relay-ws-<n>-recv``; closes requested across
sockets run on short-lived ``fake-relay-close-<n>`` threads (websockets blocks in ``close``
until the peer answers), and a ``fake-relay-restart`` thread listens again after a restart
with downtime. :meth:`FakeRelay.close` joins them all (bounded). What is the relay's own lives
here: the query checks, pairing sockets into rooms and forwarding between them. Public methods
are called from the test thread.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from daemon_client.testing.fake.relay.links import DEFAULT_BUFFER_LIMIT, ForwardedFrame, RelayTables
from daemon_client.testing.ws_server import WsServer

if TYPE_CHECKING:
    from websockets.http11 import Request, Response
    from websockets.sync.server import ServerConnection

__all__ = ["FakeRelay", "ForwardedFrame"]

_log = logging.getLogger("daemon_client.testing.fake.relay")


def _query(path: str) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(urlsplit(path).query, keep_blank_values=True).items()}


def _refusal(path: str) -> tuple[int, str] | None:
    """The HTTP answer to a request the relay refuses, else ``None``."""
    if urlsplit(path).path != "/ws":
        return 404, "Not Found\n"
    query = _query(path)
    if not query.get("serverId"):
        return 400, "Missing serverId parameter\n"
    if query.get("role") not in ("server", "client"):
        return 400, "Invalid role parameter\n"
    if query.get("v") != "2":
        return 400, "This fake relay serves protocol v=2 only\n"
    return None


class FakeRelay:
    """A loopback Paseo relay; see the module docstring. Use as a context manager or :meth:`close`.

    ``buffer_limit``: client frames kept per connection until the daemon's data socket opens
    (oldest dropped). ``record``: keep every forwarded frame in :attr:`forwarded` (turn off
    for long benchmarks).
    """

    def __init__(self, *, buffer_limit: int = DEFAULT_BUFFER_LIMIT, record: bool = True) -> None:
        self._forwarded: list[ForwardedFrame] = []
        self._requests: list[tuple[str, dict[str, str]]] = []
        self._tables = RelayTables(buffer_limit, self._forwarded.append if record else None)
        self._lock = threading.Lock()
        self._attached = threading.Condition(self._lock)
        self._closed = False
        self._server = WsServer(
            "fake-relay",
            self._handle,
            logger=logging.getLogger("daemon_client.testing.fake.relay.websockets"),
            log=_log,
            label="fake relay",
            process_request=self._process_request,
            max_queue=None,  # let the event reader run ahead: far fewer thread switches per frame
        )

    # -- addresses -------------------------------------------------------------------------------

    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen (idempotent; 0 = any free port) and return the endpoint ``host:port``."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the fake relay is closed")
        self._server.start((host, port))
        return self.endpoint

    @property
    def endpoint(self) -> str:
        """``host:port``, as a pairing offer names a relay."""
        address = self._server.address
        if not isinstance(address, tuple):
            raise RuntimeError("the fake relay is not started; call start() first")
        return f"{address[0]}:{address[1]}"

    def wait_serving(self, timeout: float = 5.0) -> None:
        """Block until the relay listens again after :meth:`restart` with downtime."""
        if not self._server.wait_serving(timeout):
            raise TimeoutError(f"the fake relay was not listening again within {timeout:g} s")

    # -- observation -----------------------------------------------------------------------------

    @property
    def forwarded(self) -> list[ForwardedFrame]:
        """Every frame forwarded so far (both directions), in order."""
        return list(self._forwarded)

    def clear_forwarded(self) -> None:
        self._forwarded.clear()

    @property
    def requests(self) -> list[tuple[str, dict[str, str]]]:
        """``(path with query, headers)`` of every upgrade request, in arrival order."""
        with self._lock:
            return list(self._requests)

    def connection_ids(self, server_id: str) -> list[str]:
        """The connections with at least one client socket in the room of ``server_id``."""
        return self._tables.connection_ids(server_id)

    def wait_for_clients(self, server_id: str, count: int = 1, timeout: float = 5.0) -> list[str]:
        """Block until ``server_id`` has at least ``count`` client connections; return their IDs."""
        with self._attached:
            if not self._attached.wait_for(lambda: len(self._tables.connection_ids(server_id)) >= count, timeout):
                raise TimeoutError(f"fewer than {count} client connection(s) for {server_id!r} after {timeout:g} s")
        return self._tables.connection_ids(server_id)

    def wait_for_daemon(self, server_id: str, timeout: float = 5.0) -> None:
        """Block until a daemon's control socket for ``server_id`` is attached."""
        with self._attached:
            if not self._attached.wait_for(lambda: self._tables.has_control(server_id), timeout):
                raise TimeoutError(f"no daemon attached for {server_id!r} within {timeout:g} s")

    # -- faults ----------------------------------------------------------------------------------

    def drop_all(self) -> None:
        """Drop every socket (clients and daemons) without a close frame."""
        self._server.drop_all()

    def restart(self, downtime: float = 0.0) -> None:
        """Imitate a relay restart: drop every socket, forget every room, stop listening, and
        listen again on the same port after ``downtime`` seconds (see :meth:`wait_serving`).
        Returns at once."""
        self._server.restart(downtime, drop=True, on_stopped=self._tables.clear)

    # -- lifecycle -------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop for good and join every thread of the relay. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._server.close(drop=True)

    def __enter__(self) -> FakeRelay:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        where = self.endpoint if self._server.address is not None else "not started"
        return f"<FakeRelay {where}>"

    # -- the server ------------------------------------------------------------------------------

    def _process_request(self, ws: ServerConnection, request: Request) -> Response | None:
        with self._lock:
            self._requests.append((request.path, dict(request.headers.raw_items())))
        if urlsplit(request.path).path == "/health":
            return ws.respond(200, '{"status":"ok"}')
        refusal = _refusal(request.path)
        return None if refusal is None else ws.respond(*refusal)

    def _handle(self, ws: ServerConnection) -> None:
        request = ws.request
        assert request is not None
        query = _query(request.path)
        server_id = query["serverId"]
        if query["role"] == "client":
            self._serve_client(ws, server_id, query.get("connectionId") or None)
        elif query.get("connectionId"):
            self._serve_data(ws, server_id, query["connectionId"])
        else:
            self._serve_control(ws, server_id)

    def _serve_client(self, ws: ServerConnection, server_id: str, given: str | None) -> None:
        cid = self._tables.add_client(server_id, ws, given)
        with self._attached:
            self._attached.notify_all()
        try:
            self._pump(ws, lambda message: self._tables.from_client(server_id, cid, message))
        finally:
            data = self._tables.remove_client(server_id, cid, ws)
            if data is not None:
                self._close_later(data, 1001, "Client disconnected")

    def _serve_control(self, ws: ServerConnection, server_id: str) -> None:
        old = self._tables.attach_control(server_id, ws)
        with self._attached:
            self._attached.notify_all()
        if old is not None:
            self._close_later(old, 1008, "Replaced by new connection")

        def on_control(message: str | bytes) -> None:
            if isinstance(message, str) and '"ping"' in message:
                with contextlib.suppress(Exception):
                    ws.send(f'{{"type":"pong","ts":{int(time.time() * 1000)}}}')

        try:
            self._pump(ws, on_control)
        finally:
            self._tables.detach_control(server_id, ws)

    def _serve_data(self, ws: ServerConnection, server_id: str, cid: str) -> None:
        known, old = self._tables.attach_data(server_id, cid, ws)
        if not known:
            ws.close(1008, "Unknown connection")
            return
        if old is not None:
            self._close_later(old, 1008, "Replaced by new connection")
        try:
            self._pump(ws, lambda message: self._tables.from_daemon(server_id, cid, message))
        finally:
            for client in self._tables.detach_data(server_id, cid, ws):
                self._close_later(client, 1012, "Server disconnected")

    @staticmethod
    def _pump(ws: ServerConnection, forward: Callable[[str | bytes], None]) -> None:
        """Handler thread: hand every frame of ``ws`` to ``forward`` until the socket ends."""
        from websockets.exceptions import ConnectionClosed

        with contextlib.suppress(ConnectionClosed):
            while True:
                forward(ws.recv())

    def _close_later(self, ws: Any, code: int, reason: str) -> None:
        """Close ``ws`` on a tracked thread (websockets waits for the peer's answer)."""
        self._server.spawn(f"fake-relay-close-{self._server.next_number()}", ws.close, code, reason)
