"""Connecting: handshake, server_info, host kinds, authentication, handshake failures; client
options checked at construction, and a client that cannot connect inside ``with`` or
``dc.connect()`` closed.

Each scenario runs over the in-memory transport and over a real loopback WebSocket, against
every host kind where the daemon's behaviour differs.
"""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.protocol import CLIENT_CAPABILITIES
from tests.helpers import supervisor_ended

from ..conftest import KINDS, TRANSPORTS, BackgroundConnect


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_connect_reports_server_info_and_host_kind(fakes, make_client, kind: str, transport: str) -> None:
    fake = fakes(kind)
    client = make_client(fake, transport)
    assert client.state is dc.ConnectionState.IDLE
    info = client.connect()
    assert client.state is dc.ConnectionState.CONNECTED
    assert client.server_info == info
    assert info.server_id == "srv-fake"
    assert client.host_kind is dc.HostKind(kind)
    hello = fake.wait_for_frame("hello")
    assert hello["clientId"] == client.client_id
    assert hello["clientId"].startswith("daemon-client-")
    assert hello["clientType"] == "cli"
    assert hello["protocolVersion"] == 1
    assert hello["appVersion"] == "0.1.65"
    assert hello["capabilities"] == dict(CLIENT_CAPABILITIES)
    assert "auth" not in hello


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_broadcast_host_server_info_matches_recorded_daemon(fakes, make_client, transport: str) -> None:
    client = make_client(fakes("broadcast"), transport)
    info = client.connect()
    assert info.version == "0.1.65-beta.5"
    assert info.protocol_version is None
    assert info.features == {"providersSnapshot": True}


def test_client_ids_are_unique_and_stable_across_reconnects(fakes, make_client) -> None:
    fake = fakes("capable")
    first, second = make_client(fake), make_client(fake)
    assert first.client_id != second.client_id
    first.connect()
    original = fake.wait_for_frame("hello").connection
    fake.drop_connections()
    fake.wait_for_frame(lambda f: f.get("type") == "hello" and f.connection is not original)
    hellos = [f for f in fake.received if f.get("type") == "hello"]
    assert {h["clientId"] for h in hellos} == {first.client_id}


def test_connect_is_a_context_manager_and_module_helper(fakes) -> None:
    fake = fakes("capable")
    with dc.connect("ws://x/ws", transport_factory=fake.transport_factory, strict=True) as client:
        assert client.state is dc.ConnectionState.CONNECTED
    assert client.state is dc.ConnectionState.DISPOSED
    with dc.Client("ws://x/ws", transport_factory=fake.transport_factory) as other:
        assert other.server_info is not None


def test_connect_closes_the_client_it_could_not_connect(fakes) -> None:
    fake = fakes("capable")
    fake.refuse_connections = True
    with pytest.raises(dc.ConnectionLost, match="Cannot connect"):
        dc.connect("ws://fake-daemon/ws", transport_factory=fake.transport_factory)
    fake.refuse_connections = False
    with dc.connect("ws://fake-daemon/ws", transport_factory=fake.transport_factory) as client:
        assert client.state is dc.ConnectionState.CONNECTED
    assert client.state is dc.ConnectionState.DISPOSED


