"""The relay channel hands up the frame a direct connection would: typed by the first byte of
the decrypted message (protocol-relay.md 6.1), and never the same sealed frame twice."""

from __future__ import annotations

import pytest

pytest.importorskip("nacl")

from daemon_client._wire import BINARY_OPCODES, FILE_TRANSFER_OPCODES, TERMINAL_OPCODES, classify_message
from daemon_client.protocol import terminal_frames
from daemon_client.transport.base import TransportError
from daemon_client.transport.relay.replay_window import ReplayWindow

from .test_relay_channel import ScriptedBase, _open


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (b"\x01\x00echo hi\r\n", b"\x01\x00echo hi\r\n"),  # Output: valid UTF-8, still binary
        (b"\x04\x00{}", b"\x04\x00{}"),  # Snapshot
        (b"\x05\x00", b"\x05\x00"),  # Restore
        (b"\x10\x00data", b"\x10\x00data"),  # file transfer
        (b'{"type":"pong"}', '{"type":"pong"}'),
        (b"not json but text", "not json but text"),
        (b"\xff\xfe", b"\xff\xfe"),  # neither: routed as binary, dropped by the router
        (b"", ""),
    ],
)
def test_a_message_is_typed_by_its_first_byte(message: bytes, expected: str | bytes) -> None:
    result = classify_message(message)
    assert result == expected
    assert type(result) is type(expected)


def test_the_terminal_opcodes_are_declared_once() -> None:
    assert terminal_frames.TERMINAL_OPCODES is TERMINAL_OPCODES
    known = {terminal_frames.OUTPUT, terminal_frames.INPUT, terminal_frames.RESIZE}
    known |= {terminal_frames.SNAPSHOT, terminal_frames.RESTORE}
    assert known == TERMINAL_OPCODES
    assert TERMINAL_OPCODES | FILE_TRANSFER_OPCODES == BINARY_OPCODES
    assert ord("{") not in BINARY_OPCODES


def test_terminal_output_through_the_channel_is_a_binary_frame() -> None:
    base = ScriptedBase()
    channel, _, daemon = _open(base)
    output = bytes((terminal_frames.OUTPUT, 0)) + "prompt$ héllo\r\n".encode()
    base.inbound.put(daemon.seal(output))
    base.inbound.put(daemon.seal(b'{"type":"pong"}'))
    received = channel.recv()
    assert type(received) is bytes
    assert received == output
    assert channel.recv() == '{"type":"pong"}'


def test_a_replayed_sealed_frame_closes_the_socket_and_is_never_delivered() -> None:
    base = ScriptedBase()
    channel, factory, daemon = _open(base)
    sealed = daemon.seal(b'{"type":"session","message":{"type":"agent_update"}}')
    base.inbound.put(sealed)
    base.inbound.put(sealed)
    assert channel.recv().startswith('{"type":"session"')
    with pytest.raises(TransportError, match="a replay"):
        channel.recv()
    assert factory.stats.rejected_frames == 1
    assert base.closes == [(1011, "Replayed frame")]
    assert base.aborted.is_set()


def test_the_same_frame_in_another_alphabet_is_still_a_replay() -> None:
    base = ScriptedBase()
    channel, factory, daemon = _open(base)
    sealed = daemon.seal(b'{"type":"pong"}')
    base.inbound.put(sealed)
    base.inbound.put(sealed.replace("+", "-").replace("/", "_").rstrip("="))
    channel.recv()
    with pytest.raises(TransportError, match="a replay"):
        channel.recv()
    assert factory.stats.rejected_frames == 1


def test_a_frame_that_is_not_base64_is_fatal() -> None:
    base = ScriptedBase()
    channel, factory, _ = _open(base)
    base.inbound.put("é not base64")
    with pytest.raises(TransportError, match="not base64"):
        channel.recv()
    assert factory.stats.rejected_frames == 1


def test_the_replay_window_forgets_the_oldest_nonce_first() -> None:
    window = ReplayWindow(size=2)
    first, second, third = (bytes([n]) * 24 for n in (1, 2, 3))
    assert window.admit(first)
    assert window.admit(second)
    assert not window.admit(first)
    assert window.admit(third)  # the window is full: first is forgotten
    assert len(window) == 2
    assert window.admit(first)
    assert not window.admit(third)
    with pytest.raises(ValueError):
        ReplayWindow(size=0)
