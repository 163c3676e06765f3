"""A client given only a pairing-offer link, through a fake relay to a fake daemon in relay mode.

Covers the end-to-end path (agents, timelines, on every host kind), that the relay hop never
carries plaintext, relay and daemon restarts, the handshake's resent hello and its timeout,
fatal frames from the daemon's side, binary payloads, stale offers, a refused upgrade, the
password rule, the secrecy of the offer, and the command line.
"""

from __future__ import annotations

import base64
import io
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.cli import main
from daemon_client.state import ConnectionState
from daemon_client.testing import FakeRelay, RecordingHandler
from daemon_client.transport.base import ConnectParams, TransportError

from ..conftest import KINDS, BackgroundConnect

pytest.importorskip("nacl", reason="relay tests need the relay extra (PyNaCl)")

POLICY = dc.ReconnectPolicy(base_delay=0.05, max_delay=0.2, stable_after=0.5)
HANDSHAKE = ("e2ee_hello", "e2ee_ready")
StateLog = RecordingHandler[tuple[ConnectionState, ConnectionState, str]]


@pytest.fixture
def relay() -> Iterator[FakeRelay]:
    with FakeRelay() as hub:
        hub.start()
        yield hub


@pytest.fixture
def clients() -> Iterator[Callable[..., dc.Client]]:
    made: list[dc.Client] = []

    def make(target: str | dc.RelayTarget, **options: Any) -> dc.Client:
        options.setdefault("reconnect", POLICY)
        options.setdefault("connect_timeout", 5.0)
        client = dc.Client(target, **options)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def _handshake_type(data: str | bytes) -> str | None:
    if isinstance(data, bytes) or not data.startswith("{"):
        return None
    kind = json.loads(data).get("type")
    assert kind in HANDSHAKE, f"plaintext crossed the relay: {data[:80]!r}"
    return str(kind)


def _assert_opaque(hub: FakeRelay, secrets: list[str]) -> None:
    """Every forwarded frame is a handshake frame or a sealed frame, and holds none of ``secrets``."""
    frames = hub.forwarded
    assert frames
    for frame in frames:
        data = frame.data
        assert isinstance(data, str)
        if _handshake_type(data) is None:
            raw = base64.b64decode(data, validate=True)
            assert len(raw) >= 40
        for secret in secrets:
            assert secret not in data


def _states(client: dc.Client) -> StateLog:
    log: StateLog = RecordingHandler("states")
    client.on_state_change(log)
    return log


def _connected_again(log: StateLog, times: int = 2, timeout: float = 15.0) -> None:
    log.wait_for(times, predicate=lambda change: change[1] is ConnectionState.CONNECTED, timeout=timeout)


# ------------------------------------------------------------------------------ end to end


@pytest.mark.parametrize("kind", KINDS)
def test_an_offer_link_alone_reaches_agents_and_timelines(fakes, clients, kind: str) -> None:
    fake = fakes(kind)
    agent_id = fake.agents.upsert(title="remote-agent-title")["id"]
    link = fake.serve_relay()
    client = clients(link)
    info = client.connect()
    assert info.server_id == fake.config.server_id
    assert client.host_kind is not None
    assert client.host_kind.value == kind
    assert [e.agent.title for e in client.agents.list().entries] == ["remote-agent-title"]
    seen = RecordingHandler[dc.TimelineUpdate]("seen")
    client.agents.ref(agent_id).timeline.subscribe(seen).ready.result(5)
    fake.timeline.append(agent_id, {"type": "assistant_message", "text": "secret-stream-text"})
    assert seen.wait_for(1)[0].event.item.text == "secret-stream-text"
    assert client.ping().round_trip is not None
    stats = client.relay_stats
    assert stats is not None
    assert stats.handshakes == 1
    assert stats.rejected_frames == 0
    hello = fake.wait_for_frame("hello")
    assert "auth" not in hello
    _assert_opaque(
        fake.relay.relay,
        [
            '"hello"',
            "server_info",
            "fetch_agents",
            "remote-agent-title",
            "agent_stream",
            "secret-stream-text",
            agent_id,
            client.client_id,
        ],
    )


