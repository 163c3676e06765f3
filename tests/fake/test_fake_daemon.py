"""Tests of the fake daemon itself, driven with raw frames in memory and on loopback.

Clients are :class:`~tests.raw_client.RawClient`s (a bare ``MemoryTransport`` or a
websocket-client socket, each with a reader thread feeding a queue). No test sleeps to
synchronise.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import websocket

from daemon_client.protocol.hosts import HostKind
from daemon_client.testing.fake.daemon import FakeDaemon, RequestContext, reply_type_for
from daemon_client.transport.base import ConnectParams, TransportError

from ..raw_client import READER_THREAD_PREFIX, Connect, Fake, RawClient, RawClients, hello, session

TRANSCRIPTS = Path("/work/shared/transcripts/paseo-0.1.65")
KINDS = list(HostKind)
CAPS_REJECTION = {"hello_rejection": True}


@pytest.fixture(params=["memory", "loopback"])
def frontend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def connect(frontend: str) -> Iterator[Connect]:
    """``connect(fake, subprotocols=(), headers=None)``: a new socket of the test's frontend, no hello sent."""
    with RawClients(loopback=frontend == "loopback") as clients:
        yield clients.open


# -- handshake -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_handshake_and_server_info_shape(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    fake = fakes(kind)
    client = connect(fake)
    info = client.handshake(hello("cid-shape"))
    common = {"status", "serverId", "hostname", "version", "features"}
    expected = {
        HostKind.CAPABLE: common | {"protocolVersion", "permissions", "desktopManaged"},
        HostKind.SELECTIVE: common,
        HostKind.BROADCAST: common | {"capabilities"},
    }[kind]
    assert set(info) == expected
    assert (info["serverId"], info["hostname"]) == ("srv-fake", "fakehost")
    assert (
        info["version"]
        == {HostKind.CAPABLE: "0.9.3", HostKind.SELECTIVE: "0.1.108", HostKind.BROADCAST: "0.1.65-beta.5"}[kind]
    )
    if kind is HostKind.BROADCAST:
        assert info["features"] == {"providersSnapshot": True}
    if kind is HostKind.CAPABLE:
        assert info["protocolVersion"] == 1
        assert info["features"]["ownedSubscriptions"] is True
    if kind is HostKind.SELECTIVE:
        assert info["features"]["selectiveAgentTimeline"] is True
        assert "ownedSubscriptions" not in info["features"]
    (conn,) = fake.wait_for_connections(1)
    assert conn.client_id == "cid-shape"
    assert conn.hello == hello("cid-shape")
    assert fake.received[0] == hello("cid-shape")
    assert fake.received[0].connection is conn
    assert conn.frames == [hello("cid-shape")]
    assert fake.accepted_count == 1


def test_version_and_features_override(fakes: Fake, connect: Connect) -> None:
    fake = fakes(
        HostKind.SELECTIVE, version="0.2.4", features={"projectList": True, "explicitEventSubscriptions": False}
    )
    info = connect(fake).handshake()
    assert info["version"] == "0.2.4"
    assert info["features"]["projectList"] is True
    assert info["features"]["explicitEventSubscriptions"] is False
    assert info["features"]["selectiveAgentTimeline"]


def test_ping_before_and_after_hello(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.BROADCAST)
    client = connect(fake)
    client.send({"type": "ping"})
    assert client.next_frame() == {"type": "pong"}
    client.handshake()
    client.send({"type": "ping"})
    assert client.next_frame() == {"type": "pong"}
    assert [f["type"] for f in fake.received] == ["ping", "hello", "ping"]


