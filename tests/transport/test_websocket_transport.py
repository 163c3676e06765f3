"""``WebSocketTransport`` outside a connection: use before connecting, after an abort, and a
send to a peer that reset the connection; a connect whose time is already up, a server that
hangs up during the upgrade, and a burst of frames still buffered."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from daemon_client.transport.base import ConnectParams, TransportClosed, TransportError
from daemon_client.transport.websocket import WebSocketTransport

from ..raw_server import Peer, RawServers, ws_frame


@pytest.fixture
def raw_servers() -> Iterator[RawServers]:
    servers = RawServers()
    yield servers
    servers.close()


def test_a_transport_is_unusable_before_it_connects() -> None:
    transport = WebSocketTransport()
    for send in (lambda: transport.send_text("{}"), lambda: transport.send_binary(b"\x00")):
        with pytest.raises(TransportClosed) as refused:
            send()
        assert (refused.value.code, refused.value.reason) == (None, "not connected")
    with pytest.raises(TransportError, match="not connected"):
        transport.recv()
    assert not transport.has_buffered_data()
    transport.close()  # nothing was opened: no close frame, no error
    transport.close()


def test_a_transport_aborted_before_connecting_opens_nothing(raw_servers) -> None:
    server = raw_servers(lambda peer: peer.upgrade())
    transport = WebSocketTransport()
    transport.abort()
    with pytest.raises(TransportError, match="aborted before connecting"):
        transport.connect(ConnectParams(url=server.url, timeout=5))
    assert server.accepted == 0


def test_a_send_after_the_peer_reset_the_connection_is_a_close(raw_servers) -> None:
    reset = threading.Event()

    def script(peer: Peer) -> None:
        peer.upgrade()
        peer.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        peer.sock.close()  # an RST, not a FIN
        reset.set()

    server = raw_servers(script)
    transport = WebSocketTransport()
    try:
        transport.connect(ConnectParams(url=server.url, timeout=5))
        assert reset.wait(5)
        with pytest.raises(TransportError):
            transport.recv()  # the reset has arrived
        for send in (lambda: transport.send_text("{}"), lambda: transport.send_binary(b"\x01")):
            with pytest.raises(TransportClosed) as failed:
                send()
            assert failed.value.reason.startswith("send failed: ")
    finally:
        transport.abort()


def test_a_connect_whose_time_is_already_up_fails_before_dialling(raw_servers) -> None:
    server = raw_servers(lambda peer: peer.upgrade())
    transport = WebSocketTransport()
    with pytest.raises(TimeoutError, match="no WebSocket connection within 0 s"):
        transport.connect(ConnectParams(url=server.url, timeout=0))
    assert server.accepted == 0


def test_a_server_that_hangs_up_during_the_upgrade_is_a_transport_error(raw_servers) -> None:
    server = raw_servers(lambda peer: peer.sock.close())
    transport = WebSocketTransport()
    with pytest.raises(TransportError, match="the server closed the connection during the WebSocket upgrade"):
        transport.connect(ConnectParams(url=server.url, timeout=5))


def test_frames_sent_in_one_burst_are_reported_as_buffered_until_read(raw_servers) -> None:
    sent = threading.Event()

    def script(peer: Peer) -> None:
        peer.upgrade(then=ws_frame(b"one", 0x1) + ws_frame(b"two", 0x1))
        sent.set()
        peer.drain()

    server = raw_servers(script)
    transport = WebSocketTransport()
    try:
        transport.connect(ConnectParams(url=server.url, timeout=5))
        assert sent.wait(5)
        assert transport.recv() == "one"
        assert transport.has_buffered_data()
        assert transport.recv() == "two"
        assert not transport.has_buffered_data()
    finally:
        transport.abort()
