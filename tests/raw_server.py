"""A scriptable raw server on 127.0.0.1 for handshake and RFC 6455 tests.

Each accepted connection is handed, after its request head was read, to the test's
``script(peer)``, which answers as it likes: a proper 101, a redirect, an endless header
line, frames no real server sends. Every request head is recorded.

Threads: one ``raw-server-<n>`` thread accepts connections and runs the script of each in
turn (tests open one connection at a time). :meth:`RawServer.close` shuts the open socket,
stops accepting and joins the thread (bounded). The accept loop polls its stop flag every
50 ms; nothing here is a timing assertion.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import itertools
import socket
import ssl
import struct
import threading
from collections.abc import Callable, Sequence

from daemon_client.transport.frames import FrameReader

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
TIMEOUT = 10.0
_numbers = itertools.count(1)


def ws_frame(payload: bytes, opcode: int, *, fin: bool = True, rsv: int = 0, mask: bytes | None = None) -> bytes:
    """One RFC 6455 frame as a server (or, with ``mask``, a client) writes it."""
    first = (0x80 if fin else 0) | (rsv << 4) | opcode
    mask_bit = 0x80 if mask else 0
    length = len(payload)
    if length < 126:
        header = struct.pack("!BB", first, mask_bit | length)
    elif length < 1 << 16:
        header = struct.pack("!BBH", first, mask_bit | 126, length)
    else:
        header = struct.pack("!BBQ", first, mask_bit | 127, length)
    if mask:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        header += mask
    return header + payload


class Peer:
    """One accepted connection, as the script sees it."""

    def __init__(self, sock: socket.socket, head: bytes, rest: bytes) -> None:
        self.sock = sock
        self.head = head
        self.rest = rest
        lines = head.decode("iso-8859-1").split("\r\n")
        self.request_line = lines[0]
        self.headers: list[tuple[str, str]] = []
        for line in lines[1:]:
            name, _, value = line.partition(":")
            self.headers.append((name.strip().lower(), value.strip()))

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers if key == name.lower()), None)

    def accept_value(self) -> bytes:
        key = (self.header("sec-websocket-key") or "").encode()
        return base64.b64encode(hashlib.sha1(key + GUID).digest())

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def upgrade(self, *extra: bytes, subprotocol: str | None = None, then: bytes = b"") -> None:
        """Answer 101 with the right accept value, ``extra`` header lines, and ``then`` (frames)
        in the same write."""
        lines = [b"HTTP/1.1 101 Switching Protocols", b"Upgrade: websocket", b"Connection: Upgrade"]
        lines.append(b"Sec-WebSocket-Accept: " + self.accept_value())
        if subprotocol is not None:
            lines.append(b"Sec-WebSocket-Protocol: " + subprotocol.encode())
        lines.extend(extra)
        self.send(b"\r\n".join(lines) + b"\r\n\r\n" + then)

    def drain(self) -> None:
        """Read (and drop) everything until the client closes the connection."""
        with contextlib.suppress(OSError):
            while self.sock.recv(65536):
                pass

    def reader(self) -> FrameReader:
        return FrameReader(self.sock, 1 << 20, initial=self.rest)


Script = Callable[[Peer], None]


class RawServer:
    """Listens on loopback; runs ``script`` for each connection; see the module docstring."""

    def __init__(self, script: Script, ssl_context: ssl.SSLContext | None = None) -> None:
        self._script = script
        self._ssl_context = ssl_context
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port = self._listener.getsockname()[1]
        self.url = f"{'wss' if ssl_context else 'ws'}://127.0.0.1:{self.port}/ws"
        self.peers: list[Peer] = []
        self.errors: list[BaseException] = []
        self.connected = threading.Event()
        self._stopping = threading.Event()
        self._current: socket.socket | None = None
        self._thread = threading.Thread(target=self._serve, name=f"raw-server-{next(_numbers)}", daemon=True)
        self._thread.start()

    @property
    def accepted(self) -> int:
        return len(self.peers)

    def _serve(self) -> None:
        while not self._stopping.is_set():
            try:
                sock, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._current = sock
            try:
                sock.settimeout(TIMEOUT)
                if self._ssl_context is not None:
                    sock = self._ssl_context.wrap_socket(sock, server_side=True)
                    self._current = sock
                head, rest = self._read_head(sock)
                peer = Peer(sock, head, rest)
                self.peers.append(peer)
                self.connected.set()
                self._script(peer)
            except (OSError, ConnectionError) as exc:
                if not self._stopping.is_set():
                    self.errors.append(exc)
            except BaseException as exc:  # reported to the test
                self.errors.append(exc)
            finally:
                self._current = None
                with contextlib.suppress(OSError):
                    sock.close()

    @staticmethod
    def _read_head(sock: socket.socket) -> tuple[bytes, bytes]:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                raise ConnectionError("closed during the request")
            data += chunk
            if len(data) > 1 << 16:
                raise ConnectionError("request head too long")
        head, _, rest = data.partition(b"\r\n\r\n")
        return head, rest

    def close(self) -> None:
        self._stopping.set()
        current = self._current
        if current is not None:
            with contextlib.suppress(OSError):
                current.shutdown(socket.SHUT_RDWR)
        self._thread.join(TIMEOUT)
        self._listener.close()
        assert not self._thread.is_alive(), "the raw server's thread did not end"


class RawServers:
    """Opens raw servers for one test and closes them all at its end (a fixture's body)."""

    def __init__(self) -> None:
        self._made: list[RawServer] = []

    def __call__(self, script: Script, ssl_context: ssl.SSLContext | None = None) -> RawServer:
        server = RawServer(script, ssl_context)
        self._made.append(server)
        return server

    def close(self) -> None:
        for server in self._made:
            server.close()


def read_close(reader: FrameReader) -> tuple[int | None, bytes]:
    """Read frames until a close frame; return its code (``None`` when empty) and raw payload."""
    while True:
        opcode, data = reader.next_message()
        if opcode == 0x8:
            return (struct.unpack("!H", data[:2])[0] if len(data) >= 2 else None), data


def offered_subprotocols(peer: Peer) -> Sequence[str]:
    value = peer.header("sec-websocket-protocol") or ""
    return [name.strip() for name in value.split(",") if name.strip()]
