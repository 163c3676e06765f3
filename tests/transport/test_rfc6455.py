"""RFC 6455 on the client side, against a ``websockets``-library server that misbehaves on purpose.

Each case is one the ``websockets`` test suite checks for a client: the server writes raw bytes
on its socket (bypassing its own state machine), and the ``websockets`` parser then judges the
close frame this client sends back. The cases:

* a close frame without a status code is answered with an empty close frame (1005 is never
  sent); a close with a code is echoed with that code;
* reserved opcodes (0x3-0x7, 0xB-0xF), RSV1/2/3 without a negotiated extension, a fragmented or
  long control frame, a masked frame, a continuation frame with no message in progress (first,
  after a complete message, after a complete fragmented message), a data frame inside a
  fragmented message, a one-byte close payload and close codes no endpoint may send all fail the
  connection with 1002; a close reason that is not UTF-8 with 1007;
* pings are answered with the same payload, also between fragments; frames written in the same
  packet as the 101 answer are read.

The client itself never sends 1005, 1006 or 1015. The last tests run a whole ``Client``: a protocol
error costs the connection (and a reconnect follows), never the client.
"""

from __future__ import annotations

import queue
import struct
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.frames import Close
from websockets.sync.server import Server, ServerConnection, serve

import daemon_client as dc
from daemon_client.transport.base import ConnectParams, FrameRejected, ProtocolViolation, TransportClosed
from daemon_client.transport.frames import OP_BINARY, OP_CLOSE, OP_PING, OP_PONG, OP_TEXT, close_payload
from daemon_client.transport.websocket import WebSocketTransport

from ..raw_server import RawServers, read_close, ws_frame

TIMEOUT = 10.0
OP_CONT = 0x0
Script = Callable[[ServerConnection], None]


class Outcome:
    """What the ``websockets`` server saw of the client's side of the closing handshake."""

    def __init__(self, received: Close | None, sent: Close | None, frames: list[Any]) -> None:
        self.received = received
        self.sent = sent
        self.frames = frames
        """Messages (str/bytes) the server received before the close."""

    @property
    def code(self) -> int | None:
        return None if self.received is None else int(self.received.code)


class WsServer:
    """A ``websockets`` sync server whose handler writes ``script``'s raw bytes, then reads
    until the connection closes and reports an :class:`Outcome`."""

    def __init__(self, script: Script) -> None:
        self._script = script
        self.outcomes: queue.Queue[Outcome] = queue.Queue()
        self._server: Server = serve(
            self._handle, "127.0.0.1", 0, compression=None, ping_interval=None, close_timeout=2, open_timeout=5
        )
        self.url = f"ws://127.0.0.1:{self._server.socket.getsockname()[1]}/ws"
        self._thread = threading.Thread(target=self._server.serve_forever, name="rfc-ws-server", daemon=True)
        self._thread.start()

    def _handle(self, ws: ServerConnection) -> None:
        frames: list[Any] = []
        try:
            self._script(ws)
            while True:
                frames.append(ws.recv(TIMEOUT))
        except (ConnectionClosed, TimeoutError):
            pass
        self.outcomes.put(Outcome(ws.protocol.close_rcvd, ws.protocol.close_sent, frames))

    def outcome(self) -> Outcome:
        return self.outcomes.get(timeout=TIMEOUT)

    def close(self) -> None:
        self._server.shutdown()
        self._thread.join(TIMEOUT)


@pytest.fixture
def ws_server() -> Iterator[Callable[[Script], WsServer]]:
    made: list[WsServer] = []

    def make(script: Script) -> WsServer:
        server = WsServer(script)
        made.append(server)
        return server

    yield make
    for server in made:
        server.close()


@pytest.fixture
def raw_servers() -> Iterator[RawServers]:
    servers = RawServers()
    yield servers
    servers.close()


def raw(*frames: bytes) -> Script:
    return lambda ws: ws.socket.sendall(b"".join(frames))


@pytest.fixture
def transport() -> Iterator[WebSocketTransport]:
    made = WebSocketTransport()
    yield made
    made.close()


