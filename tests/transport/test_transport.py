"""The websocket-client transport against a real loopback server: TLS, headers, frames."""

from __future__ import annotations

import ssl

import pytest
import trustme

import daemon_client as dc
from daemon_client.testing import RecordingHandler
from daemon_client.transport import ConnectParams, TransportError, WebSocketTransport


@pytest.fixture(scope="module")
def tls() -> trustme.CA:
    return trustme.CA()


def _server_context(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    return context


def test_wss_with_an_ssl_context(fakes, tls: trustme.CA) -> None:
    fake = fakes("capable", password="s3cret-Token")
    url = fake.serve(ssl_context=_server_context(tls))
    assert url.startswith("wss://127.0.0.1:")
    client_context = ssl.create_default_context()
    tls.configure_trust(client_context)
    with dc.connect(url, ssl_context=client_context, password="s3cret-Token", strict=True) as client:
        assert client.ping().round_trip is not None
        assert client.host_kind is dc.HostKind.CAPABLE


def test_wss_with_an_untrusted_certificate_is_a_clear_connect_error(fakes, tls: trustme.CA) -> None:
    fake = fakes("capable")
    url = fake.serve(ssl_context=_server_context(tls))
    client = dc.Client(url, ssl_context=ssl.create_default_context())
    try:
        with pytest.raises(dc.ConnectionLost, match=r"CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
            client.connect()
    finally:
        client.close()


def test_upgrade_rejected_is_a_transport_error(fakes) -> None:
    fake = fakes("capable")
    url = fake.serve()
    fake.refuse_connections = True
    transport = WebSocketTransport()
    with pytest.raises(TransportError, match="HTTP 503"):
        transport.connect(ConnectParams(url=url, timeout=5))
    transport.close()


def test_no_origin_header_and_bearer_subprotocol_echoed(fakes) -> None:
    fake = fakes("broadcast", password="s3cret-Token")
    transport = WebSocketTransport()
    transport.connect(ConnectParams(url=fake.serve(), timeout=5, subprotocols=("paseo.bearer.s3cret-Token",)))
    try:
        transport.send_text('{"type":"hello","clientId":"t","clientType":"cli","protocolVersion":1}')
        connection = fake.wait_for_frame("hello").connection
        headers = {name.lower() for name in connection.headers}
        assert "origin" not in headers
        assert connection.subprotocols == ("paseo.bearer.s3cret-Token",)
        assert (transport.selected_subprotocol or "").lower() == "paseo.bearer.s3cret-token"
        assert '"server_info"' in transport.recv()
    finally:
        transport.close()


def test_large_frames_round_trip(fakes) -> None:
    fake = fakes("capable")
    fake.on_request("big_request", lambda ctx: ctx.reply({"blob": "é" * 300_000}))
    with dc.connect(fake.serve(), strict=True) as client:
        pushes = RecordingHandler[dc.SessionMessage]("pushes")
        client.add_push_listener(pushes)
        assert len(client.request({"type": "big_request"})["blob"]) == 300_000
        fake.push("chunk", {"text": "ü" * 70_000})
        assert len(pushes.wait_for(1)[0].payload["text"]) == 70_000
