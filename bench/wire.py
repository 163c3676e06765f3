"""A minimal WebSocket server side for benchmarks: upgrade, frame encoding, masked-frame reading.

Servers built on it write pre-encoded frames with plain sockets so that the client side is
what a benchmark measures. Runs on the benchmark's server threads.
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import struct
from typing import Any

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def encode_frame(payload: bytes, opcode: int = 0x1) -> bytes:
    """An unmasked server frame (FIN set)."""
    length = len(payload)
    if length < 126:
        header = struct.pack("!BB", 0x80 | opcode, length)
    elif length < 1 << 16:
        header = struct.pack("!BBH", 0x80 | opcode, 126, length)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 127, length)
    return header + payload


def text_frame(obj: Any) -> bytes:
    return encode_frame(json.dumps(obj, separators=(",", ":")).encode("utf-8"))


def _recv_exact(sock: socket.socket, count: int, buffer: bytearray) -> bytes:
    while len(buffer) < count:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("peer closed")
        buffer += chunk
    data = bytes(buffer[:count])
    del buffer[:count]
    return data


def read_frame(sock: socket.socket, buffer: bytearray) -> tuple[int, bytes]:
    """One (masked) client frame: (opcode, payload)."""
    first, second = _recv_exact(sock, 2, buffer)
    length = second & 0x7F
    if length == 126:
        (length,) = struct.unpack("!H", _recv_exact(sock, 2, buffer))
    elif length == 127:
        (length,) = struct.unpack("!Q", _recv_exact(sock, 8, buffer))
    mask = _recv_exact(sock, 4, buffer) if second & 0x80 else b""
    data = _recv_exact(sock, length, buffer)
    if mask:
        data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
    return first & 0x0F, data


def accept_upgrade(sock: socket.socket, buffer: bytearray) -> str:
    """Answer the HTTP upgrade request with 101; returns the request's target (path and query)."""
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("peer closed during the upgrade")
        buffer += chunk
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    buffer[:] = rest
    key = b""
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"sec-websocket-key":
            key = value.strip()
    accept = base64.b64encode(hashlib.sha1(key + _GUID).digest())
    sock.sendall(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n"
    )
    request_line = head.split(b"\r\n", 1)[0].split(b" ")
    return request_line[1].decode("latin-1") if len(request_line) > 1 else ""


SERVER_INFO = text_frame(
    {"type": "session", "message": {"type": "status", "payload": {"status": "server_info", "serverId": "bench",
     "version": "0.9.3", "features": {"ownedSubscriptions": True, "selectiveAgentTimeline": True}}}}
)  # fmt: skip
BROADCAST_SERVER_INFO = text_frame(
    {"type": "session", "message": {"type": "status", "payload": {"status": "server_info", "serverId": "bench",
     "version": "0.1.65", "features": {}}}}
)  # fmt: skip
"""A host without subscription features (0.1.65): every frame goes to every client, untagged."""