def open_transport(transport: WebSocketTransport, url: str) -> WebSocketTransport:
    transport.connect(ConnectParams(url=url, timeout=5))
    return transport


def read_until_it_fails(transport: WebSocketTransport, delivered: list[str]) -> None:
    """Read text frames into ``delivered`` (binary ones are skipped) until ``recv`` raises."""
    while True:
        try:
            delivered.append(transport.recv())
        except FrameRejected:  # a binary frame: skipped, the connection stays
            continue


def fails_with(transport: WebSocketTransport, match: str) -> ProtocolViolation:
    with pytest.raises(ProtocolViolation, match=match) as failure:
        read_until_it_fails(transport, [])
    return failure.value


# ----------------------------------------------------------------------------- the closing handshake


def test_a_close_frame_without_status_code_is_answered_with_an_empty_close(ws_server, transport) -> None:
    server = ws_server(raw(ws_frame(b"", OP_CLOSE)))
    open_transport(transport, server.url)
    with pytest.raises(TransportClosed) as closed:
        transport.recv()
    transport.abort()  # as the client's reader does once the connection ended
    assert closed.value.code == 1005  # reported as "no status received", never sent
    outcome = server.outcome()
    assert outcome.received is not None, "websockets refused the client's close frame (1005 on the wire?)"
    assert outcome.code == 1005  # websockets' reading of an empty close frame
    assert outcome.received.reason == ""


@pytest.mark.parametrize(("code", "reason"), [(1000, "bye"), (1001, ""), (4401, "Incorrect password"), (3000, "x")])
def test_a_close_frame_with_a_code_is_echoed(ws_server, transport, code: int, reason: str) -> None:
    server = ws_server(raw(ws_frame(struct.pack("!H", code) + reason.encode(), OP_CLOSE)))
    open_transport(transport, server.url)
    with pytest.raises(TransportClosed) as closed:
        transport.recv()
    transport.abort()
    assert (closed.value.code, closed.value.reason) == (code, reason)
    assert server.outcome().code == code


def test_no_data_frame_follows_the_clients_close_frame(ws_server, transport) -> None:
    server = ws_server(raw(ws_frame(struct.pack("!H", 1001), OP_CLOSE)))
    open_transport(transport, server.url)
    with pytest.raises(TransportClosed):
        transport.recv()
    with pytest.raises(TransportClosed) as refused:
        transport.send_text('{"type":"ping"}')
    assert refused.value.reason == "the connection is closing"
    transport.abort()
    outcome = server.outcome()
    assert outcome.code == 1001
    assert outcome.frames == []


@pytest.mark.parametrize("code", [0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000, 65535])
def test_a_close_frame_with_an_invalid_code_fails_with_1002(ws_server, transport, code: int) -> None:
    server = ws_server(raw(ws_frame(struct.pack("!H", code), OP_CLOSE)))
    open_transport(transport, server.url)
    fails_with(transport, f"invalid status code {code}")
    assert server.outcome().code == 1002


def test_a_one_byte_close_payload_fails_with_1002(ws_server, transport) -> None:
    server = ws_server(raw(ws_frame(b"\x03", OP_CLOSE)))
    open_transport(transport, server.url)
    fails_with(transport, "too short")
    assert server.outcome().code == 1002


def test_a_close_reason_that_is_not_utf8_fails_with_1007(ws_server, transport) -> None:
    server = ws_server(raw(ws_frame(struct.pack("!H", 1000) + b"\xff\xfe", OP_CLOSE)))
    open_transport(transport, server.url)
    assert fails_with(transport, "UTF-8").code == 1007
    assert server.outcome().code == 1007


@pytest.mark.parametrize("code", [1005, 1006, 1015, 999, 5000, None])
def test_the_client_never_sends_a_reserved_close_code(ws_server, transport, code: int | None) -> None:
    server = ws_server(lambda ws: None)
    open_transport(transport, server.url)
    transport.close(code, "going")  # type: ignore[arg-type]
    outcome = server.outcome()
    assert outcome.received is not None, "websockets refused the client's close frame"
    assert outcome.code == 1005  # sent as an empty close frame


