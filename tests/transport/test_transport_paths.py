"""Transport helpers outside the usual path: the package's lazy names, unix sockets where the
platform has none, a burst still buffered, and the in-memory transport's misuse."""

from __future__ import annotations

import socket
import threading

import pytest

import daemon_client.transport as transport_package
from daemon_client.transport.base import ConnectParams, FrameRejected, TransportClosed, TransportError
from daemon_client.transport.memory import MemoryServerEnd, MemoryTransport
from daemon_client.transport.unix import open_unix_socket
from daemon_client.transport.websocket import WebSocketTransport

from ..raw_server import Peer, RawServers, ws_frame


def test_the_transport_package_names_its_transports_lazily_and_nothing_else() -> None:
    assert transport_package.WebSocketTransport is WebSocketTransport
    assert transport_package.MemoryTransport is MemoryTransport
    with pytest.raises(AttributeError, match=r"module 'daemon_client\.transport' has no attribute 'Nope'"):
        transport_package.Nope  # noqa: B018 - the attribute access is the test


def test_unix_sockets_where_the_platform_has_none_fail_naming_the_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(socket, "AF_UNIX", raising=False)
    with pytest.raises(OSError, match=r"unix sockets are not available on this platform \(/run/paseo.sock\)"):
        open_unix_socket("/run/paseo.sock", 1.0)


def test_frames_sent_in_one_burst_are_reported_as_buffered() -> None:
    servers = RawServers()
    sent = threading.Event()

    def script(peer: Peer) -> None:
        peer.upgrade(then=ws_frame(b"one", 0x1) + ws_frame(b"two", 0x1))
        sent.set()
        peer.drain()

    transport = WebSocketTransport()
    try:
        server = servers(script)
        transport.connect(ConnectParams(url=server.url, timeout=5))
        assert sent.wait(5)
        assert transport.recv() == "one"
        assert transport.has_buffered_data()
        assert transport.recv() == "two"
        assert not transport.has_buffered_data()
    finally:
        transport.abort()
        servers.close()


def test_the_memory_transport_before_connecting_and_after_closing() -> None:
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


def test_a_connect_whose_time_is_already_up_fails_before_dialling() -> None:
    servers = RawServers()
    try:
        server = servers(lambda peer: peer.upgrade())
        transport = WebSocketTransport()
        with pytest.raises(TimeoutError, match="no WebSocket connection within 0 s"):
            transport.connect(ConnectParams(url=server.url, timeout=0))
        assert server.accepted == 0
    finally:
        servers.close()


def test_a_server_that_hangs_up_during_the_upgrade_is_a_transport_error() -> None:
    servers = RawServers()
    try:
        server = servers(lambda peer: peer.sock.close())
        transport = WebSocketTransport()
        with pytest.raises(TransportError, match="the server closed the connection during the WebSocket upgrade"):
            transport.connect(ConnectParams(url=server.url, timeout=5))
    finally:
        servers.close()
