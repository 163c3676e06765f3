"""The buffered WebSocket frame reader: fragments, masks, control frames, size limit."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from daemon_client.transport.base import FrameRejected, TransportClosed, TransportError
from daemon_client.transport.frames import OP_BINARY, OP_CLOSE, OP_PING, OP_TEXT, FrameReader


def frame(payload: bytes, opcode: int = OP_TEXT, *, fin: bool = True, mask: bytes | None = None) -> bytes:
    first = (0x80 if fin else 0) | opcode
    length = len(payload)
    mask_bit = 0x80 if mask else 0
    if length < 126:
        header = struct.pack("!BB", first, mask_bit | length)
    elif length < 65536:
        header = struct.pack("!BBH", first, mask_bit | 126, length)
    else:
        header = struct.pack("!BBQ", first, mask_bit | 127, length)
    if mask:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        header += mask
    return header + payload


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    left, right = socket.socketpair()
    yield left, right
    left.close()
    right.close()


def send_slowly(sock: socket.socket, data: bytes) -> threading.Thread:
    """Write in tiny pieces so that frames straddle reads."""

    def run() -> None:
        for start in range(0, len(data), 7):
            sock.sendall(data[start : start + 7])

    thread = threading.Thread(target=run, name="test-writer")
    thread.start()
    return thread


def test_frames_of_every_length_form_and_split_reads(pair) -> None:
    left, right = pair
    payloads = [b"", b"a" * 125, b"b" * 126, b"c" * 70_000]
    writer = send_slowly(right, b"".join(frame(p) for p in payloads))
    reader = FrameReader(left, None)
    assert [reader.next_message() for _ in payloads] == [(OP_TEXT, p) for p in payloads]
    writer.join(10)


def test_fragments_are_joined_and_control_frames_pass_between_them(pair) -> None:
    left, right = pair
    right.sendall(
        frame(b"Hel", fin=False) + frame(b"ping!", OP_PING) + frame(b"lo ", 0x0, fin=False) + frame(b"world", 0x0)
    )
    reader = FrameReader(left, None)
    assert reader.next_message() == (OP_PING, b"ping!")
    assert reader.next_message() == (OP_TEXT, b"Hello world")


def test_masked_frames_are_unmasked(pair) -> None:
    left, right = pair
    right.sendall(frame("ünïcode".encode(), mask=b"\x01\x02\x03\x04") + frame(b"\x00\x01", OP_BINARY, mask=b"abcd"))
    reader = FrameReader(left, None)
    assert reader.next_message() == (OP_TEXT, "ünïcode".encode())
    assert reader.next_message() == (OP_BINARY, b"\x00\x01")


def test_oversized_messages_are_skipped_without_losing_the_stream(pair) -> None:
    left, right = pair
    big = b"x" * 5000
    writer = send_slowly(
        right, frame(big) + frame(b"ok") + frame(b"y" * 600, fin=False) + frame(b"z" * 600, 0x0) + frame(b"after")
    )
    reader = FrameReader(left, 1000)
    with pytest.raises(FrameRejected, match="5000 bytes exceeds 1000"):
        reader.next_message()
    assert reader.next_message() == (OP_TEXT, b"ok")
    with pytest.raises(FrameRejected, match="1200 bytes"):
        reader.next_message()
    assert reader.next_message() == (OP_TEXT, b"after")
    writer.join(10)


def test_protocol_violations_and_end_of_stream(pair) -> None:
    left, right = pair
    right.sendall(frame(b"x" * 200, OP_CLOSE))
    with pytest.raises(TransportError, match="control frame"):
        FrameReader(left, None).next_message()
    right.sendall(frame(b"", 0x0))
    with pytest.raises(TransportError, match="continuation"):
        FrameReader(left, None).next_message()
    right.sendall(frame(b"", 0x3))
    with pytest.raises(TransportError, match="opcode"):
        FrameReader(left, None).next_message()
    right.sendall(frame(b"a", fin=False) + frame(b"b"))
    with pytest.raises(TransportError, match="inside a fragmented"):
        FrameReader(left, None).next_message()
    right.sendall(b"\x81")
    right.close()
    with pytest.raises(TransportClosed):
        FrameReader(left, None).next_message()