def test_close_reasons_are_cut_to_fit_a_control_frame() -> None:
    payload = close_payload(1000, "é" * 100)  # 200 bytes of UTF-8
    assert len(payload) <= 125
    assert payload[2:].decode("utf-8") == "é" * 61


# ----------------------------------------------------------------------------- failing the connection

PROTOCOL_ERRORS: dict[str, tuple[bytes, str, list[str]]] = {
    **{f"reserved-opcode-{op:#x}": (ws_frame(b"", op), "reserved opcode", []) for op in (3, 4, 5, 6, 7)},
    **{f"reserved-opcode-{op:#x}": (ws_frame(b"x", op), "reserved opcode", []) for op in (0xB, 0xC, 0xD, 0xE, 0xF)},
    **{f"rsv{n}": (ws_frame(b"{}", OP_TEXT, rsv=bit), f"RSV{n}", []) for n, bit in ((1, 4), (2, 2), (3, 1))},
    "rsv1-on-a-ping": (ws_frame(b"", OP_PING, rsv=4), "RSV1", []),
    "fragmented-ping": (ws_frame(b"p", OP_PING, fin=False), "fragmented", []),
    "fragmented-close": (ws_frame(b"\x03\xe8", OP_CLOSE, fin=False), "fragmented", []),
    "ping-over-125-bytes": (ws_frame(b"p" * 126, OP_PING), "at most 125", []),
    "masked-frame": (ws_frame(b"{}", OP_TEXT, mask=b"abcd"), "masked", []),
    "continuation-first": (ws_frame(b"x", OP_CONT), "unexpected continuation", []),
    "continuation-after-a-message": (
        ws_frame(b"{}", OP_TEXT) + ws_frame(b"x", OP_CONT),
        "unexpected continuation",
        ["{}"],
    ),
    "continuation-after-a-fragmented-message": (
        ws_frame(b"{", OP_TEXT, fin=False) + ws_frame(b"}", OP_CONT) + ws_frame(b"x", OP_CONT),
        "unexpected continuation",
        ["{}"],
    ),
    "non-final-continuation-after-a-binary-message": (
        ws_frame(b"b", OP_BINARY) + ws_frame(b"x", OP_CONT, fin=False),
        "unexpected continuation",
        [b"b"],  # the binary message is delivered (terminal streams), then the stray continuation fails
    ),
    "text-inside-a-fragmented-message": (
        ws_frame(b"{", OP_TEXT, fin=False) + ws_frame(b"{}", OP_TEXT),
        "inside a fragmented",
        [],
    ),
    "binary-inside-a-fragmented-message": (
        ws_frame(b"{", OP_TEXT, fin=False) + ws_frame(b"b", OP_BINARY),
        "inside a fragmented",
        [],
    ),
}


@pytest.mark.parametrize("case", PROTOCOL_ERRORS.values(), ids=PROTOCOL_ERRORS.keys())
def test_a_protocol_error_fails_the_connection_with_1002(
    ws_server, transport, case: tuple[bytes, str, list[str]]
) -> None:
    data, reason, before = case
    server = ws_server(raw(data))
    open_transport(transport, server.url)
    delivered: list[str] = []
    with pytest.raises(ProtocolViolation, match=reason) as failure:
        read_until_it_fails(transport, delivered)
    assert failure.value.code == 1002
    assert delivered == before  # what came before the bad frame was delivered
    outcome = server.outcome()
    assert outcome.received is not None, "websockets saw no close frame from the client"
    assert outcome.code == 1002
    assert reason.lower() in outcome.received.reason.lower()


def test_a_stray_continuation_after_a_complete_message_is_an_error_after_that_message(ws_server, transport) -> None:
    server = ws_server(raw(ws_frame(b'{"a":1}', OP_TEXT), ws_frame(b"tail", OP_CONT)))
    open_transport(transport, server.url)
    assert transport.recv() == '{"a":1}'
    fails_with(transport, "unexpected continuation")
    assert server.outcome().code == 1002