def test_the_relay_gets_a_client_socket_without_credentials(fakes, clients) -> None:
    fake = fakes("capable", password="hunter2-password")
    link = fake.serve_relay()
    client = clients(link, password="hunter2-password")
    client.connect()  # a 0.1.65 daemon does not check the password on relay sockets
    assert "auth" not in fake.wait_for_frame("hello")
    (path, headers), *_ = [r for r in fake.relay.relay.requests if "role=client" in r[0]]
    assert path == f"/ws?serverId={fake.config.server_id}&role=client&v=2"
    lowered = {name.lower() for name in headers}
    assert not lowered & {"authorization", "sec-websocket-protocol", "origin"}
    _assert_opaque(fake.relay.relay, ["hunter2-password"])


def test_every_socket_has_its_own_keypair(fakes, clients) -> None:
    fake = fakes()
    client = clients(fake.serve_relay())
    client.connect()
    log = _states(client)
    fake.drop_connections()
    _connected_again(log)
    keys = {
        json.loads(f.data)["key"]
        for f in fake.relay.relay.forwarded
        if isinstance(f.data, str) and _handshake_type(f.data) == "e2ee_hello"
    }
    assert len(keys) == 2
    assert client.relay_stats is not None
    assert client.relay_stats.handshakes == 2


# ------------------------------------------------------------------------------ restarts


@pytest.mark.parametrize("kind", KINDS)
def test_survives_a_relay_restart(fakes, clients, relay: FakeRelay, kind: str) -> None:
    fake = fakes(kind)
    agent_id = fake.agents.upsert(title="a")["id"]
    client = clients(fake.serve_relay(relay))
    client.connect()
    seen = RecordingHandler[dc.TimelineUpdate]("seen")
    client.agents.ref(agent_id).timeline.subscribe(seen).ready.result(5)
    log = _states(client)
    relay.restart()
    _connected_again(log)
    seen.wait_for(predicate=lambda u: u.type == "subscription_restored", timeout=10)
    fake.timeline.append(agent_id, {"type": "assistant_message", "text": "after the relay restart"})
    seen.wait_for(predicate=lambda u: u.type == "timeline")
    assert [e.agent.id for e in client.agents.list().entries] == [agent_id]


@pytest.mark.parametrize("kind", KINDS)
def test_survives_a_daemon_restart(fakes, clients, relay: FakeRelay, kind: str) -> None:
    fake = fakes(kind)
    agent_id = fake.agents.upsert(title="a")["id"]
    client = clients(fake.serve_relay(relay))
    client.connect()
    events: RecordingHandler[Any] = RecordingHandler("events")
    result = client.agents.list(subscribe=True)
    result.subscription.subscribe(snapshot=lambda s: events(("snapshot", len(s.entries))))
    events.wait_for(1)
    log = _states(client)
    fake.restart(downtime=0.2)
    _connected_again(log)
    events.wait_for(2)  # a new snapshot after the reconnect
    assert events.items[-1] == ("snapshot", 1)
    assert [e.agent.id for e in client.agents.list().entries] == [agent_id]
    assert client.relay_stats is not None
    assert client.relay_stats.unconfirmed_closes == 0


# ------------------------------------------------------------------------------ handshake


def test_the_hello_is_resent_until_the_daemon_answers(fakes, clients) -> None:
    with FakeRelay(buffer_limit=0) as hub:  # frames sent before the daemon attaches are lost
        hub.start()
        fake = fakes()
        link = fake.serve_relay(hub)
        fake.relay.restart(downtime=60)  # the daemon leaves the relay for now
        client = clients(link)
        pending = BackgroundConnect(client)
        hub.wait_for_clients(fake.config.server_id)
        fake.relay.restart(downtime=0)  # it comes back and opens the data socket; the first hello is lost
        assert isinstance(pending.result(), dc.ServerInfo)
        first = next(f for f in hub.forwarded if f.direction == "to_daemon")
        assert _handshake_type(first.data) == "e2ee_hello"  # a resent one: the first went nowhere
        assert client.relay_stats is not None
        assert client.relay_stats.handshakes == 1


