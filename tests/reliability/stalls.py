"""Daemons that stop reading, for the write-path tests.

* :class:`StallGate` + :func:`stalling_factory`: in memory, a transport whose writes block
  (as a full TCP window does) once its connection is stalled, until the transport is aborted.
* :class:`DeafDaemon`: on loopback, a hand-written WebSocket daemon that completes the
  handshake, then never reads again (its receive buffer is small, so the client's writes
  stall soon); the test can still make it write (pushes, WebSocket pings).
* :func:`bounded`: run a call on a helper thread and fail if it has not returned in time
  (the call is the thing under test; the bound only keeps a regression from hanging).

Threads: the deaf daemon has one thread (``deaf-daemon``) that accepts one connection, does
the upgrade and answers ``hello``; :meth:`DeafDaemon.close` ends it. Nothing here sleeps.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import re
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from daemon_client.testing import FakeDaemon
from daemon_client.transport.base import ConnectParams, Transport, TransportClosed, TransportError
from daemon_client.transport.frames import OP_CLOSE, OP_PING, OP_PONG, OP_TEXT, FrameReader

T = TypeVar("T")
GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
BOUND = 10.0
"""Seconds a call under test may take before it counts as blocked (it should take far less)."""


def bounded(fn: Callable[[], T], timeout: float = BOUND, what: str = "the call") -> T:
    """``fn()`` on a helper thread; its result or exception. Fails if it is still blocked."""
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, fn()))
        except BaseException as exc:  # handed to the test
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name="bounded-call", daemon=True)
    thread.start()
    thread.join(timeout)
    if not outcome:
        raise AssertionError(f"{what} was still blocked after {timeout:g} s")
    ok, value = outcome[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------- in memory
class StallGate:
    """Which connections stall: ``stall(n)`` makes every write of connection ``n`` (1-based,
    in creation order) block until that transport is aborted; ``stalled`` is set as soon as
    one write is blocked."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._stalling: set[int] = set()
        self.stalled = threading.Event()

    def next_number(self) -> int:
        with self._lock:
            self._count += 1
            return self._count

    def stall(self, *numbers: int) -> None:
        with self._lock:
            self._stalling.update(numbers)

    def stalls(self, number: int) -> bool:
        with self._lock:
            return number in self._stalling


class StallingTransport:
    """A fake's memory transport whose writes block while its connection is stalled."""

    def __init__(self, inner: Transport, gate: StallGate) -> None:
        self._inner = inner
        self._gate = gate
        self.number = gate.next_number()
        self._aborted = threading.Event()
        self.writes_blocked = 0

    @property
    def selected_subprotocol(self) -> str | None:
        return self._inner.selected_subprotocol

    def connect(self, params: ConnectParams) -> None:
        self._inner.connect(params)

    def _block(self) -> None:
        self.writes_blocked += 1
        self._gate.stalled.set()
        if not self._aborted.wait(60):
            raise AssertionError("a stalled write was never aborted")
        raise TransportClosed(None, "aborted while writing")

    def send_text(self, text: str) -> None:
        if self._gate.stalls(self.number):
            self._block()
        self._inner.send_text(text)

    def recv(self) -> str:
        return self._inner.recv()

    def close(self, code: int = 1000, reason: str = "") -> None:
        if self._gate.stalls(self.number):
            self._block()  # the close frame waits behind the full window too
        self._inner.close(code, reason)

    def abort(self) -> None:
        self._aborted.set()
        self._inner.abort()


def stalling_factory(fake: FakeDaemon, gate: StallGate) -> Callable[[], Transport]:
    return lambda: StallingTransport(fake.transport_factory(), gate)


# ----------------------------------------------------------------------------- on loopback
def _header(opcode: int, length: int) -> bytes:
    if length < 126:
        return struct.pack("!BB", 0x80 | opcode, length)
    if length < 1 << 16:
        return struct.pack("!BBH", 0x80 | opcode, 126, length)
    return struct.pack("!BBQ", 0x80 | opcode, 127, length)


SERVER_INFO = {
    "type": "session",
    "message": {
        "type": "status",
        "payload": {"status": "server_info", "serverId": "srv-deaf", "version": "0.9.3", "features": {}},
    },
}


class DeafDaemon:
    """A loopback WebSocket daemon that answers ``hello`` and then never reads again.

    The test may still write to the client: :meth:`push`, :meth:`send_ping`. With
    ``deaf=False`` it keeps reading instead and records the pongs the client sends.
    """

    def __init__(self, *, receive_buffer: int = 4096, deaf: bool = True) -> None:
        self._deaf = deaf
        self.pongs: list[bytes] = []
        self.ponged = threading.Event()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)  # inherited
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(1)
        self.url = f"ws://127.0.0.1:{self._listener.getsockname()[1]}/ws"
        self._sock: socket.socket | None = None
        self._send_lock = threading.Lock()
        self.handshaken = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="deaf-daemon", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError, TransportError):
            sock, _ = self._listener.accept()
            self._sock = sock
            request = b""
            while b"\r\n\r\n" not in request:
                chunk = sock.recv(4096)
                if not chunk:
                    return
                request += chunk
            head, _, rest = request.partition(b"\r\n\r\n")
            key = re.search(rb"(?im)^sec-websocket-key:\s*(\S+)", head)
            assert key is not None
            accept = base64.b64encode(hashlib.sha1(key.group(1) + GUID).digest())
            sock.sendall(
                b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n"
            )
            reader = FrameReader(_Prefixed(sock, rest), None)  # type: ignore[arg-type]
            opcode, data = reader.next_message()
            assert opcode == OP_TEXT, data
            assert json.loads(data)["type"] == "hello", data
            self.send_json(SERVER_INFO)
            self.handshaken.set()
            if self._deaf:
                self._stop.wait()  # from here on nothing is read
                return
            while not self._stop.is_set():
                opcode, data = reader.next_message()
                if opcode == OP_PONG:
                    self.pongs.append(data)
                    self.ponged.set()
                elif opcode == OP_CLOSE:
                    return

    def _connection(self) -> socket.socket:
        if not self.handshaken.wait(BOUND):
            raise AssertionError("the client never completed the handshake")
        assert self._sock is not None
        return self._sock

    def send_json(self, frame: dict[str, Any]) -> None:
        data = json.dumps(frame).encode()
        sock = self._sock
        assert sock is not None
        with self._send_lock:
            sock.sendall(_header(OP_TEXT, len(data)) + data)

    def send_ping(self, payload: bytes) -> None:
        with self._send_lock:
            self._connection().sendall(_header(OP_PING, len(payload)) + payload)

    def push(self, message_type: str, payload: dict[str, Any]) -> None:
        self._connection()
        self.send_json({"type": "session", "message": {"type": message_type, "payload": payload}})

    def close(self) -> None:
        self._stop.set()
        sock = self._sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._thread.join(BOUND)
        if sock is not None:
            sock.close()


class _Prefixed:
    """A socket whose first reads return bytes already received with the upgrade request."""

    def __init__(self, sock: socket.socket, prefix: bytes) -> None:
        self._sock = sock
        self._prefix = prefix

    def recv(self, size: int) -> bytes:
        if self._prefix:
            data, self._prefix = self._prefix[:size], self._prefix[size:]
            return data
        return self._sock.recv(size)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


__all__ = ["BOUND", "DeafDaemon", "StallGate", "StallingTransport", "bounded", "stalling_factory"]
