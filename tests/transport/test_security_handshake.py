"""The handshake policy: credentials never leave for the wrong place, a hostile answer cannot
exhaust the client.

Raw servers on loopback (``tests/raw_server.py``) answer the upgrade as a hostile or broken
server would: redirects (also from ``wss://`` to ``ws://``), cookies, an endless header line,
too many headers, an unrequested ``permessage-deflate``, a subprotocol nobody offered, a wrong
accept value. Also here: URLs with user-info and ``ssl_context`` with ``ws://`` are refused
before anything is sent, clear-text credentials to another host are warned about once (or
refused with ``allow_insecure_credentials=False``), and ``auth_header`` travels only without a
password. Every test also checks that the planted secret appears in no error and no log line.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
import traceback
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

import daemon_client as dc
from daemon_client.transport.base import ConnectParams, TransportError
from daemon_client.transport.handshake_policy import is_loopback_host, parse_target
from daemon_client.transport.websocket import WebSocketTransport

from ..raw_server import Peer, RawServer, RawServers

MARK = "Hx4Secret"
PASSWORD = f"tok-{MARK}-pw"
NO_RETRY = dc.ReconnectPolicy(enabled=False)


@pytest.fixture
def servers() -> Iterator[RawServers]:
    made = RawServers()
    yield made
    made.close()


def everything(caplog: pytest.LogCaptureFixture, *errors: BaseException) -> str:
    parts = [record.getMessage() for record in caplog.records]
    for error in errors:
        parts += [str(error), repr(error), *traceback.format_exception(error)]
    return "\n".join(parts)


def assert_secret(text: str) -> None:
    assert MARK not in text, f"the secret leaked: …{text[max(0, text.find(MARK) - 80) : text.find(MARK) + 40]}…"


def connect_error(url: str, **options: Any) -> BaseException:
    """What ``connect()`` raises for ``url`` (a fresh client, closed afterwards)."""
    options.setdefault("connect_timeout", 5)
    options.setdefault("reconnect", NO_RETRY)
    client = dc.Client(url, **options)
    try:
        with pytest.raises(dc.DaemonClientError) as failure:
            client.connect()
        return failure.value
    finally:
        client.close()


def serving_nothing(peer: Peer) -> None:
    """A script for a server that must never be reached."""
    raise AssertionError(f"this server was reached: {peer.request_line}")


# ----------------------------------------------------------------------------- redirects


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_not_followed_and_the_error_names_the_location(servers, caplog, status: int) -> None:
    elsewhere = servers(serving_nothing)
    redirecting = servers(
        lambda peer: peer.send(f"HTTP/1.1 {status} Moved\r\nLocation: {elsewhere.url}\r\n\r\n".encode())
    )
    error = connect_error(redirecting.url, password=PASSWORD)
    assert isinstance(error, dc.ConnectionLost)
    assert f"HTTP {status}" in str(error)
    assert elsewhere.url in str(error)
    assert "not followed" in str(error)
    assert elsewhere.accepted == 0  # nothing, credentials least of all, went to the other server
    assert redirecting.accepted == 1
    assert_secret(everything(caplog, error))


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def test_a_redirect_from_wss_to_ws_is_refused(servers, ca, caplog) -> None:
    plain = servers(serving_nothing)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    location = f"HTTP/1.1 302 Found\r\nLocation: {plain.url}\r\n\r\n".encode()
    secure = servers(lambda peer: peer.send(location), ssl_context=server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    error = connect_error(secure.url, password=PASSWORD, ssl_context=client_context)
    assert "redirects" in str(error)
    assert plain.url in str(error)
    assert plain.accepted == 0
    assert secure.peers[0].header("authorization") == f"Bearer {PASSWORD}"  # sent only inside TLS
    assert_secret(everything(caplog, error))


def test_a_location_with_user_info_is_shown_without_it(servers, caplog) -> None:
    server = servers(
        lambda peer: peer.send(f"HTTP/1.1 307 X\r\nLocation: ws://u:{MARK}@elsewhere:1/ws\r\n\r\n".encode())
    )
    error = connect_error(server.url)
    assert "ws://***@elsewhere:1/ws" in str(error)
    assert_secret(everything(caplog, error))


def test_the_client_url_is_where_it_connected(servers) -> None:
    """No redirect is followed, so ``client.url`` is the URL given, always the one connected to."""

    def script(peer: Peer) -> None:
        peer.upgrade()
        peer.drain()  # the hello; the server answers nothing

    server = servers(script)
    client = dc.Client(server.url, connect_timeout=0.5, reconnect=NO_RETRY)
    try:
        with pytest.raises(dc.ConnectTimeout):
            client.connect()
        assert client.url == server.url
    finally:
        client.close()


# ----------------------------------------------------------------------------- cookies


def test_cookies_are_neither_stored_nor_sent(servers) -> None:
    cookies = [
        b"Set-Cookie: session=abc; Path=/",
        b"Set-Cookie: other=1; Domain=127.0.0.1",
        b"Set-Cookie: x=y; Domain=.example",
    ]

    def script(peer: Peer) -> None:
        peer.upgrade(*cookies)
        peer.drain()

    first = servers(script)
    second = servers(script)
    for url in (first.url, first.url, second.url):
        transport = WebSocketTransport()
        try:
            transport.connect(ConnectParams(url=url, timeout=5))
            transport.send_text('{"type":"hello"}')
        finally:
            transport.close()
    requests = first.peers + second.peers
    assert len(requests) == 3
    assert [peer.header("cookie") for peer in requests] == [None, None, None]


# ----------------------------------------------------------------------------- bounded answers


def rss_bytes() -> int:
    """This process's resident set size, from /proc (the suite runs on Linux)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def test_an_endless_header_line_fails_fast_in_bounded_memory(servers, caplog) -> None:
    sent = [0]
    stop = threading.Event()

    def script(peer: Peer) -> None:
        peer.send(b"HTTP/1.1 101 Switching Protocols\r\nX-Endless: ")
        chunk = b"a" * 65536
        while not stop.is_set() and sent[0] < 64 * 1024 * 1024:  # until the client hangs up (or 64 MiB)
            peer.send(chunk)
            sent[0] += len(chunk)

    server = servers(script)
    before = rss_bytes()
    tracemalloc.start()
    try:
        error = connect_error(server.url, password=PASSWORD)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        stop.set()
    grown = rss_bytes() - before
    assert "line over 8192 bytes" in str(error)
    assert peak < 2 * 1024 * 1024, f"{peak} bytes allocated while refusing the answer"
    assert grown < 32 * 1024 * 1024, f"resident memory grew by {grown / 2**20:.1f} MiB"
    assert sent[0] < 64 * 1024 * 1024, "the client kept reading the endless line"
    assert_secret(everything(caplog, error))