def test_no_daemon_behind_the_server_id_is_a_connect_timeout(clients, relay: FakeRelay) -> None:
    client = clients(dc.RelayTarget(relay.endpoint, "srv_nobody", b"\x09" * 32), connect_timeout=0.5)
    with pytest.raises(dc.ConnectTimeout):
        client.connect()
    assert client.relay_stats is not None
    assert client.relay_stats.handshake_failures == 1
    assert client.state is ConnectionState.DISCONNECTED


def test_a_close_before_server_info_is_transient(fakes, clients) -> None:
    fake = fakes()
    link = fake.serve_relay()
    fake.refuse_connections = True  # the daemon's side closes each data socket: the client sees 1012
    client = clients(link, reconnect=dc.ReconnectPolicy(base_delay=0.05, max_delay=0.2, retry_initial_connect=True))
    log = _states(client)
    pending = BackgroundConnect(client)
    failure = log.wait_for(predicate=lambda change: change[1] is ConnectionState.DISCONNECTED)[0]
    assert "reconnecting" in failure[2]
    assert isinstance(client.last_error, dc.ConnectionLost)
    fake.refuse_connections = False
    assert isinstance(pending.result(), dc.ServerInfo)


def test_a_refused_upgrade_is_a_configuration_error(clients) -> None:
    import websocket

    class Refused:
        def connect(self, params: ConnectParams) -> None:
            try:
                raise websocket.WebSocketBadStatusException("Handshake status %d %s", 400, "Bad Request")
            except websocket.WebSocketBadStatusException as exc:
                raise TransportError("the server refused the WebSocket upgrade (HTTP 400)") from exc

        def abort(self) -> None: ...

        def close(self, code: int = 1000, reason: str = "") -> None: ...

    link = dc.RelayTarget("127.0.0.1:9", "srv_x", b"\x09" * 32).offer_link()
    client = clients(link, transport_factory=Refused)
    with pytest.raises(dc.PairingError, match="HTTP 400") as raised:
        client.connect()
    assert "paseo daemon pair" in str(raised.value)


# ------------------------------------------------------------------------------ bad frames


@pytest.mark.parametrize(
    "frame",
    [
        "not base64 at all!",
        base64.b64encode(b"\x00" * 64).decode(),
        '{"type":"session","message":{"type":"agent_update","payload":{"kind":"remove","agentId":"x"}}}',
    ],
    ids=["garbage", "wrong-key", "plaintext"],
)
def test_a_frame_that_breaks_the_channel_ends_the_socket_undelivered(fakes, clients, frame: str) -> None:
    fake = fakes()
    client = clients(fake.serve_relay())
    client.connect()
    pushes = RecordingHandler("pushes")
    client.add_push_listener(pushes)
    log = _states(client)
    assert fake.relay.inject_unsealed(frame) == 1
    _connected_again(log)
    client.ping()
    assert client.flush_callbacks()
    assert pushes.items == []
    stats = client.relay_stats
    assert stats is not None
    assert stats.rejected_frames == 1
    assert stats.handshakes == 2


def test_a_sealed_frame_the_relay_sends_again_is_refused_and_the_client_reconnects(fakes, clients) -> None:
    """Over loopback: the relay repeats a sealed push it forwarded; the push is heard once, the
    socket is closed as for a tampered frame, counted, and the client reconnects."""
    fake = fakes()
    client = clients(fake.serve_relay())
    client.connect()
    pushes = RecordingHandler("pushes")
    client.add_push_listener(pushes, ["replay_probe"])
    log = _states(client)
    client.ping()
    fake.relay.relay.clear_forwarded()
    fake.push("replay_probe", {"n": 1})
    pushes.wait_for(1)
    sealed = next(f.data for f in fake.relay.relay.forwarded if f.direction == "to_client")
    assert isinstance(sealed, str)
    assert fake.relay.inject_unsealed(sealed) == 1  # the same ciphertext, again, on the same socket
    _connected_again(log)
    client.ping()
    assert client.flush_callbacks()
    assert len(pushes.items) == 1
    stats = client.relay_stats
    assert stats is not None
    assert stats.rejected_frames == 1
    assert stats.handshakes == 2


