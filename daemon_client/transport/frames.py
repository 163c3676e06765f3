"""Reading WebSocket frames (RFC 6455) from a socket through one large buffer.

websocket-client reads each frame with several small socket reads, and each read lets
other threads take the GIL; reading 256 KiB at a time and cutting frames out of the
buffer is several times cheaper and lets the callback thread work in batches. Runs on
the reader thread only.

Frames over the size limit are skipped as they arrive, without being kept in memory.
Fragmented messages are reassembled; control frames (close, ping, pong) are returned as
they come, even between fragments.
"""

from __future__ import annotations

import socket
import struct

from daemon_client.transport.base import FrameRejected, TransportClosed, TransportError

OP_CONTINUATION = 0x0
OP_TEXT = 0x1
OP_BINARY = 0x2
OP_CLOSE = 0x8
OP_PING = 0x9
OP_PONG = 0xA
READ_SIZE = 256 * 1024
MAX_DECLARED = 1 << 40  # a declared length beyond this (1 TiB) is a corrupt stream, not a frame
_U16 = struct.Struct("!H")
_U64 = struct.Struct("!Q")


def _unmask(data: bytes, mask: bytes) -> bytes:
    """XOR ``data`` with the 4-byte ``mask`` (servers do not mask; tolerated anyway)."""
    repeated = (mask * (len(data) // 4 + 1))[: len(data)]
    return (int.from_bytes(data, "big") ^ int.from_bytes(repeated, "big")).to_bytes(len(data), "big")


class FrameReader:
    """Cuts whole messages out of a socket's byte stream."""

    def __init__(self, sock: socket.socket, max_message_bytes: int | None) -> None:
        self._sock = sock
        self._limit = max_message_bytes
        self._buffer = bytearray()
        self._pos = 0
        self._fragments: list[bytes] = []
        self._fragment_opcode = 0
        self._fragment_size = 0
        self._skipping = False  # the fragmented message being received is over the limit

    def buffered(self) -> int:
        """Bytes received and not consumed yet."""
        return len(self._buffer) - self._pos

    def _fill(self, need: int) -> None:
        """Read until at least ``need`` unconsumed bytes are buffered."""
        if self._pos and self._pos >= len(self._buffer) // 2:
            del self._buffer[: self._pos]
            self._pos = 0
        while len(self._buffer) - self._pos < need:
            try:
                chunk = self._sock.recv(max(READ_SIZE, min(need, 16 * READ_SIZE)))
            except OSError as exc:
                raise TransportClosed(None, str(exc) or "connection dropped") from exc
            if not chunk:
                raise TransportClosed(None, "connection dropped")
            self._buffer += chunk

    def _take(self, count: int) -> bytes:
        if len(self._buffer) - self._pos < count:
            self._fill(count)
        start = self._pos
        self._pos = start + count
        return bytes(self._buffer[start : self._pos])

    def _discard(self, count: int) -> None:
        """Drop ``count`` payload bytes without keeping them (oversized frames)."""
        while count:
            available = len(self._buffer) - self._pos
            if not available:
                self._fill(1)
                continue
            step = min(available, count)
            self._pos += step
            count -= step

    def next_message(self) -> tuple[int, bytes]:
        """The next complete message or control frame: ``(opcode, payload)``.

        Raises :class:`FrameRejected` for a message over the size limit (already skipped),
        :class:`TransportClosed` when the socket ends, :class:`TransportError` for a
        protocol violation.
        """
        while True:
            header = self._take(2)
            first, second = header[0], header[1]
            fin, opcode = first & 0x80, first & 0x0F
            length = second & 0x7F
            if length == 126:
                (length,) = _U16.unpack(self._take(2))
            elif length == 127:
                (length,) = _U64.unpack(self._take(8))
            if length > MAX_DECLARED:
                raise TransportError(f"frame declares {length} bytes: the stream is corrupt")
            mask = self._take(4) if second & 0x80 else b""
            if opcode >= OP_CLOSE:
                if not fin or length > 125:
                    raise TransportError("invalid control frame")
                data = self._take(length)
                return opcode, _unmask(data, mask) if mask else data
            if opcode not in (OP_CONTINUATION, OP_TEXT, OP_BINARY):
                raise TransportError(f"unknown opcode {opcode}")
            if opcode != OP_CONTINUATION:
                if self._fragments or self._skipping:
                    raise TransportError("a new message started inside a fragmented one")
                self._fragment_opcode, self._fragment_size = opcode, 0
            elif not self._fragments and not self._skipping and not self._fragment_size:
                raise TransportError("continuation frame without a message")
            self._fragment_size += length
            if self._skipping or (self._limit is not None and self._fragment_size > self._limit):
                self._discard(length)
                self._fragments.clear()
                self._skipping = not fin
                if fin:
                    size, self._fragment_size = self._fragment_size, 0
                    raise FrameRejected(f"frame of {size} bytes exceeds {self._limit} bytes")
                continue
            data = self._take(length)
            if mask:
                data = _unmask(data, mask)
            if fin and not self._fragments:
                self._fragment_size = 0
                return opcode, data
            self._fragments.append(data)
            if fin:
                message = b"".join(self._fragments)
                self._fragments.clear()
                self._fragment_size = 0
                return self._fragment_opcode, message
