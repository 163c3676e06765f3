"""Loopback servers for the benchmarks: they answer the handshake and then write pre-encoded
frames with plain sockets, so that they are never the bottleneck. Each connection is served
on its own daemon thread; ``close()`` stops the listener and joins what it started.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from bench.wire import SERVER_INFO, accept_upgrade, encode_frame, read_frame, text_frame

AGENT_ID = "5e0b9a4c-1f2d-4c3b-9a8e-7d6c5b4a3f21"
EPOCH = "09d20d03-8401-4b34-a3b1-e9c9d79f9e06"
TEXT = "The scroll anchoring code keeps the viewport stable while new rows stream in; it measures "


def stream_frame(seq: int, subscription_id: str | None, agent_id: str = AGENT_ID) -> bytes:
    """A realistic ~400-byte ``agent_stream`` timeline frame (a chunk of assistant text)."""
    payload: dict[str, Any] = {"agentId": agent_id}
    if subscription_id is not None:
        payload["subscriptionId"] = subscription_id
    payload.update(
        event={"type": "timeline", "provider": "claude",
               "item": {"type": "assistant_message", "text": TEXT + str(seq)}},
        timestamp="2026-05-03T10:15:00.123Z", seq=seq, epoch=EPOCH,
    )  # fmt: skip
    return text_frame({"type": "session", "message": {"type": "agent_stream", "payload": payload}})


def accept_connections(
    listener: socket.socket, start: Callable[[socket.socket], None], stopped: threading.Event | None = None
) -> None:
    """Accept until the listener is closed (or ``stopped`` is set); each socket, with
    ``TCP_NODELAY``, goes to ``start``."""
    while stopped is None or not stopped.is_set():
        try:
            sock, _ = listener.accept()
        except OSError:
            return
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        start(sock)


Handler = Callable[[socket.socket, bytearray, dict[str, Any]], bool]
"""Called for each JSON frame a client sends after the handshake; False ends the connection."""


class LoopbackServer:
    """A tiny WebSocket server on 127.0.0.1 whose behaviour is a ``Handler``."""

    def __init__(self, handler: Handler, server_info: bytes = SERVER_INFO) -> None:
        """``server_info``: the frame answering ``hello`` (an owned-subscription host by default)."""
        self._handler = handler
        self._server_info = server_info
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"ws://127.0.0.1:{self.port}/ws"
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._stopped = threading.Event()
        self._accepting = threading.Thread(target=self._accept, name="bench-server", daemon=True)
        self._accepting.start()

    def restart(self, downtime: float) -> float:
        """Drop every connection, stop listening for ``downtime`` s, listen again on the same
        port; returns the ``perf_counter`` time at which it accepts again."""
        self._stop_listening()
        for sock in list(self._sockets):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        time.sleep(downtime)
        self._listener = socket.create_server(("127.0.0.1", self.port))
        accepting_at = time.perf_counter()
        self._accepting = threading.Thread(target=self._accept, name="bench-server", daemon=True)
        self._accepting.start()
        return accepting_at

    def _accept(self) -> None:
        accept_connections(self._listener, self._start_serving, self._stopped)

    def _start_serving(self, sock: socket.socket) -> None:
        self._sockets.append(sock)
        thread = threading.Thread(target=self._serve, args=(sock,), name="bench-conn", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _serve(self, sock: socket.socket) -> None:
        buffer = bytearray()
        try:
            accept_upgrade(sock, buffer)
            while True:
                opcode, data = read_frame(sock, buffer)
                if opcode == 0x8:
                    return
                if opcode != 0x1:
                    continue
                frame = json.loads(data)
                if frame.get("type") == "hello":
                    sock.sendall(self._server_info)
                elif frame.get("type") == "ping":
                    sock.sendall(encode_frame(b'{"type":"pong"}'))
                elif not self._handler(sock, buffer, frame):
                    return
        except (ConnectionError, OSError):
            return
        finally:
            sock.close()

    def _stop_listening(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self._listener.close()
        self._accepting.join(2)

    def close(self) -> None:
        self._stopped.set()
        self._stop_listening()
        for sock in list(self._sockets):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(2)


def reply(request: dict[str, Any], payload: dict[str, Any], reply_type: str) -> bytes:
    body = {"requestId": request["requestId"], **payload}
    return text_frame({"type": "session", "message": {"type": reply_type, "payload": body}})