def test_nothing_is_read_or_answered_after_failing(ws_server, transport) -> None:
    """After failing, the client stops processing frames: the ping behind the bad frame is not answered."""
    server = ws_server(raw(ws_frame(b"", 0xB), ws_frame(b"after", OP_PING)))
    open_transport(transport, server.url)
    fails_with(transport, "reserved opcode")
    outcome = server.outcome()
    assert outcome.code == 1002
    assert outcome.frames == []


# ----------------------------------------------------------------------------- what must keep working


def test_pings_are_answered_with_their_payload_also_between_fragments(raw_servers, transport) -> None:
    seen: list[tuple[int, bytes]] = []

    def script(peer: Any) -> None:
        peer.upgrade()
        peer.send(
            ws_frame(b"ping-1", OP_PING)
            + ws_frame(b'{"a":', OP_TEXT, fin=False)
            + ws_frame(b"ping-2", OP_PING)
            + ws_frame(b"1}", OP_CONT)
            + ws_frame(b"unsolicited", OP_PONG)
            + ws_frame(b"", OP_CLOSE)
        )
        reader = peer.reader()
        while True:
            opcode, data = reader.next_message()
            seen.append((opcode, data))
            if opcode == OP_CLOSE:
                return

    server = raw_servers(script)
    open_transport(transport, server.url)
    assert transport.recv() == '{"a":1}'
    with pytest.raises(TransportClosed):
        transport.recv()
    server.close()
    assert seen == [(OP_PONG, b"ping-1"), (OP_PONG, b"ping-2"), (OP_CLOSE, b"")]


def test_frames_in_the_same_packet_as_the_upgrade_answer_are_read(raw_servers, transport) -> None:
    def script(peer: Any) -> None:
        peer.upgrade(then=ws_frame(b'{"early":true}', OP_TEXT))
        read_close(peer.reader())

    server = raw_servers(script)
    open_transport(transport, server.url)
    assert transport.recv() == '{"early":true}'


# ----------------------------------------------------------------------------- a whole client


def _handshake(ws: ServerConnection) -> None:
    ws.recv(TIMEOUT)  # the hello
    ws.send('{"type":"session","message":{"type":"status","payload":{"status":"server_info","serverId":"s"}}}')


def test_a_client_fails_the_connection_on_a_reserved_opcode_and_reconnects(ws_server, caplog) -> None:
    connections = iter(range(1_000))

    def script(ws: ServerConnection) -> None:
        _handshake(ws)
        if next(connections) == 0:
            ws.socket.sendall(ws_frame(b"", 0xB))

    server = ws_server(script)
    reconnected = threading.Event()

    def on_state(_old: dc.ConnectionState, new: dc.ConnectionState, reason: str) -> None:
        if new is dc.ConnectionState.CONNECTED and reason == "reconnected":
            reconnected.set()

    policy = dc.ReconnectPolicy(base_delay=0.01, max_delay=0.05, jitter=0.0)
    with dc.Client(server.url, reconnect=policy, heartbeat=dc.Heartbeat(enabled=False), strict=True) as client:
        client.on_state_change(on_state)
        assert server.outcome().code == 1002
        assert reconnected.wait(TIMEOUT), "the client did not reconnect after the protocol error"
        assert isinstance(client.last_error, dc.ConnectionLost)
        assert "reserved opcode" in str(client.last_error)
    assert "reserved opcode" in caplog.text


def test_a_client_answers_a_codeless_close_with_an_empty_close(ws_server) -> None:
    def script(ws: ServerConnection) -> None:
        _handshake(ws)
        ws.socket.sendall(ws_frame(b"", OP_CLOSE))

    server = ws_server(script)
    client = dc.Client(server.url, reconnect=dc.ReconnectPolicy(enabled=False), strict=True)
    try:
        client.connect()
        outcome = server.outcome()
        assert outcome.received is not None
        assert outcome.code == 1005
    finally:
        client.close()
