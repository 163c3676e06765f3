"""After ``e2ee_ready``, a late plaintext ``e2ee_hello`` or ``e2ee_ready`` (the daemon answering a
resent hello) is skipped by :meth:`RelayTransport.recv`: the channel stays open and reads on;
any other plaintext frame is fatal."""

from __future__ import annotations

import pytest

pytest.importorskip("nacl")

from daemon_client.transport.base import TransportError

from .test_relay_channel import READY, ScriptedBase, _open

LATE_HELLO = '{"type":"e2ee_hello","key":"bGF0ZQ=="}'


@pytest.mark.parametrize("late", [LATE_HELLO, READY], ids=["e2ee_hello", "e2ee_ready"])
def test_a_late_handshake_frame_after_ready_is_skipped_not_fatal(late: str) -> None:
    base = ScriptedBase()
    channel, factory, daemon = _open(base)
    base.inbound.put(late)
    base.inbound.put(daemon.seal(b'{"type":"pong"}'))  # the frame after it must come through
    assert channel.recv() == '{"type":"pong"}'
    assert base.closes == []
    assert not base.aborted.is_set()
    assert factory.stats.rejected_frames == 0


def test_another_plaintext_frame_after_ready_closes_the_channel() -> None:
    base = ScriptedBase()
    channel, factory, _daemon = _open(base)
    base.inbound.put('{"type":"e2ee_other"}')
    with pytest.raises(TransportError, match="a plaintext frame"):
        channel.recv()
    assert base.closes == [(1011, "Received plaintext frame on encrypted channel")]
    assert factory.stats.rejected_frames == 1