def test_a_client_that_cannot_connect_in_a_with_block_is_closed_without_running_it(fakes) -> None:
    fake = fakes("capable")
    fake.refuse_connections = True
    client = dc.Client("ws://fake-daemon/ws", transport_factory=fake.transport_factory)
    with pytest.raises(dc.ConnectionLost, match="Cannot connect"), client:
        pytest.fail("the block must not run")
    assert client.state is dc.ConnectionState.DISPOSED


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"connect_timeout": 0}, "timeouts must be > 0"),
        ({"request_timeout": -1.0}, "timeouts must be > 0"),
        ({"max_frame_bytes": 1024}, "max_frame_bytes must be an integer of at least 4096, got 1024"),
        ({"max_frame_bytes": True}, "max_frame_bytes must be an integer of at least 4096, got True"),
    ],
)
def test_client_options_are_checked_at_construction(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        dc.Client("ws://fake-daemon/ws", **options)


def test_an_app_version_that_is_no_version_is_warned_about(fakes, caplog) -> None:
    fake = fakes("capable")
    client = dc.Client("ws://fake-daemon/ws", transport_factory=fake.transport_factory, app_version="nightly")
    try:
        assert "app_version 'nightly' is below 0.1.45 or not a version" in caplog.text
    finally:
        client.close()


def test_url_and_password_default_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path, fakes) -> None:
    fake = fakes("capable", password="env-Pass1")
    url = fake.serve()
    monkeypatch.setenv("PASEO_HOME", str(tmp_path))
    monkeypatch.setenv("PASEO_HOST", url)
    monkeypatch.setenv("PASEO_PASSWORD", "env-Pass1")
    monkeypatch.delenv("PASEO_LISTEN", raising=False)
    with dc.connect(strict=True) as client:
        assert client.url == url
        assert client.server_info is not None
    monkeypatch.delenv("PASEO_HOST")
    assert dc.Client().url == dc.DEFAULT_URL


# ---------------------------------------------------------------------------- authentication


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_password_is_accepted(fakes, make_client, kind: str, transport: str) -> None:
    fake = fakes(kind, password="s3cret-Token")
    client = make_client(fake, transport, password="s3cret-Token")
    client.connect()
    assert client.state is dc.ConnectionState.CONNECTED
    hello = fake.wait_for_frame("hello")
    assert hello["auth"] == {"kind": "password", "password": "s3cret-Token"}
    connection = hello.connection
    assert "paseo.bearer.s3cret-Token" in connection.subprotocols
    headers = {k.lower(): v for k, v in connection.headers.items()}
    assert headers["authorization"] == "Bearer s3cret-Token"
    assert "origin" not in headers


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_wrong_password_raises_without_retrying(fakes, make_client, kind: str, transport: str) -> None:
    fake = fakes(kind, password="s3cret-Token")
    client = make_client(fake, transport, password="wrong")
    with pytest.raises(dc.AuthenticationError, match=r"[Ii]ncorrect password") as info:
        client.connect()
    assert info.value.reason
    assert client.state is dc.ConnectionState.DISCONNECTED
    assert isinstance(client.last_error, dc.AuthenticationError)
    assert supervisor_ended(client)  # it gave up: no attempt can follow
    assert fake.accepted_count == 1


@pytest.mark.parametrize("kind", KINDS)
def test_missing_password_says_how_to_give_one(fakes, make_client, kind: str) -> None:
    fake = fakes(kind, password="s3cret-Token")
    client = make_client(fake)
    with pytest.raises(dc.AuthenticationError, match="PASEO_PASSWORD"):
        client.connect()
    assert fake.accepted_count == 1


def test_password_that_is_not_token_safe(fakes, make_client) -> None:
    """Only hello.auth can carry it: capable hosts accept it, 0.1.65 cannot, and the error says why."""
    password = "pass word/ü"
    capable = make_client(fakes("capable", password=password), password=password)
    capable.connect()
    hello_conn = capable.server_info
    assert hello_conn is not None
    broadcast_fake = fakes("broadcast", password=password)
    broadcast = make_client(broadcast_fake, password=password)
    with pytest.raises(dc.AuthenticationError, match="subprotocol"):
        broadcast.connect()
    assert broadcast_fake.wait_for_frame("hello", timeout=1) if broadcast_fake.received else True
    offered = broadcast_fake.core.connections() or []
    assert all(not c.subprotocols for c in offered)


def test_password_never_appears_in_logs(fakes, make_client, caplog: pytest.LogCaptureFixture) -> None:
    client = make_client(fakes("capable", password="s3cret-Token"), password="s3cret-Token")
    client.connect()
    client.ping()
    assert caplog.records
    assert all("s3cret-Token" not in record.getMessage() for record in caplog.records)