def test_a_payload_that_is_not_utf8_is_a_binary_message_and_the_socket_stays(fakes, clients, caplog) -> None:
    fake = fakes()
    client = clients(fake.serve_relay())
    client.connect()
    assert fake.send_raw(b"\xff\xfe terminal bytes") == 1
    client.ping()
    assert any("binary frame" in r.getMessage() for r in caplog.records)  # delivered upward as binary
    stats = client.relay_stats
    assert stats is not None
    assert stats.handshakes == 1
    assert stats.rejected_frames == 0


def test_late_handshake_answers_are_skipped(fakes, clients) -> None:
    fake = fakes()
    client = clients(fake.serve_relay())
    client.connect()
    assert fake.relay.inject_unsealed('{"type":"e2ee_ready"}') == 1
    assert client.ping().round_trip is not None
    assert client.relay_stats is not None
    assert client.relay_stats.handshakes == 1


# ------------------------------------------------------------------------------ stale offers


def test_a_stale_offer_ends_in_a_pairing_error(fakes, clients) -> None:
    fake = fakes()
    client = clients(fake.serve_relay())
    client.connect()
    log = _states(client)
    fake.relay.rotate_key()  # the daemon lost its key file: the offer is stale
    fake.drop_connections()
    log.wait_for(predicate=lambda change: isinstance(client.last_error, dc.PairingError), timeout=15)
    error = client.last_error
    assert isinstance(error, dc.PairingError)
    assert "paseo daemon pair" in str(error)
    assert client.state is ConnectionState.DISCONNECTED
    stats = client.relay_stats
    assert stats is not None
    assert stats.unconfirmed_closes == 2
    with pytest.raises(dc.PairingError):
        client.connect()  # a fresh attempt counts on: still stale


def test_a_stale_offer_at_the_first_connect(fakes, clients) -> None:
    fake = fakes()
    stale = fake.serve_relay()
    fake.relay.rotate_key()
    first = clients(stale)
    with pytest.raises(dc.ConnectionLost, match="stale"):
        first.connect()  # one close alone may be a restart: transient, and it says what it may be
    retrying = clients(stale, reconnect=dc.ReconnectPolicy(base_delay=0.05, max_delay=0.2, retry_initial_connect=True))
    with pytest.raises(dc.PairingError):
        retrying.connect()
    fresh = clients(fake.relay.offer_link)
    assert fresh.connect().server_id == fake.config.server_id


# ------------------------------------------------------------------------------ secrecy, CLI


def test_the_offer_never_reaches_logs_errors_or_reprs(fakes, clients, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    fake = fakes()
    link = fake.serve_relay()
    key_b64 = base64.b64encode(fake.relay.public_key).decode()
    client = clients(link, password="pw-unused")
    client.connect()
    log = _states(client)
    fake.relay.inject_unsealed("garbage!")
    _connected_again(log)
    fake.relay.rotate_key()
    fake.drop_connections()
    log.wait_for(predicate=lambda change: isinstance(client.last_error, dc.PairingError), timeout=15)
    texts = [r.getMessage() for r in caplog.records]
    texts += [repr(client), client.url, str(client.last_error), client.resolution.describe(), repr(client.resolution)]
    payload = link.split("#offer=", 1)[1]
    for text in texts:
        assert payload not in text
        assert key_b64 not in text
        assert key_b64.rstrip("=").replace("+", "-").replace("/", "_") not in text


def test_cli_info_through_the_relay(fakes, monkeypatch) -> None:
    for name in ("PASEO_HOST", "PASEO_LISTEN", "PASEO_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    fake = fakes()
    link = fake.serve_relay()
    out = io.StringIO()
    assert main(["info", "--host", link, "--timeout", "5"], out=out) == 0
    text = out.getvalue()
    assert f"connected to relay://{fake.relay.relay.endpoint}/{fake.config.server_id}" in text
    assert f"through the relay {fake.relay.relay.endpoint} (no TLS), end-to-end encrypted" in text
    assert link.split("#offer=", 1)[1] not in text
    monkeypatch.setenv("PASEO_HOST", link)
    out = io.StringIO()
    assert main(["agents", "--json", "--timeout", "5"], out=out) == 0
    assert json.loads(out.getvalue()) == []
