"""The loopback frontend of ``ReplayDaemon``: a real WebSocket server on 127.0.0.1.

Built on the threaded server of the ``websockets`` library (the ``test`` extra, imported only
here, when a replay starts serving). Threads: one ``replay-daemon-serve`` thread runs
``serve_forever``; websockets starts one handler thread and one event-reader thread per
connection, renamed ``replay-daemon-ws-<n>`` / ``replay-daemon-ws-<n>-recv``. Each handler
thread plays one recorded connection (:func:`~daemon_client.testing.replay.player.run_player`).
``close()`` stops the server and joins every thread (bounded).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from daemon_client.testing.replay.player import ClientGone, ConnectionPlayer, run_player

if TYPE_CHECKING:
    from websockets.http11 import Request, Response
    from websockets.sync.server import Server, ServerConnection
    from websockets.typing import Subprotocol

__all__ = ["ReplayLoopback"]

_JOIN_TIMEOUT = 5.0


class _NoCredentials(logging.Filter):
    """Keeps the bearer subprotocol and ``Authorization`` headers out of websockets' logs."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage().lower()
        return "authorization" not in text and "paseo.bearer." not in text and '"auth"' not in text


def _websockets_logger() -> logging.Logger:
    logger = logging.getLogger("daemon_client.testing.replay.websockets")
    if not any(isinstance(f, _NoCredentials) for f in logger.filters):
        logger.addFilter(_NoCredentials())
    return logger


class _WsEnd:
    """A websockets connection as a player's ``ServerEnd``; used on its handler thread only."""

    def __init__(self, ws: ServerConnection) -> None:
        self._ws = ws

    def send_text(self, text: str) -> None:
        self._ws.send(text)

    def send_binary(self, data: bytes) -> None:
        self._ws.send(data)

    def close(self, code: int = 1000, reason: str = "") -> None:
        self._ws.close(code, reason)

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self._ws.socket.shutdown(socket.SHUT_RDWR)


class ReplayLoopback:
    """Serves a replay on a TCP port; see the module docstring.

    ``open_player`` gives the player of the next recorded connection (``None``: refuse it),
    ``choose_subprotocol`` the subprotocol to select for it; ``stopping`` ends every connection.
    """

    def __init__(
        self,
        open_player: Callable[[], ConnectionPlayer | None],
        choose_subprotocol: Callable[[ConnectionPlayer, Sequence[str]], str | None],
        stopping: threading.Event,
    ) -> None:
        self._open_player = open_player
        self._choose = choose_subprotocol
        self._stopping = stopping
        self._lock = threading.Lock()
        self._server: Server | None = None
        self._serve_thread: threading.Thread | None = None
        self._threads: list[threading.Thread] = []
        self._sockets: list[ServerConnection] = []
        self._players: dict[int, ConnectionPlayer] = {}
        self._address: tuple[str, int] | None = None
        self._numbers = itertools.count(1)

    @property
    def url(self) -> str | None:
        address = self._address
        return None if address is None else f"ws://{address[0]}:{address[1]}/ws"

    def start(self, host: str, port: int) -> str:
        """Listen on ``host:port`` unless already listening; return the URL."""
        from websockets.sync.server import serve

        with self._lock:
            if self._server is None:
                server = serve(
                    self._handle,
                    host=host,
                    port=port,
                    process_request=self._process_request,
                    select_subprotocol=self._select_subprotocol,
                    compression=None,
                    ping_interval=None,
                    max_size=None,
                    open_timeout=5.0,
                    close_timeout=2.0,
                    logger=_websockets_logger(),
                )
                original = server.handler

                def handler(sock: socket.socket, addr: Any) -> None:
                    thread = threading.current_thread()
                    thread.name = f"replay-daemon-ws-{next(self._numbers)}"
                    with self._lock:
                        self._threads = [t for t in self._threads if t.is_alive()]
                        self._threads.append(thread)
                    original(sock, addr)

                server.handler = handler
                bound = server.socket.getsockname()
                self._address = (str(bound[0]), int(bound[1]))
                self._server = server
                self._serve_thread = threading.Thread(
                    target=server.serve_forever, name="replay-daemon-serve", daemon=True
                )
                self._serve_thread.start()
        url = self.url
        assert url is not None
        return url

    # -- websockets callbacks (handler threads) ------------------------------------------------
    def _process_request(self, ws: ServerConnection, request: Request) -> Response | None:
        ws.recv_events_thread.name = f"{threading.current_thread().name}-recv"
        with self._lock:
            self._sockets = [w for w in self._sockets if w.recv_events_thread.is_alive()]
            self._sockets.append(ws)
        if request.path.split("?", 1)[0] != "/ws":
            return ws.respond(404, "Not Found\n")
        player = self._open_player()
        if player is None:
            return ws.respond(503, "Service Unavailable: the recording has no more connections\n")
        with self._lock:
            self._players[id(ws)] = player
        return None

    def _select_subprotocol(self, ws: ServerConnection, offered: Sequence[Subprotocol]) -> Subprotocol | None:
        from websockets.typing import Subprotocol

        with self._lock:
            player = self._players.get(id(ws))
        chosen = None if player is None else self._choose(player, list(offered))
        return None if chosen is None else Subprotocol(chosen)

    def _handle(self, ws: ServerConnection) -> None:
        from websockets.exceptions import ConnectionClosed

        with self._lock:
            player = self._players.pop(id(ws), None)
        if player is None:
            return

        def recv(timeout: float) -> str | bytes:
            try:
                return ws.recv(timeout)
            except ConnectionClosed:
                raise ClientGone from None

        run_player(player, _WsEnd(ws), recv, self._stopping)

    # -- stopping ------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop listening, close open sockets and wait (bounded) for every thread. Idempotent."""
        with self._lock:
            server, self._server = self._server, None
            serve_thread, self._serve_thread = self._serve_thread, None
        if server is None:
            return
        server.shutdown()
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
