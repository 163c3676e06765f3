"""``WebSocketTransport`` outside a connection: use before connecting, after an abort, and a
send to a peer that reset the connection."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from daemon_client.transport.base import ConnectParams, TransportClosed, TransportError
from daemon_client.transport.websocket import WebSocketTransport

from ..raw_server import Peer, RawServers


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
