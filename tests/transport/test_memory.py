"""The in-memory transport (:mod:`daemon_client.transport.memory`): use before connecting and
after closing, the headers and subprotocols its server end sees, and frames over the limit."""

from __future__ import annotations

import pytest

from daemon_client.transport.base import ConnectParams, FrameRejected, TransportClosed, TransportError
from daemon_client.transport.memory import MemoryServerEnd, MemoryTransport


def test_the_memory_transport_refuses_sends_before_connecting_and_closes_once() -> None:
    accepted: list[MemoryServerEnd] = []
    client = MemoryTransport(accepted.append)
    assert client.selected_subprotocol is None
    with pytest.raises(TransportError, match="not connected"):
        client.send_text("{}")
    client.connect(ConnectParams(url="ws://memory/ws", timeout=1, headers={"X-A": "1"}, subprotocols=("p",)))
    (server,) = accepted
    assert (dict(server.headers), list(server.subprotocols)) == ({"X-A": "1"}, ["p"])
    server.send_text("hello")
    assert client.recv() == "hello"
    client.close(1000, "bye")
    client.close(1000, "again")  # once closed, closing again does nothing
    assert client.closed
    with pytest.raises(TransportClosed):
        client.send_text("late")
    with pytest.raises(TransportClosed) as ended:
        server.recv(timeout=1)
    assert (ended.value.code, ended.value.reason) == (1000, "bye")
    never = MemoryTransport(accepted.append)
    never.close()  # nothing to tell a peer
    assert never.closed


def test_the_memory_transport_refuses_frames_over_the_limit_and_reads_on() -> None:
    accepted: list[MemoryServerEnd] = []
    client = MemoryTransport(accepted.append)
    client.connect(ConnectParams(url="ws://memory/ws", timeout=1, max_frame_bytes=4))
    (server,) = accepted
    server.send_binary(b"12345")
    server.send_raw_text(b"123456")
    server.send_raw_text(b"ok")
    with pytest.raises(FrameRejected, match="frame of 5 bytes exceeds 4 bytes"):
        client.recv()
    with pytest.raises(FrameRejected, match="frame of 6 bytes exceeds 4 bytes"):
        client.recv()
    assert client.recv() == "ok"
    client.send_binary(b"\x01")
    assert server.recv(timeout=1) == b"\x01"
    with pytest.raises(TimeoutError, match="no frame within timeout"):
        server.recv(timeout=0.01)
    client.abort()
