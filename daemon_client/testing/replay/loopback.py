"""The loopback frontend of ``ReplayDaemon``: a real WebSocket server on 127.0.0.1.

Listens through the shared :class:`~daemon_client.testing.ws_server.WsServer` (the ``test``
extra, imported only when a replay starts serving), named ``replay-daemon``: one
``replay-daemon-serve`` thread, and a ``replay-daemon-ws-<n>`` handler thread and a
``replay-daemon-ws-<n>-recv`` event reader per connection. What is the replay's own lives here:
each upgrade takes the player of the next recorded connection (or is refused with 503 when the
recording has none left), the subprotocol is the recorded one, and each handler thread plays
its connection (:func:`~daemon_client.testing.replay.player.run_player`). ``close()`` stops the
server and joins every thread (bounded).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from daemon_client.testing.replay.player import ClientGone, ConnectionPlayer, run_player
from daemon_client.testing.ws_server import ConnectionEnd, WsServer

if TYPE_CHECKING:
    from websockets.http11 import Request, Response
    from websockets.sync.server import ServerConnection
    from websockets.typing import Subprotocol

__all__ = ["ReplayLoopback"]

_log = logging.getLogger("daemon_client.testing.replay.loopback")


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


def _client_gone(_code: int | None, _reason: str | None) -> ClientGone:
    return ClientGone()


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
        self._players: dict[int, ConnectionPlayer] = {}
        self._server = WsServer(
            "replay-daemon",
            self._handle,
            logger=_websockets_logger(),
            log=_log,
            label="replay daemon",
            process_request=self._process_request,
            select_subprotocol=self._select_subprotocol,
            stopping=stopping,
        )

    @property
    def url(self) -> str | None:
        address = self._server.address
        return None if not isinstance(address, tuple) else f"ws://{address[0]}:{address[1]}/ws"

    def start(self, host: str, port: int) -> str:
        """Listen on ``host:port`` unless already listening; return the URL."""
        self._server.start((host, port))
        url = self.url
        assert url is not None
        return url

    # -- websockets callbacks (handler threads) ------------------------------------------------
    def _process_request(self, ws: ServerConnection, request: Request) -> Response | None:
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
        with self._lock:
            player = self._players.pop(id(ws), None)
        if player is None:
            return
        end = ConnectionEnd(ws, self._server, _client_gone)
        run_player(player, end, end.recv, self._stopping)

    # -- stopping ------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop listening, close open sockets and wait (bounded) for every thread. Idempotent."""
        self._server.close()
