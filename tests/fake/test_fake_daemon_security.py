"""The served fake daemon guards its edge like the real daemon (protocol.md 1.1).

* ``Host`` must be localhost, ``*.localhost``, an IP literal or a configured name (DNS rebinding
  answered with 403); an ``Origin``, when present, must be configured or name the ``Host`` (a web
  page answered with 403); clients without ``Origin`` are accepted.
* Serving on a non-loopback address logs a WARNING; a password there without TLS is refused
  unless explicitly allowed.
* The fake's DEBUG frame log (websockets' logger) never shows the hello's password, not even
  the tail of a long one.
"""

from __future__ import annotations

import logging
import socket
import ssl

import pytest
import trustme
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect as ws_connect

import daemon_client as dc
from daemon_client.testing.fake.upgrade import check_listen, host_allowed, origin_allowed

MARK = "Fq8Secret"


def upgrade_status(port: int, host_header: str, origin: str | None = None) -> int:
    """Send an upgrade request with these headers on a raw socket; return the HTTP status."""
    lines = [
        "GET /ws HTTP/1.1",
        f"Host: {host_header}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13",
    ]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        answer = b""
        while b"\r\n" not in answer:
            chunk = sock.recv(1024)
            if not chunk:
                break
            answer += chunk
    return int(answer.split(b" ", 2)[1])


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/", 1)[0])


@pytest.mark.parametrize(
    ("host", "origin", "status"),
    [
        ("127.0.0.1:{port}", None, 101),
        ("localhost:{port}", None, 101),
        ("app.localhost:{port}", None, 101),
        ("[::1]:{port}", None, 101),
        ("10.1.2.3:{port}", None, 101),  # any IP literal
        ("evil.example:{port}", None, 403),  # DNS rebinding: a name that resolves here
        ("", None, 403),
        ("127.0.0.1:{port}", "http://127.0.0.1:{port}", 101),  # same host and port
        ("127.0.0.1:{port}", "http://evil.example", 403),  # a web page
        ("127.0.0.1:{port}", "http://127.0.0.1:1", 403),  # another port is another origin
        ("127.0.0.1:{port}", "null", 403),
        ("localhost:{port}", "http://127.0.0.1:{port}", 403),
    ],
)
def test_host_and_origin_are_checked_like_the_real_daemon(fakes, host: str, origin: str | None, status: int) -> None:
    fake = fakes("capable")
    port = port_of(fake.serve())
    assert upgrade_status(port, host.format(port=port), origin and origin.format(port=port)) == status
    if status == 403:
        assert fake.accepted_count == 0  # refused before the upgrade: no connection exists


def test_configured_hostnames_and_origins_are_accepted(fakes) -> None:
    fake = fakes("capable", hostnames=["daemon.lan"], cors_origins=["https://app.example"])
    port = port_of(fake.serve())
    assert upgrade_status(port, f"daemon.lan:{port}") == 101
    assert upgrade_status(port, f"DAEMON.LAN:{port}", "https://app.example/") == 101
    assert upgrade_status(port, f"other.lan:{port}") == 403
    assert upgrade_status(port, f"127.0.0.1:{port}", "https://other.example") == 403


def test_a_browser_like_client_is_refused_and_this_client_is_not(fakes) -> None:
    fake = fakes("capable")
    url = fake.serve()
    with pytest.raises(InvalidStatus) as refused, ws_connect(url, origin="https://evil.example", open_timeout=5):  # type: ignore[arg-type]
        pass
    assert refused.value.response.status_code == 403
    with dc.connect(url) as client:  # sends no Origin header
        assert client.state is dc.ConnectionState.CONNECTED


def test_host_and_origin_rules() -> None:
    assert not host_allowed(None)
    assert not host_allowed("localhost.example:6767")
    assert host_allowed("LOCALHOST")
    assert host_allowed("[2001:db8::1]:6767")
    assert origin_allowed(None, None)
    assert not origin_allowed("http://x", None)
    assert not origin_allowed("not a url", "127.0.0.1:1")


# ----------------------------------------------------------------------------- where the fake listens


def listen_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "not a loopback" in r.getMessage()
    ]


def test_serving_on_loopback_is_quiet(fakes, caplog) -> None:
    fakes("capable", password=f"pw-{MARK}").serve()
    assert listen_warnings(caplog) == []


def test_serving_on_all_interfaces_warns(fakes, caplog) -> None:
    fake = fakes("capable")
    url = fake.serve("0.0.0.0")
    assert len(listen_warnings(caplog)) == 1
    with dc.connect(url.replace("0.0.0.0", "127.0.0.1")) as client:
        assert client.state is dc.ConnectionState.CONNECTED


def test_a_password_without_tls_on_all_interfaces_is_refused_unless_allowed(fakes, caplog) -> None:
    fake = fakes("capable", password=f"pw-{MARK}")
    with pytest.raises(ValueError, match="without TLS") as refused:
        fake.serve("0.0.0.0")
    assert MARK not in str(refused.value)
    with pytest.raises(RuntimeError, match="not serving"):
        _ = fake.url  # nothing listens
    url = fake.serve("0.0.0.0", allow_insecure_password=True)
    assert len(listen_warnings(caplog)) == 1
    assert "no TLS" in listen_warnings(caplog)[0]
    with dc.connect(url.replace("0.0.0.0", "127.0.0.1"), password=f"pw-{MARK}") as client:
        assert client.state is dc.ConnectionState.CONNECTED


def test_a_password_with_tls_on_all_interfaces_is_served_with_a_warning(fakes, caplog) -> None:
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    fake = fakes("capable", password=f"pw-{MARK}")
    url = fake.serve("0.0.0.0", ssl_context=server_context)
    assert url.startswith("wss://")
    assert len(listen_warnings(caplog)) == 1
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    with dc.connect(url.replace("0.0.0.0", "127.0.0.1"), password=f"pw-{MARK}", ssl_context=client_context) as client:
        assert client.state is dc.ConnectionState.CONNECTED


@pytest.mark.parametrize(
    ("host", "quiet"),
    [("127.0.0.1", True), ("::1", True), ("localhost", True), ("0.0.0.0", False), ("192.0.2.1", False), ("::", False)],
)
def test_which_addresses_warn(caplog, host: str, quiet: bool) -> None:
    check_listen(host, password=False, tls=False, allow_insecure_password=False)
    assert (listen_warnings(caplog) == []) is quiet


# ----------------------------------------------------------------------------- the frame log


@pytest.mark.parametrize(
    "password",
    [f"tok-{MARK}-safe", f'long and "not" token safe {"x" * 300} {MARK} tail'],
    ids=["token-safe", "long-not-token-safe"],
)
def test_the_frame_log_never_shows_the_password(fakes, caplog, password: str) -> None:
    caplog.set_level(logging.DEBUG, logger="daemon_client.testing.fake.loopback.websockets")
    fake = fakes("capable", password=password)
    with dc.connect(fake.serve(), password=password) as client:
        assert client.ping().round_trip is not None
    frame_log = [r.getMessage() for r in caplog.records if r.name == "daemon_client.testing.fake.loopback.websockets"]
    assert any('"type":"hello"' in line and "password redacted" in line for line in frame_log), frame_log[:5]
    assert any("TEXT" in line and "ping" in line for line in frame_log)  # other frames are logged as they are
    everything = "\n".join(r.getMessage() for r in caplog.records)
    assert MARK not in everything