# ---------------------------------------------------------------------------- handshake failures


def _stalled_hello(fake):
    fake.stall_handshake = True
    return fake


@pytest.mark.parametrize(
    ("code", "reason", "error"),
    [
        (4003, "Incompatible protocol version", dc.ProtocolVersionError),
        (4002, "Invalid hello", dc.ProtocolError),
        (4401, "Password required", dc.AuthenticationError),
    ],
)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_terminal_close_codes_raise_and_stop(fakes, make_client, transport, code, reason, error) -> None:  # noqa: PLR0917
    fake = _stalled_hello(fakes("capable"))
    client = make_client(fake, transport)
    connecting = BackgroundConnect(client)
    fake.wait_for_frame("hello").connection.close(code, reason)
    outcome = connecting.result()
    assert isinstance(outcome, error)
    assert reason in str(outcome)
    assert client.state is dc.ConnectionState.DISCONNECTED
    assert supervisor_ended(client)  # it gave up: no attempt can follow
    assert fake.accepted_count == 1


def test_hello_rejected_incompatible_protocol_is_a_protocol_version_error(fakes, make_client) -> None:
    fake = _stalled_hello(fakes("capable"))
    connecting = BackgroundConnect(make_client(fake))
    connection = fake.wait_for_frame("hello").connection
    connection.send_frame({"type": "hello.rejected", "reason": "incompatible_protocol"})
    connection.close(4003, "Incompatible protocol version")
    outcome = connecting.result()
    assert isinstance(outcome, dc.ProtocolVersionError)
    assert "incompatible_protocol" in str(outcome)


def test_hello_rejected_without_close_still_fails_fast(fakes, make_client) -> None:
    fake = _stalled_hello(fakes("capable"))
    connecting = BackgroundConnect(make_client(fake))
    connection = fake.wait_for_frame("hello").connection
    connection.send_frame({"type": "hello.rejected", "reason": "incorrect_password", "accepts": ["password"]})
    outcome = connecting.result()
    assert isinstance(outcome, dc.AuthenticationError)
    assert outcome.reason == "incorrect password"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_stalled_handshake_times_out(fakes, make_client, transport: str) -> None:
    fake = _stalled_hello(fakes("capable"))
    client = make_client(fake, transport, connect_timeout=0.3)
    with pytest.raises(dc.ConnectTimeout, match="server_info"):
        client.connect()
    assert client.state is dc.ConnectionState.DISCONNECTED


def test_dead_daemon_gives_a_clear_error_quickly() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = dc.Client(f"ws://127.0.0.1:{port}/ws", connect_timeout=5)
    try:
        with pytest.raises(dc.ConnectionLost, match=f"Cannot connect to ws://127.0.0.1:{port}/ws") as info:
            client.connect()
        assert "daemon running" in str(info.value)
        assert client.state is dc.ConnectionState.DISCONNECTED
    finally:
        client.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_refused_connection_is_connection_lost(fakes, make_client, transport: str) -> None:
    fake = fakes("capable")
    fake.refuse_connections = True
    client = make_client(fake, transport)
    with pytest.raises(dc.ConnectionLost, match="Cannot connect"):
        client.connect()


def test_retry_initial_connect_keeps_trying_until_the_daemon_appears(fakes, make_client) -> None:
    fake = fakes("capable")
    fake.refuse_connections = True
    client = make_client(
        fake, reconnect=dc.ReconnectPolicy(base_delay=0.02, max_delay=0.05, retry_initial_connect=True)
    )
    connecting = BackgroundConnect(client)
    deadline = time.monotonic() + 5
    while fake.accepted_count < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    fake.refuse_connections = False
    assert isinstance(connecting.result(), dc.ServerInfo)
    assert client.state is dc.ConnectionState.CONNECTED