def test_a_header_over_64_kib_in_all_is_refused(servers) -> None:
    lines = b"".join(b"X-Pad-%d: %s\r\n" % (i, b"p" * 1000) for i in range(80))
    server = servers(lambda peer: peer.send(b"HTTP/1.1 101 Switching Protocols\r\n" + lines + b"\r\n"))
    error = connect_error(server.url)
    assert "over 65536 bytes" in str(error)


def test_more_than_100_header_fields_are_refused(servers) -> None:
    lines = b"".join(b"X-%d: 1\r\n" % i for i in range(150))
    server = servers(lambda peer: peer.send(b"HTTP/1.1 101 Switching Protocols\r\n" + lines + b"\r\n"))
    error = connect_error(server.url)
    assert "over 100 header fields" in str(error)


def test_a_drip_fed_answer_ends_at_the_connect_timeout(servers) -> None:
    release = threading.Event()

    def script(peer: Peer) -> None:
        peer.send(b"HTTP/1.1 101 Switching Protocols\r\n")
        release.wait(10)  # never finishes the head

    server = servers(script)
    try:
        error = connect_error(server.url, connect_timeout=0.5)
    finally:
        release.set()
    assert isinstance(error, dc.ConnectTimeout | dc.ConnectionLost)
    assert "within 0.5 s" in str(error)


# ----------------------------------------------------------------------------- extensions, subprotocols, accept


@pytest.mark.parametrize(
    "extension",
    ["permessage-deflate", "permessage-deflate; client_max_window_bits=15", "x-webkit-deflate-frame"],
)
def test_an_extension_the_client_did_not_offer_fails_the_connection(servers, caplog, extension: str) -> None:
    server = servers(lambda peer: peer.upgrade(f"Sec-WebSocket-Extensions: {extension}".encode()))
    error = connect_error(server.url, password=PASSWORD)
    assert f"extension {extension.split(';', maxsplit=1)[0]}" in str(error)
    assert "did not offer" in str(error)
    assert server.peers[0].header("sec-websocket-extensions") is None  # and none was offered
    assert_secret(everything(caplog, error))


def test_a_subprotocol_the_client_did_not_offer_fails_without_naming_the_offer(servers, caplog) -> None:
    server = servers(lambda peer: peer.upgrade(subprotocol="paseo.bearer.someone-else"))
    error = connect_error(server.url, password=PASSWORD)
    assert "subprotocol the client did not offer" in str(error)
    assert_secret(everything(caplog, error))


