"""The loopback frontend of the fake daemon: a real WebSocket server on 127.0.0.1 or a unix socket.

Listens through the shared :class:`~daemon_client.testing.ws_server.WsServer` (the optional
``test`` extra, imported only when a fake starts serving), named ``fake-daemon``: one
``fake-daemon-serve`` thread, a ``fake-daemon-ws-<n>`` handler thread and a
``fake-daemon-ws-<n>-recv`` event reader per connection, a ``fake-daemon-restart`` thread after
a restart with downtime, and short-lived ``fake-daemon-ws-<n>-close`` threads for closes
requested from another thread. What is the fake's own lives here: the upgrade checks (path,
``Host``/``Origin``, refusing while restarting), the subprotocol choice, keeping credentials
out of websockets' logs, and running the shared engine
(:func:`~daemon_client.testing.fake.engine.connection.run_connection`) on each handler thread.
"""

from __future__ import annotations

import json
import logging
import ssl
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from daemon_client.testing.fake.engine.connection import FakeConnection, SocketClosed, run_connection
from daemon_client.testing.fake.engine.core import DaemonCore
from daemon_client.testing.fake.upgrade import upgrade_refusal
from daemon_client.testing.ws_server import Address, ConnectionEnd, WsServer

if TYPE_CHECKING:
    from websockets.http11 import Request, Response
    from websockets.sync.server import ServerConnection
    from websockets.typing import Subprotocol

__all__ = ["LoopbackFrontend"]

_log = logging.getLogger("daemon_client.testing.fake.loopback")

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


def _offered_subprotocols(request: Request) -> list[str]:
    return [
        name.strip()
        for value in request.headers.get_all("Sec-WebSocket-Protocol")
        for name in value.split(",")
        if name.strip()
    ]


def _socket_closed(code: int | None, reason: str | None) -> SocketClosed:
    return SocketClosed(code, reason)


class LoopbackFrontend:
    """Serves a :class:`DaemonCore` on a TCP port or a unix socket; see the module docstring."""

    def __init__(self, core: DaemonCore) -> None:
        self._core = core
        self._server = WsServer(
            "fake-daemon",
            self._handle,
            logger=_websockets_logger(),
            log=_log,
            label="fake daemon",
            process_request=self._process_request,
            select_subprotocol=self._select_subprotocol,
            stopping=core.stopping,
        )

    @property
    def url(self) -> str | None:
        address = self._server.address
        if isinstance(address, str):
            return f"unix://{address}"
        scheme = "wss" if self._server.tls else "ws"
        return None if address is None else f"{scheme}://{address[0]}:{address[1]}/ws"

    @property
    def port(self) -> int | None:
        address = self._server.address
        return None if address is None or isinstance(address, str) else address[1]

    def start(
        self, host: str, port: int, ssl_context: ssl.SSLContext | None = None, unix_path: str | None = None
    ) -> str:
        """Listen on ``host:port`` (0 = any free port), or on the unix socket ``unix_path``, unless
        already started; return the URL (``unix:///path`` for a unix socket).

        With ``ssl_context`` (a server context) the server speaks TLS and the URL is ``wss://``.
        """
        if unix_path is not None and ssl_context is not None:
            raise ValueError("the fake daemon speaks TLS on TCP only")
        self._server.start(unix_path if unix_path is not None else (host, port), ssl_context)
        assert self.url is not None
        return self.url

    def wait_serving(self, timeout: float) -> bool:
        """Block until the server listens (e.g. after a restart's downtime)."""
        return self._server.wait_serving(timeout)

    # -- websockets callbacks (handler threads) ------------------------------------------------

    def _process_request(self, ws: ServerConnection, request: Request) -> Response | None:
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
        request = ws.request
        assert request is not None
        headers: dict[str, str] = {}
        for name, value in request.headers.raw_items():
            headers.setdefault(name, value)
        end = ConnectionEnd(ws, self._server, _socket_closed)
        connection = FakeConnection(
            self._core,
            end,
            headers=headers,
            subprotocols=_offered_subprotocols(request),
            selected_subprotocol=ws.subprotocol,
        )
        run_connection(connection, end.recv)

    # -- stopping ------------------------------------------------------------------------------

    def restart(self, downtime: float, move_to: Address | None = None) -> None:
        """Stop listening and listen again on the same address (or ``move_to``: a unix socket
        path, or ``(host, port)`` with 0 for any free port) after ``downtime`` seconds."""
        self._server.restart(downtime, move_to)

    def interrupt(self, downtime: float) -> None:
        """Drop this frontend's sockets and refuse new ones for ``downtime`` seconds, then listen
        again on the same address; the daemon's sessions and other frontends are untouched."""
        self._server.restart(downtime, drop=True)

    def close(self) -> None:
        """Stop for good: cancel a pending restart and stop listening. Idempotent."""
        self._server.close()
