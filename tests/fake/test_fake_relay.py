"""The fake relay: its forwarding and buffering rules (protocol-relay.md 4.1-4.3) and its HTTP answers."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from daemon_client.testing import FakeRelay
from daemon_client.testing.fake.relay.links import RelayTables

websockets = pytest.importorskip("websockets")

from websockets.exceptions import ConnectionClosed, InvalidStatus  # noqa: E402 - after the skip
from websockets.sync.client import ClientConnection, connect  # noqa: E402


class Sink:
    """A socket of the forwarding tables that records what it is sent."""

    def __init__(self) -> None:
        self.sent: list[str | bytes] = []

    def send(self, message: str | bytes) -> None:
        self.sent.append(message)

    def control(self) -> list[dict[str, Any]]:
        return [json.loads(m) for m in self.sent if isinstance(m, str)]


# ------------------------------------------------------------------------------ the rules


def test_client_frames_wait_in_a_bounded_buffer_until_the_data_socket_opens() -> None:
    tables = RelayTables(buffer_limit=3)
    client = Sink()
    cid = tables.add_client("srv", client, None)
    assert cid.startswith("conn_")
    assert len(cid) == 5 + 16
    for index in range(5):
        tables.from_client("srv", cid, f"frame-{index}")
    control, data = Sink(), Sink()
    assert tables.attach_control("srv", control) is None
    assert control.control() == [{"type": "sync", "connectionIds": [cid]}]
    assert tables.attach_data("srv", cid, data) == (True, None)
    assert data.sent == ["frame-2", "frame-3", "frame-4"]  # the oldest two were dropped, order kept
    tables.from_client("srv", cid, b"binary stays binary")
    assert data.sent[-1] == b"binary stays binary"


def test_daemon_frames_go_to_every_client_socket_of_the_connection() -> None:
    tables = RelayTables()
    control = Sink()
    tables.attach_control("srv", control)
    first, second, other = Sink(), Sink(), Sink()
    cid = tables.add_client("srv", first, None)
    assert tables.add_client("srv", second, cid) == cid
    other_cid = tables.add_client("srv", other, None)
    assert [m["type"] for m in control.control()] == ["sync", "connected", "connected", "connected"]
    data = Sink()
    tables.attach_data("srv", cid, data)
    tables.from_daemon("srv", cid, "to both")
    assert first.sent == second.sent == ["to both"]
    assert other.sent == []
    assert tables.detach_data("srv", cid, data) == [first, second]  # the relay closes them 1012
    assert other_cid in tables.connection_ids("srv")


def test_the_last_client_leaving_ends_the_connection() -> None:
    tables = RelayTables()
    control, first, second, data = Sink(), Sink(), Sink(), Sink()
    tables.attach_control("srv", control)
    cid = tables.add_client("srv", first, None)
    tables.add_client("srv", second, cid)
    tables.attach_data("srv", cid, data)
    assert tables.remove_client("srv", cid, first) is None
    assert tables.remove_client("srv", cid, second) is data  # the relay closes it 1001
    assert control.control()[-1] == {"type": "disconnected", "connectionId": cid}
    assert tables.connection_ids("srv") == []
    tables.from_client("srv", cid, "too late")
    assert data.sent == []


def test_a_new_daemon_socket_replaces_the_old_one() -> None:
    tables = RelayTables()
    old_control, new_control = Sink(), Sink()
    tables.attach_control("srv", old_control)
    assert tables.attach_control("srv", new_control) is old_control
    client, old_data, new_data = Sink(), Sink(), Sink()
    cid = tables.add_client("srv", client, None)
    tables.attach_data("srv", cid, old_data)
    assert tables.attach_data("srv", cid, new_data) == (True, old_data)
    assert tables.detach_data("srv", cid, old_data) == []  # the replaced socket ending closes no client
    assert tables.attach_data("srv", "conn_unknown", Sink()) == (False, None)


# ------------------------------------------------------------------------------ over sockets


@pytest.fixture
def hub() -> Iterator[FakeRelay]:
    with FakeRelay() as relay:
        relay.start()
        yield relay


def _dial(hub: FakeRelay, query: str) -> ClientConnection:
    host, _, port = hub.endpoint.rpartition(":")
    sock = socket.create_connection((host, int(port)), timeout=5)
    ws = connect(f"ws://{hub.endpoint}/ws?{query}", sock=sock, open_timeout=5, close_timeout=2)
    if hasattr(ws, "pending_legacy_warning"):
        ws.pending_legacy_warning = False
    return ws


def _recv_json(ws: ClientConnection) -> dict[str, Any]:
    return json.loads(ws.recv(5))  # type: ignore[no-any-return]


def _next_of(ws: ClientConnection, kind: str, seen: list[dict[str, Any]]) -> dict[str, Any]:
    """The next control message of type ``kind``; the others read on the way go to ``seen``."""
    while True:
        message = _recv_json(ws)
        if message["type"] == kind:
            return message
        seen.append(message)


def test_http_answers(hub: FakeRelay) -> None:
    with urllib.request.urlopen(f"http://{hub.endpoint}/health", timeout=5) as response:
        assert json.loads(response.read()) == {"status": "ok"}
    for query, status in [
        ("role=client&v=2", 400),
        ("serverId=s&role=admin&v=2", 400),
        ("serverId=s&role=client&v=3", 400),
        ("serverId=s&role=client", 400),
    ]:
        with pytest.raises(InvalidStatus) as raised:
            _dial(hub, query)
        assert raised.value.response.status_code == status
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"http://{hub.endpoint}/elsewhere", timeout=5)
    assert missing.value.code == 404


def test_a_session_through_real_sockets(hub: FakeRelay) -> None:
    control = _dial(hub, "serverId=srv&role=server&v=2")
    try:
        assert _recv_json(control) == {"type": "sync", "connectionIds": []}
        control.send('{"type":"ping","ts":1}')
        assert _recv_json(control)["type"] == "pong"
        client = _dial(hub, "serverId=srv&role=client&v=2")
        client.send("early frame")  # before the data socket: buffered
        connected = _recv_json(control)
        assert connected["type"] == "connected"
        cid = connected["connectionId"]
        data = _dial(hub, f"serverId=srv&role=server&v=2&connectionId={cid}")
        assert data.recv(5) == "early frame"
        data.send("to the client")
        assert client.recv(5) == "to the client"
        client.send(b"\x00binary")
        assert data.recv(5) == b"\x00binary"
        data.close(1011, "E2EE handshake failed")  # whatever the daemon's reason ...
        with pytest.raises(ConnectionClosed) as closed:
            client.recv(5)
        assert closed.value.rcvd is not None
        assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (1012, "Server disconnected")  # ... 1012
        others: list[dict[str, Any]] = []
        second = _dial(hub, "serverId=srv&role=client&v=2")
        cid2 = _next_of(control, "connected", others)["connectionId"]
        data2 = _dial(hub, f"serverId=srv&role=server&v=2&connectionId={cid2}")
        second.close()
        with pytest.raises(ConnectionClosed) as ended:
            data2.recv(5)
        assert ended.value.rcvd is not None
        assert (ended.value.rcvd.code, ended.value.rcvd.reason) == (1001, "Client disconnected")
        gone = {m["connectionId"] for m in others if m["type"] == "disconnected"}
        while gone != {cid, cid2}:  # both connections ended: each is announced once
            gone.add(_next_of(control, "disconnected", others)["connectionId"])
        texts = [f.data for f in hub.forwarded]
        assert texts == ["early frame", "to the client", b"\x00binary"]
    finally:
        control.close()