def test_the_offered_bearer_subprotocol_is_accepted(servers) -> None:
    def script(peer: Peer) -> None:
        peer.upgrade(subprotocol=f"paseo.bearer.{PASSWORD}")
        peer.drain()

    server = servers(script)
    transport = WebSocketTransport()
    try:
        transport.connect(ConnectParams(url=server.url, timeout=5, subprotocols=(f"paseo.bearer.{PASSWORD}",)))
        assert transport.selected_subprotocol == f"paseo.bearer.{PASSWORD}"
    finally:
        transport.close()


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (b"HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: bad=\r\n\r\n",
         "Sec-WebSocket-Accept"),
        (b"HTTP/1.1 101 OK\r\nConnection: Upgrade\r\n\r\n", "Upgrade: websocket"),
        (b"HTTP/1.1 101 OK\r\nUpgrade: websocket\r\n\r\n", "Connection: Upgrade"),
        (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "did not answer the WebSocket upgrade with HTTP"),
        (b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n", "refused the WebSocket upgrade (HTTP 403 Forbidden)"),
        (b"HTTP/1.1 101 OK\r\n folded: x\r\n\r\n", "malformed header line"),
    ],
)  # fmt: skip
def test_a_broken_answer_is_a_clear_error(servers, answer: bytes, message: str) -> None:
    server = servers(lambda peer: peer.send(answer))
    error = connect_error(server.url)
    assert message in str(error)


def test_the_request_has_a_host_and_no_origin_cookie_or_extension(servers) -> None:
    def script(peer: Peer) -> None:
        peer.upgrade()
        peer.drain()

    server = servers(script)
    transport = WebSocketTransport()
    try:
        transport.connect(ConnectParams(url=server.url, timeout=5))
    finally:
        transport.close()
    peer = server.peers[0]
    assert peer.request_line == "GET /ws HTTP/1.1"
    assert peer.header("host") == f"127.0.0.1:{server.port}"
    assert peer.header("sec-websocket-version") == "13"
    for absent in ("origin", "cookie", "sec-websocket-extensions", "sec-websocket-protocol", "authorization"):
        assert peer.header(absent) is None, absent


# ----------------------------------------------------------------------------- URLs


@pytest.mark.parametrize(
    "url",
    [f"ws://user:{MARK}@127.0.0.1:6767/ws", f"ws://{MARK}@127.0.0.1/ws", f"wss://:{MARK}@daemon.example/ws"],
)
def test_credentials_in_the_url_are_refused_pointing_at_password(monkeypatch, url: str) -> None:
    with pytest.raises(ValueError, match=r"password=") as refused:
        dc.Client(url)
    assert_secret("\n".join(traceback.format_exception(refused.value)))
    monkeypatch.setenv("PASEO_HOST", url)
    with pytest.raises(ValueError, match=r"userinfo") as from_env:
        dc.Client()
    assert_secret(str(from_env.value))
    with pytest.raises(TransportError, match="user-info") as at_transport:
        WebSocketTransport().connect(ConnectParams(url=url, timeout=1))
    assert_secret(str(at_transport.value))


def test_an_ssl_context_with_a_ws_url_is_refused() -> None:
    context = ssl.create_default_context()
    with pytest.raises(ValueError, match="ssl_context was given with a ws:// URL"):
        dc.Client("ws://127.0.0.1:6767/ws", ssl_context=context)
    with pytest.raises(TransportError, match="without TLS"):
        WebSocketTransport().connect(ConnectParams(url="ws://127.0.0.1:1/ws", timeout=1, ssl_context=context))


@pytest.mark.parametrize("url", ["http://127.0.0.1:6767/ws", "ws:///ws", "ws://host:notaport/ws"])
def test_other_urls_are_refused_clearly(url: str) -> None:
    with pytest.raises(ValueError, match=r"URL|scheme|port must be a number"):
        dc.Client(url)


def test_targets() -> None:
    assert parse_target("ws://[::1]:6767/ws").host_header == "[::1]:6767"
    assert parse_target("wss://daemon.example/ws?x=1").resource == "/ws?x=1"
    assert parse_target("wss://daemon.example/ws").host_header == "daemon.example"
    assert parse_target("ws://h").resource == "/"


# ----------------------------------------------------------------------------- clear-text credentials

LOOPBACK = ["127.0.0.1", "127.8.9.10", "localhost", "LOCALHOST", "api.localhost", "[::1]", "[::ffff:127.0.0.1]"]
REMOTE = ["192.0.2.10", "10.0.0.2", "daemon.example.org", "[2001:db8::1]", "localhost.example", "0.0.0.0"]


@pytest.mark.parametrize("host", LOOPBACK)
def test_loopback_hosts(host: str) -> None:
    assert is_loopback_host(host)


@pytest.mark.parametrize("host", REMOTE)
def test_remote_hosts(host: str) -> None:
    assert not is_loopback_host(host)


def clear_text_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "unencrypted" in r.getMessage()]


