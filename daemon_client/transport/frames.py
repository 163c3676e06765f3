"""Reading WebSocket frames (RFC 6455) from a socket through one large buffer.

websocket-client reads each frame with several small socket reads, and each read lets
other threads take the GIL; reading 256 KiB at a time and cutting frames out of the
buffer is several times cheaper and lets the callback thread work in batches. Runs on
the reader thread only.

Frames over the size limit are skipped as they arrive, without being kept in memory.
Fragmented messages are reassembled; control frames (close, ping, pong) are returned as
they come, even between fragments. Anything RFC 6455 calls a protocol error (reserved bits
without a negotiated extension, reserved opcodes, a fragmented or long control frame, a
continuation without a message, a masked frame from a server) raises
:class:`ProtocolViolation`; :func:`parse_close` and :func:`close_payload` read and write
close frames by the rules of RFC 6455 section 7.4 (1005, 1006 and 1015 are never sent).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable

from daemon_client.transport.base import FrameRejected, ProtocolViolation, TransportClosed

OP_CONTINUATION = 0x0
OP_TEXT = 0x1
OP_BINARY = 0x2
OP_CLOSE = 0x8
OP_PING = 0x9
OP_PONG = 0xA
_KNOWN_OPCODES = frozenset((OP_CONTINUATION, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG))
READ_SIZE = 256 * 1024
MAX_DECLARED = 1 << 40  # a declared length beyond this (1 TiB) is a corrupt stream, not a frame
_U16 = struct.Struct("!H")
_U64 = struct.Struct("!Q")
NO_STATUS = 1005  # "a close frame without a code": reported, never sent
MAX_CLOSE_REASON = 123  # bytes: a control frame carries at most 125, the code takes 2


def is_sendable_close_code(code: int) -> bool:
    """True for the codes a close frame may carry on the wire (RFC 6455 7.4.1 and 7.4.2)."""
    return code in (1000, 1001, 1002, 1003) or 1007 <= code <= 1014 or 3000 <= code <= 4999


def parse_close(payload: bytes) -> tuple[int, str]:
    """A received close frame's ``(code, reason)``; ``(1005, "")`` when it carries no code.

    Raises :class:`ProtocolViolation`: 1002 for a one-byte payload or a code no endpoint may
    send, 1007 for a reason that is not UTF-8.
    """
    if not payload:
        return NO_STATUS, ""
    if len(payload) < 2:
        raise ProtocolViolation("close frame too short (one byte, no room for a status code)")
    (code,) = _U16.unpack(payload[:2])
    if not is_sendable_close_code(code):
        raise ProtocolViolation(f"close frame with the invalid status code {code}")
    try:
        reason = payload[2:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolViolation(f"close reason is not valid UTF-8 ({exc.reason})", code=1007) from None
    return code, reason


def invalid_text(size: int, error: UnicodeDecodeError) -> ProtocolViolation:
    """The violation of a text frame that is not UTF-8 (RFC 6455 8.1: fail with 1007). It names
    the frame's size and where the bad byte is, never the frame's bytes."""
    return ProtocolViolation(
        f"a text frame of {size} bytes is not valid UTF-8 (at byte {error.start}: {error.reason}); "
        "closing with 1007 (RFC 6455 8.1)",
        code=1007,
    )


def close_payload(code: int | None, reason: str = "") -> bytes:
    """The payload of a close frame to send: empty for ``None``, 1005 or any code that must
    not travel on the wire, else the code and the reason cut to 123 UTF-8 bytes."""
    if code is None or not is_sendable_close_code(code):
        return b""
    data = reason.encode("utf-8")[:MAX_CLOSE_REASON]
    return _U16.pack(code) + data.decode("utf-8", errors="ignore").encode("utf-8")


def _unmask(data: bytes, mask: bytes) -> bytes:
    """XOR ``data`` with the 4-byte ``mask`` (servers do not mask; tolerated anyway)."""
    repeated = (mask * (len(data) // 4 + 1))[: len(data)]
    return (int.from_bytes(data, "big") ^ int.from_bytes(repeated, "big")).to_bytes(len(data), "big")


class FrameReader:
    """Cuts whole messages out of a socket's byte stream."""

    def __init__(
        self,
        sock: socket.socket,
        max_message_bytes: int | None,
        *,
        initial: bytes = b"",
        refuse_masked: bool = False,
    ) -> None:
        """``initial``: bytes already read from ``sock`` (those after the upgrade answer);
        ``refuse_masked``: reading as a client, where a masked frame is a protocol error."""
        self._sock = sock
        self._limit = max_message_bytes
        self._refuse_masked = refuse_masked
        self._buffer = bytearray(initial)
        self._pos = 0
        self._fragments: list[bytes] = []
        self._fragment_opcode = 0
        self._fragment_size = 0
        self._skipping = False  # the fragmented message being received is over the limit
        self.wait_hooks: tuple[Callable[[], None], Callable[[], None]] | None = None
        """``(before, after)``: called around each socket read, ``before`` while the reader is
        about to wait for bytes, ``after`` once some arrived (see ``dispatch.BurstGate``)."""

    def buffered(self) -> int:
        """Bytes received and not consumed yet."""
        return len(self._buffer) - self._pos

    def _fill(self, need: int) -> None:
        """Read until at least ``need`` unconsumed bytes are buffered."""
        if self._pos and self._pos >= len(self._buffer) // 2:
            del self._buffer[: self._pos]
            self._pos = 0
        hooks = self.wait_hooks
        while len(self._buffer) - self._pos < need:
            if hooks is not None:
                hooks[0]()
            try:
                chunk = self._sock.recv(max(READ_SIZE, min(need, 16 * READ_SIZE)))
            except OSError as exc:
                raise TransportClosed(None, str(exc) or "connection dropped") from exc
            if not chunk:
                raise TransportClosed(None, "connection dropped")
            if hooks is not None:
                hooks[1]()
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
        :class:`TransportClosed` when the socket ends, :class:`ProtocolViolation` for a
        protocol violation (the caller fails the connection with its ``code``).
        """
        while True:
            header = self._take(2)
            first, second = header[0], header[1]
            fin, opcode = first & 0x80, first & 0x0F
            if first & 0x70:
                bits = ", ".join(f"RSV{n}" for n, bit in ((1, 0x40), (2, 0x20), (3, 0x10)) if first & bit)
                raise ProtocolViolation(f"reserved bits set ({bits}) but no extension was negotiated")
            if opcode not in _KNOWN_OPCODES:
                raise ProtocolViolation(f"reserved opcode {opcode:#x}")
            if second & 0x80 and self._refuse_masked:
                raise ProtocolViolation("masked frame from the server (RFC 6455 5.1)")
            length = second & 0x7F
            if length == 126:
                (length,) = _U16.unpack(self._take(2))
            elif length == 127:
                (length,) = _U64.unpack(self._take(8))
            if length > MAX_DECLARED:
                raise ProtocolViolation(f"frame declares {length} bytes: the stream is corrupt")
            mask = self._take(4) if second & 0x80 else b""
            if opcode >= OP_CLOSE:
                if not fin:
                    raise ProtocolViolation("invalid control frame: fragmented")
                if length > 125:
                    raise ProtocolViolation(f"invalid control frame: {length} bytes (at most 125)")
                data = self._take(length)
                return opcode, _unmask(data, mask) if mask else data
            if opcode != OP_CONTINUATION:
                if self._fragments or self._skipping:
                    raise ProtocolViolation("a new message started inside a fragmented one")
                self._fragment_opcode, self._fragment_size = opcode, 0
            elif not self._fragments and not self._skipping and not self._fragment_size:
                raise ProtocolViolation("unexpected continuation frame: no message is in progress")
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