@pytest.mark.parametrize("kind", KINDS)
def test_session_ping(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    client = connect(fakes(kind))
    client.handshake()
    client.send_session("ping", requestId="r1", clientSentAt=1795986659141)
    kind_, payload = client.message()
    assert kind_ == "pong"
    assert set(payload) == {"requestId", "clientSentAt", "serverReceivedAt", "serverSentAt"}
    assert payload["requestId"] == "r1"
    assert payload["clientSentAt"] == 1795986659141
    assert payload["serverSentAt"] >= payload["serverReceivedAt"] > 1_700_000_000_000
    client.send_session("ping", requestId="r2")
    assert set(client.message()[1]) == {"requestId", "serverReceivedAt", "serverSentAt"}


def test_invalid_messages_after_hello(fakes: Fake, connect: Connect) -> None:
    client = connect(fakes(HostKind.BROADCAST))
    client.handshake()
    client.send_session("no_such_request", requestId="r1")
    assert client.message() == (
        "rpc_error",
        {
            "requestId": "r1",
            "requestType": "no_such_request",
            "error": "Unknown request schema",
            "code": "unknown_schema",
        },
    )
    client.send_session("fetch_agent_request", requestId="r2")  # known type, field missing
    assert client.message()[1]["code"] == "unknown_schema"
    for frame in (session("fetch_agent_request"), {"type": "session"}, "this is not json", "[1, 2]"):
        client.send(frame)
        kind, payload = client.message()
        assert kind == "status"
        assert payload["status"] == "error"
        assert payload["message"].startswith("Invalid message: ")
    client.send({"type": "bogus_top_level", "requestId": "r3"})
    assert client.message() == (
        "rpc_error",
        {"requestId": "r3", "requestType": "bogus_top_level", "error": "Invalid message", "code": "invalid_message"},
    )
    client.send_session("ping", requestId="r4")  # the connection is still open
    assert client.message()[0] == "pong"


# -- hello validation ------------------------------------------------------------------------------

CLOSE_CASES: list[tuple[str, HostKind, list[Any], tuple[int, str]]] = [
    ("second hello", HostKind.BROADCAST, [hello(), hello()], (4002, "Unexpected hello")),
    (
        "session first",
        HostKind.BROADCAST,
        [session("fetch_agents_request", requestId="r")],
        (4002, "Session message before hello"),
    ),
    ("blank clientId", HostKind.BROADCAST, [hello(" ")], (4002, "Invalid hello")),
    ("empty clientId", HostKind.CAPABLE, [hello("")], (4002, "Invalid hello")),
    ("hub on broadcast", HostKind.BROADCAST, [hello(clientType="hub")], (4002, "Invalid hello")),
    ("unknown clientType", HostKind.CAPABLE, [hello(clientType="robot")], (4002, "Invalid hello")),
    ("protocol 2", HostKind.BROADCAST, [hello(protocolVersion=2)], (4003, "Incompatible protocol version")),
    ("protocol 0 capable", HostKind.CAPABLE, [hello(protocolVersion=0)], (4003, "Incompatible protocol version")),
]


@pytest.mark.parametrize(("kind", "frames", "close"), [c[1:] for c in CLOSE_CASES], ids=[c[0] for c in CLOSE_CASES])
def test_hello_validation_closes(
    fakes: Fake, connect: Connect, kind: HostKind, frames: list[Any], close: tuple[int, str]
) -> None:
    client = connect(fakes(kind))
    for frame in frames:
        client.send(frame)
    event = client.next_event()
    if event[0] == "text":  # the valid first hello of "second hello"
        assert json.loads(event[1])["message"]["payload"]["status"] == "server_info"
        event = client.next_event()
    assert event[0] == "close"
    assert event[1:] == close


def test_binary_before_hello_closes(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.CAPABLE)
    client = connect(fake)
    client.send_binary(b"\x01\x02")
    assert client.expect_close() == (4002, "Session message before hello")
    assert fake.wait_for_frame(lambda f: "binary" in f) == {"binary": 2}


def test_hub_allowed_on_capable(fakes: Fake, connect: Connect) -> None:
    connect(fakes(HostKind.CAPABLE)).handshake(hello(clientType="hub"))


def test_hello_timeout(fakes: Fake, connect: Connect) -> None:
    client = connect(fakes(HostKind.BROADCAST, hello_timeout=0.3))
    client.send({"type": "ping"})  # a ping is no hello
    assert client.next_frame() == {"type": "pong"}
    assert client.expect_close() == (4001, "Hello timeout")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("announce", [True, False])
def test_incompatible_protocol_rejection(fakes: Fake, connect: Connect, kind: HostKind, announce: bool) -> None:
    client = connect(fakes(kind))
    client.send(hello(protocolVersion=2, capabilities=CAPS_REJECTION if announce else {}))
    if announce and kind is not HostKind.BROADCAST:
        assert client.next_frame() == {"type": "hello.rejected", "reason": "incompatible_protocol"}
    assert client.expect_close() == (4003, "Incompatible protocol version")


# -- authentication --------------------------------------------------------------------------------

PW = "s3cret-Token"


def test_broadcast_auth(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.BROADCAST, password=PW)
    assert connect(fake).expect_close() == (4401, "Password required")  # no hello needed
    wrong = connect(fake, subprotocols=["paseo.bearer.wrong"])
    assert wrong.subprotocol is not None
    assert wrong.subprotocol.lower() == "paseo.bearer.wrong"
    assert wrong.expect_close() == (4401, "Incorrect password")
    good = connect(fake, subprotocols=[f"paseo.bearer.{PW}"])
    assert good.subprotocol is not None
    assert good.subprotocol.lower() == f"paseo.bearer.{PW}".lower()
    good.handshake()
    header_only = connect(fake, headers={"Authorization": f"Bearer {PW}"})  # ignored by 0.1.65
    assert header_only.expect_close() == (4401, "Password required")
    in_hello = connect(fake)
    in_hello.send(hello(auth={"kind": "password", "password": PW}, capabilities=CAPS_REJECTION))
    assert in_hello.expect_close() == (4401, "Password required")  # no hello.rejected on 0.1.65


def test_broadcast_echoes_first_offered_subprotocol(fakes: Fake, connect: Connect) -> None:
    client = connect(fakes(HostKind.BROADCAST), subprotocols=["other", f"paseo.bearer.{PW}"])
    assert client.subprotocol == "other"
    client.handshake()


@pytest.mark.parametrize("kind", [HostKind.CAPABLE, HostKind.SELECTIVE])
def test_legacy_and_capable_upgrade_credentials(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    fake = fakes(kind, password=PW)
    connect(fake, headers={"Authorization": f"Bearer {PW}"}).handshake()
    via_sub = connect(fake, subprotocols=["other", f"paseo.bearer.{PW}"])
    assert via_sub.subprotocol is not None
    assert via_sub.subprotocol.lower() == f"paseo.bearer.{PW}".lower()
    via_sub.handshake(hello(auth={"kind": "password", "password": "ignored"}))  # header credential wins
    assert connect(fake, headers={"Authorization": "Bearer nope"}).expect_close() == (4401, "Incorrect password")
    assert connect(fake, subprotocols=["paseo.bearer.nope"]).expect_close() == (4401, "Incorrect password")


HELLO_AUTH_CASES: list[tuple[str, dict[str, Any], str | None, str]] = [
    ("announced, missing", {"capabilities": CAPS_REJECTION}, "password_required", "Password required"),
    (
        "announced, wrong",
        {"capabilities": CAPS_REJECTION, "auth": {"kind": "password", "password": "x"}},
        "incorrect_password",
        "Incorrect password",
    ),
    (
        "auth carried, wrong",
        {"auth": {"kind": "password", "password": "x"}},
        "incorrect_password",
        "Incorrect password",
    ),
    ("not announced, missing", {}, None, "Password required"),
]


@pytest.mark.parametrize("kind", [HostKind.CAPABLE, HostKind.SELECTIVE])
@pytest.mark.parametrize("case", HELLO_AUTH_CASES, ids=[c[0] for c in HELLO_AUTH_CASES])
def test_hello_auth_rejections(
    fakes: Fake, connect: Connect, kind: HostKind, case: tuple[str, dict[str, Any], str | None, str]
) -> None:
    _, extra, reason, close_reason = case
    client = connect(fakes(kind, password=PW))
    client.send(hello(**extra))
    if reason is not None:
        assert client.next_frame() == {"type": "hello.rejected", "reason": reason, "accepts": ["password"]}
    assert client.expect_close() == (4401, close_reason)


@pytest.mark.parametrize("kind", [HostKind.CAPABLE, HostKind.SELECTIVE])
def test_hello_auth_accepted(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    client = connect(fakes(kind, password=PW))
    client.handshake(hello(auth={"kind": "password", "password": PW}, capabilities=CAPS_REJECTION))


# -- sessions --------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_same_client_id_shares_responses_on_legacy_hosts(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    fake = fakes(kind)
    first, second, other = connect(fake), connect(fake), connect(fake)
    first.handshake(hello("shared"))
    second.handshake(hello("shared"))
    other.handshake(hello("someone-else"))
    assert len(fake.sessions["shared"].connections) == 2
    first.send_session("ping", requestId="from-first")
    assert first.message()[1]["requestId"] == "from-first"
    if kind is not HostKind.CAPABLE:
        assert second.message()[1]["requestId"] == "from-first"
    first.send_session("no_such_request", requestId="bad")  # validation errors go to the socket only
    assert first.message()[0] == "rpc_error"
    for client in (second, other):  # the next frame is the answer to the client's own request
        client.send_session("ping", requestId="own")
        assert client.message()[1]["requestId"] == "own"


def test_session_survives_reconnect_until_ttl(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.BROADCAST)
    connect(fake).handshake(hello("resume"))
    original = fake.sessions["resume"]
    fake.drop_connections()
    fake.wait_for_connections(0)
    connect(fake).handshake(hello("resume"))
    assert fake.sessions["resume"] is original
    expiring = fakes(HostKind.BROADCAST, session_ttl=0.0)
    connect(expiring).handshake(hello("resume"))
    before = expiring.sessions["resume"]
    expiring.drop_connections()
    expiring.wait_for_connections(0)
    assert "resume" not in expiring.sessions
    connect(expiring).handshake(hello("resume"))
    assert expiring.sessions["resume"] is not before


# -- scripting -------------------------------------------------------------------------------------


def test_reply_naming_rule() -> None:
    assert reply_type_for("fetch_agent_request") == "fetch_agent_response"
    assert reply_type_for("project.list.request") == "project.list.response"
    assert reply_type_for("a/b") == "a/b/response"
    assert reply_type_for("ping") == "pong"


@pytest.mark.parametrize("kind", [HostKind.CAPABLE, HostKind.BROADCAST])
def test_on_request_handlers(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    fake = fakes(kind)
    seen: list[RequestContext] = []

    def fetch(ctx: RequestContext) -> None:
        seen.append(ctx)
        ctx.reply({"agent": None, "error": None})

    def boom(ctx: RequestContext) -> None:
        raise RuntimeError("kaputt")

    fake.on_request("fetch_agent_request", fetch)
    fake.on_request("project.list.request", lambda ctx: ctx.rpc_error("Nope", "custom"))
    fake.on_request("archive_workspace_request", boom)
    client = connect(fake)
    client.handshake()
    client.send_session("fetch_agent_request", requestId="r1", agentId="a1")
    assert client.next_frame()["message"] == {
        "type": "fetch_agent_response",
        "payload": {"requestId": "r1", "agent": None, "error": None},
    }
    assert seen[0].message == {"type": "fetch_agent_request", "requestId": "r1", "agentId": "a1"}
    assert seen[0].request_id == "r1"
    assert seen[0].connection is fake.connections[0]
    assert seen[0].daemon is fake
    client.send_session("fetch_agent_request", requestId="r2")  # validation of the known type is kept
    assert client.message()[1]["code"] == "unknown_schema"
    client.send_session("project.list.request", requestId="r3")
    assert client.message() == (
        "rpc_error",
        {"requestId": "r3", "requestType": "project.list.request", "error": "Nope", "code": "custom"},
    )
    client.send_session("archive_workspace_request", requestId="r4", workspaceId="w")
    assert client.message() == (
        "rpc_error",
        {
            "requestId": "r4",
            "requestType": "archive_workspace_request",
            "error": "Request failed: kaputt",
            "code": "handler_error",
        },
    )
    kind_, payload = client.message()
    assert kind_ == "activity_log"
    assert payload["type"] == "error"


def test_push_and_wait_for_frame(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.BROADCAST)
    first, second = connect(fake), connect(fake)
    first.handshake(hello("a"))
    second.handshake(hello("b"))
    assert fake.push("agent_stream", {"agentId": "x"}) == 2
    for client in (first, second):
        assert client.message() == ("agent_stream", {"agentId": "x"})
    conn_b = fake.wait_for_connections(2)[1]
    fake.push("activity_log", {"n": 1}, connection=conn_b)
    assert second.message() == ("activity_log", {"n": 1})
    second.send_session("ping", requestId="p")
    frame = fake.wait_for_frame("ping")
    assert frame == session("ping", requestId="p")
    assert frame.connection is conn_b
    assert fake.wait_for_frame(lambda f: f.get("clientId") == "b") == hello("b")
    with pytest.raises(TimeoutError, match="fetch_agents_request"):  # every frame sent was seen above
        fake.wait_for_frame("fetch_agents_request", timeout=0)


# -- fault injection -------------------------------------------------------------------------------


def test_drop_and_close_connections(fakes: Fake, connect: Connect) -> None:
    fake = fakes()
    client = connect(fake)
    client.handshake()
    fake.drop_connections()
    assert client.next_event() == ("dropped",)
    client = connect(fake)
    client.handshake()
    fake.close_connections(4000, "bye")
    assert client.expect_close() == (4000, "bye")
    fake.wait_for_connections(0)
    assert fake.connections == []
    assert fake.accepted_count == 2


def test_peer_close_is_recorded(fakes: Fake, connect: Connect) -> None:
    fake = fakes()
    client = connect(fake)
    client.handshake()
    (conn,) = fake.wait_for_connections(1)
    client.close()
    conn.wait_ended()
    assert conn.peer_close_code == 1000
    assert conn.close_code is None
    assert not conn.dropped


def test_refuse_connections(fakes: Fake, frontend: str) -> None:
    fake = fakes()
    fake.refuse_connections = True
    if frontend == "memory":
        with pytest.raises(TransportError, match="connection refused"):
            fake.transport_factory().connect(ConnectParams(url="memory://fake", timeout=1.0))
    else:
        with pytest.raises(websocket.WebSocketBadStatusException) as info:
            websocket.create_connection(fake.serve(), timeout=5.0)
        assert info.value.status_code == 503
    assert fake.accepted_count == 0
    fake.refuse_connections = False
    assert fake.accepted_count == 0


def test_stall_handshake(fakes: Fake, connect: Connect) -> None:
    fake = fakes()
    fake.stall_handshake = True
    client = connect(fake)
    client.send(hello())
    client.send({"type": "ping"})
    assert client.next_frame() == {"type": "pong"}  # no server_info came first
    with pytest.raises(TimeoutError):  # the hello was handled before the ping: not handshaken
        fake.wait_for_connections(1, timeout=0)


def test_answer_pings_off(fakes: Fake, connect: Connect) -> None:
    fake = fakes()
    fake.answer_pings = False
    client = connect(fake)
    client.handshake()
    client.send({"type": "ping"})
    client.send_session("ping", requestId="s")
    kind, payload = client.message()
    assert (kind, payload["requestId"]) == ("pong", "s")
    fake.wait_for_frame(lambda f: f.get("type") == "ping")  # recorded although unanswered


def test_fail_next_and_ignore(fakes: Fake, connect: Connect) -> None:
    fake = fakes()
    client = connect(fake)
    client.handshake()
    fake.fail_next("ping")
    client.send_session("ping", requestId="f")
    assert client.message() == (
        "rpc_error",
        {"requestId": "f", "requestType": "ping", "error": "Injected failure", "code": "handler_error"},
    )
    fake.ignore("ping")
    client.send_session("ping", requestId="ignored")
    client.send({"type": "ping"})
    assert client.next_frame() == {"type": "pong"}
    fake.ignore("ping", enabled=False)
    client.send_session("ping", requestId="answered")
    assert client.message()[1]["requestId"] == "answered"


def test_send_raw(fakes: Fake, connect: Connect) -> None:
    fake = fakes()
    client = connect(fake)
    client.handshake()
    assert fake.send_raw("not json") == 1
    assert client.next_event() == ("text", "not json")
    fake.send_raw(b"\x00\x01", binary=True)
    assert client.next_event()[0] == "binary"
    fake.send_raw(b"\xff\xfe{}")  # last: the client's memory transport fails the connection on it
    assert client.next_event()[0] == "invalid"


# -- lifecycle -------------------------------------------------------------------------------------


def test_restart_on_loopback_reuses_port(fakes: Fake) -> None:
    fake = fakes(HostKind.BROADCAST)
    url = fake.serve()
    assert fake.serve() == url == fake.url
    with RawClient(fake, loopback=True) as client:
        client.handshake(hello("r"))
        fake.restart(downtime=0.5)
        assert client.next_event() == ("dropped",)
    assert fake.sessions == {}
    with pytest.raises(ConnectionRefusedError):
        websocket.create_connection(url, timeout=2.0)
    fake.wait_serving(5.0)
    assert fake.url == url
    with RawClient(fake, loopback=True) as again:
        again.handshake(hello("r"))


def test_restart_in_memory_refuses_during_downtime(fakes: Fake) -> None:
    fake = fakes()
    with RawClient(fake) as client:
        client.handshake()
        fake.restart(downtime=60.0)
        assert client.next_event() == ("dropped",)
    with pytest.raises(TransportError, match="connection refused"):
        fake.transport_factory().connect(ConnectParams(url="memory://fake", timeout=1.0))
    quick = fakes()
    quick.restart()
    with RawClient(quick) as client:
        client.handshake()


def test_close_leaves_no_thread(frontend: str) -> None:
    before = set(threading.enumerate())
    fake = FakeDaemon(HostKind.BROADCAST)
    clients = [RawClient(fake, loopback=frontend == "loopback") for _ in range(3)]
    for n, client in enumerate(clients):
        client.handshake(hello(f"t{n}"))
    started = [t for t in set(threading.enumerate()) - before if not t.name.startswith(READER_THREAD_PREFIX)]
    assert started
    assert all(t.daemon and t.name.startswith("fake-daemon") for t in started), started
    fake.close()
    fake.close()  # idempotent
    for client in clients:
        assert client.next_event()[0] in ("dropped", "close")
        client.close()
    leftover = [t for t in set(threading.enumerate()) - before if t.is_alive()]
    assert leftover == []
    with pytest.raises(TransportError):
        fake.transport_factory().connect(ConnectParams(url="memory://fake", timeout=1.0))


# -- transcript replay -----------------------------------------------------------------------------


def _transcript(name: str, conn: str, last_line: int) -> list[dict[str, Any]]:
    lines = (TRANSCRIPTS / name).read_text().splitlines()[:last_line]
    return [entry for entry in map(json.loads, lines) if entry["conn"] == conn]


def _shape(frame: Mapping[str, Any]) -> tuple[Any, ...]:
    if frame.get("type") != "session":
        return (frame["type"],)
    message = frame["message"]
    payload = message.get("payload", {})
    if message["type"] in ("status", "rpc_error", "pong"):
        return ("session", message["type"], payload.get("status"), frozenset(payload))
    return ("session", message["type"])


def _script_0165_agent_replies(fake: FakeDaemon) -> None:
    """Not-found answers as recorded in 09-errors (agents are a later extension of the fake)."""

    def not_found(ctx: RequestContext) -> str:
        return f"Agent not found: {ctx.message['agentId']}"

    fake.on_request("fetch_agent_request", lambda c: c.reply({"agent": None, "project": None, "error": not_found(c)}))
    fake.on_request(
        "wait_for_finish_request",
        lambda c: c.reply({"status": "error", "final": None, "error": not_found(c), "lastMessage": None}),
    )
    fake.on_request(
        "send_agent_message_request",
        lambda c: c.reply({"agentId": c.message["agentId"], "accepted": False, "error": not_found(c)}),
    )

    def cancel(ctx: RequestContext) -> None:
        if ctx.message["agentId"].startswith("709fadbd"):
            if ctx.request_id is not None:
                ctx.reply({"agentId": ctx.message["agentId"], "agent": {"id": ctx.message["agentId"]}})
        else:
            ctx.send("activity_log", {"id": "x", "timestamp": "t", "type": "error", "content": not_found(ctx)})

    fake.on_request("cancel_agent_request", cancel)


@pytest.mark.parametrize(("name", "last_line"), [("01-handshake.jsonl", 11), ("09-errors.jsonl", 28)])
def test_replay_transcript(fakes: Fake, connect: Connect, name: str, last_line: int) -> None:
    fake = fakes(HostKind.BROADCAST, server_id="srv_demo0000000", hostname="devbox")
    _script_0165_agent_replies(fake)
    client = connect(fake)
    for entry in _transcript(name, "c1", last_line):
        if entry["dir"] == "out" and "frame" in entry:
            client.send(entry["frame"])
        elif entry["dir"] == "out" and "raw" in entry:
            client.send(entry["raw"])
        elif entry["dir"] == "in" and "frame" in entry:
            got = client.next_frame()
            assert _shape(got) == _shape(entry["frame"]), f"line t={entry['t']}"
            if _shape(got)[:2] == ("session", "status") and got["message"]["payload"]["status"] == "server_info":
                assert got == entry["frame"]  # broadcast server_info is byte-for-byte the recorded one
        elif entry["dir"] == "in" and "close" in entry:
            assert client.expect_close() == (entry["close"]["code"], entry["close"]["reason"])
            return
        elif entry["dir"] == "out" and "close" in entry:
            return