@pytest.mark.parametrize("host", REMOTE)
@pytest.mark.parametrize("carrier", ["password", "auth_header"])
def test_clear_text_credentials_to_another_host_are_warned_about_once(fakes, caplog, host: str, carrier: str) -> None:
    fake = fakes("capable")
    secret = {"password": PASSWORD} if carrier == "password" else {"auth_header": f"Basic {MARK}"}
    client = dc.Client(f"ws://{host}:6767/ws", transport_factory=fake.transport_factory, **secret)  # type: ignore[arg-type]
    try:
        client.connect()
        client.close()
    finally:
        client.close()
    warnings = clear_text_warnings(caplog)
    assert len(warnings) == 1
    assert "wss://" in warnings[0]
    assert_secret(everything(caplog))


@pytest.mark.parametrize("url", [*(f"ws://{host}:6767/ws" for host in LOOPBACK), "wss://daemon.example.org/ws"])
def test_no_warning_over_loopback_or_tls(caplog, url: str) -> None:
    dc.Client(url, password=PASSWORD).close()
    assert clear_text_warnings(caplog) == []


def test_no_warning_without_credentials_or_when_allowed(caplog) -> None:
    dc.Client("ws://192.0.2.10:6767/ws").close()
    dc.Client("ws://192.0.2.10:6767/ws", password=PASSWORD, allow_insecure_credentials=True).close()
    assert clear_text_warnings(caplog) == []


@pytest.mark.parametrize("carrier", ["password", "auth_header"])
def test_allow_insecure_credentials_false_refuses_before_anything_is_sent(fakes, caplog, carrier: str) -> None:
    fake = fakes("capable")
    secret = {"password": PASSWORD} if carrier == "password" else {"auth_header": f"Basic {MARK}"}
    client = dc.Client(
        "ws://daemon.example.org:6767/ws",
        transport_factory=fake.transport_factory,
        allow_insecure_credentials=False,
        **secret,  # type: ignore[arg-type]
    )
    try:
        with pytest.raises(dc.InsecureCredentials, match="wss://") as refused:
            client.connect()
        assert isinstance(refused.value, dc.AuthenticationError)
        assert fake.accepted_count == 0  # no socket was opened
        assert client.state is dc.ConnectionState.DISCONNECTED
        with pytest.raises(dc.InsecureCredentials):
            client.connect()  # and again: a refusal is terminal, not retried
        assert fake.accepted_count == 0
    finally:
        client.close()
    assert clear_text_warnings(caplog) == []
    assert_secret(everything(caplog, refused.value))


def test_allow_insecure_credentials_false_still_connects_over_loopback(fakes) -> None:
    fake = fakes("capable", password=PASSWORD)
    with dc.connect(fake.serve(), password=PASSWORD, allow_insecure_credentials=False) as client:
        assert client.state is dc.ConnectionState.CONNECTED


# ----------------------------------------------------------------------------- auth_header


def _recording(peer: Peer) -> None:
    peer.upgrade()
    peer.drain()


def test_auth_header_is_sent_only_without_a_password(servers) -> None:
    server = servers(_recording)
    for options in ({"auth_header": "Basic cHJveHk6c2VjcmV0"}, {"auth_header": "Basic x", "password": "pw"}):
        client = dc.Client(server.url, connect_timeout=0.3, reconnect=NO_RETRY, **options)  # type: ignore[arg-type]
        try:
            with pytest.raises(dc.ConnectTimeout):
                client.connect()
        finally:
            client.close()
    assert [peer.header("authorization") for peer in server.peers] == ["Basic cHJveHk6c2VjcmV0", "Bearer pw"]


@pytest.mark.parametrize("value", ["", "   ", f"Basic {MARK}\r\nX-Injected: 1", f"Bearer {MARK}\n"])
def test_an_auth_header_that_cannot_be_one_header_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="auth_header") as refused:
        dc.Client("ws://127.0.0.1:6767/ws", auth_header=value)
    assert_secret(str(refused.value))


def test_repr_of_a_client_with_auth_header(fakes) -> None:
    fake = fakes("capable")
    client = dc.Client("ws://fake/ws", auth_header=f"Basic {MARK}", transport_factory=fake.transport_factory)
    try:
        client.connect()
        options = client._connection._opts
        assert_secret(repr(client) + repr(options) + repr(fake.connections[0].socket.params))
        assert fake.connections[0].headers["Authorization"] == f"Basic {MARK}"
    finally:
        client.close()


def test_raw_server_saw_no_errors(servers) -> None:
    """The helper itself: a clean exchange leaves no recorded error."""
    server: RawServer = servers(_recording)
    transport = WebSocketTransport()
    try:
        transport.connect(ConnectParams(url=server.url, timeout=5))
        transport.send_text("{}")
    finally:
        transport.close()
    server.close()
    assert server.errors == []
