"""HTTP CONNECT proxies: the setting, the bypass rules, and real tunnels to the fake daemon.

A small CONNECT proxy on loopback (``connect_proxy.py``) sits in front of the fake daemon's
real loopback server and of the fake relay. The daemon is named ``daemon.test`` (the relay
``relay.test``): not loopback, so the client sends it through the proxy, which reaches it on
127.0.0.1. Where a test connects without the proxy, a resolver that knows those names is
injected (no test resolves a name with the system resolver).
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
import traceback
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import attrs
import pytest
import trustme

import daemon_client as dc
from daemon_client.testing import FakeDaemon
from daemon_client.transport.base import ConnectParams
from daemon_client.transport.handshake_policy import parse_target
from daemon_client.transport.proxy import NoProxy, Proxy, ProxyError, open_tunnel, parse_proxy, proxy_policy
from daemon_client.transport.resolver import AddrInfo, Resolver
from daemon_client.transport.websocket import WebSocketTransport

from .connect_proxy import ConnectProxy

SECRET = "pw-Zq7Secret"
NO_RETRY = dc.ReconnectPolicy(enabled=False)
PROXY_VARIABLES = ("http_proxy", "https_proxy", "no_proxy", "all_proxy", "REQUEST_METHOD")


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


@pytest.fixture
def proxies() -> Iterator[Callable[..., ConnectProxy]]:
    made: list[ConnectProxy] = []

    def make(**options: Any) -> ConnectProxy:
        proxy = ConnectProxy(**options)
        made.append(proxy)
        return proxy

    yield make
    for proxy in made:
        proxy.close()


def _to_loopback(host: str, port: int) -> list[AddrInfo]:
    """The ``.test`` names are this machine (what the proxy does too)."""
    if not host.endswith(".test"):
        raise socket.gaierror(socket.EAI_NONAME, "unknown host")
    return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]


RESOLVER = Resolver(_to_loopback, max_threads=2)


def transports() -> WebSocketTransport:
    return WebSocketTransport(resolver=RESOLVER)


def daemon_url(fake: FakeDaemon, scheme: str = "ws", host: str = "daemon.test") -> str:
    port = urlsplit(fake.serve()).port
    return f"{scheme}://{host}:{port}/ws"


def everything(caplog: pytest.LogCaptureFixture, *items: object) -> str:
    parts = [record.getMessage() for record in caplog.records]
    for item in items:
        parts += [str(item), repr(item)]
        if isinstance(item, BaseException):
            parts += traceback.format_exception(item)
    return "\n".join(parts)


def connect_error(url: str | dc.RelayTarget, **options: Any) -> BaseException:
    options.setdefault("connect_timeout", 5)
    options.setdefault("reconnect", NO_RETRY)
    client = dc.Client(url, **options)
    try:
        with pytest.raises(dc.DaemonClientError) as failure:
            client.connect()
        return failure.value
    finally:
        client.close()


# ----------------------------------------------------------------------------- through a proxy


def test_http_proxy_from_the_environment_carries_a_ws_connection(fakes, proxies, monkeypatch) -> None:
    fake = fakes(hostnames=["daemon.test"])
    proxy = proxies()
    monkeypatch.setenv("http_proxy", proxy.url)
    url = daemon_url(fake)
    client = dc.Client(url, connect_timeout=5)
    try:
        assert client.connect().server_id
        assert client.ping().round_trip >= 0
    finally:
        client.close()
    assert proxy.targets() == [f"daemon.test:{urlsplit(url).port}"]
    assert "proxy-authorization" not in proxy.requests[0][1]


@pytest.fixture
def daemon_cert() -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context for ``daemon.test`` and a client context trusting its CA."""
    ca = trustme.CA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("daemon.test").configure_cert(server)
    client = ssl.create_default_context()
    ca.configure_trust(client)
    return server, client


def test_https_proxy_carries_wss_with_tls_to_the_daemon_inside_the_tunnel(
    fakes, proxies, monkeypatch, daemon_cert
) -> None:
    server_context, client_context = daemon_cert
    fake = fakes(hostnames=["daemon.test"])
    port = urlsplit(fake.serve(ssl_context=server_context)).port
    proxy = proxies()
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")  # for ws:// only: never used here
    client = dc.Client(f"wss://daemon.test:{port}/ws", ssl_context=client_context, connect_timeout=5)
    try:
        client.connect()
        client.ping()
    finally:
        client.close()
    assert proxy.targets() == [f"daemon.test:{port}"]


def test_proxy_credentials_go_in_proxy_authorization_and_nowhere_else(fakes, proxies, caplog) -> None:
    fake = fakes(hostnames=["daemon.test"])
    proxy = proxies(credentials=("alice", SECRET + "/:@"))
    setting = proxy.url_with("alice", SECRET + "%2F%3A%40")
    client = dc.Client(daemon_url(fake), proxy=setting, connect_timeout=5)
    try:
        client.connect()
        shown = everything(caplog, client, client.server_info)
    finally:
        client.close()
    assert proxy.targets()
    assert proxy.requests[0][1]["proxy-authorization"].startswith("Basic ")
    assert SECRET not in shown
    assert SECRET not in repr(proxy_policy(setting)) + repr(parse_proxy(setting))
    params = ConnectParams(url="ws://daemon.test/ws", timeout=1, proxy=proxy_policy(setting))
    assert SECRET not in repr(params)


def test_a_407_names_the_proxy_and_status_without_the_credentials(fakes, proxies, caplog) -> None:
    fake = fakes(hostnames=["daemon.test"])
    proxy = proxies(credentials=("alice", "right"))
    error = connect_error(daemon_url(fake), proxy=proxy.url_with("alice", SECRET))
    assert isinstance(error, dc.ConnectionLost)
    assert f"the proxy http://127.0.0.1:{proxy.port} refused CONNECT daemon.test:" in str(error)
    assert "HTTP 407" in str(error)
    assert "check the user and password" in str(error)
    assert SECRET not in everything(caplog, error)


def test_a_407_without_credentials_says_the_proxy_wants_some(fakes, proxies) -> None:
    fake = fakes(hostnames=["daemon.test"])
    proxy = proxies(credentials=("alice", "right"))
    error = connect_error(daemon_url(fake), proxy=proxy.url)
    assert "HTTP 407" in str(error)
    assert "the proxy wants credentials" in str(error)


def test_any_other_refusal_names_the_proxy_and_status(fakes, proxies) -> None:
    fake = fakes(hostnames=["daemon.test"])
    proxy = proxies(status=403)
    error = connect_error(daemon_url(fake), proxy=proxy.url)
    assert f"the proxy http://127.0.0.1:{proxy.port} refused CONNECT" in str(error)
    assert "HTTP 403 Refused" in str(error)


def test_an_unreachable_proxy_is_named(fakes, proxies) -> None:
    fake = fakes(hostnames=["daemon.test"])
    closed = proxies()
    closed.close()  # nothing listens there any more
    error = connect_error(daemon_url(fake), proxy=f"http://user:{SECRET}@127.0.0.1:{closed.port}")
    assert f"cannot reach the proxy http://127.0.0.1:{closed.port}" in str(error)
    assert SECRET not in str(error)


# ----------------------------------------------------------------------------- which connections use one


def test_no_proxy_bypasses_the_proxy(fakes, proxies, monkeypatch) -> None:
    fake = fakes(hostnames=["daemon.test"])
    proxy = proxies()
    monkeypatch.setenv("http_proxy", proxy.url)
    monkeypatch.setenv("NO_PROXY", "other.example, .test")
    client = dc.Client(daemon_url(fake), transport_factory=transports, connect_timeout=5)
    try:
        client.connect()
    finally:
        client.close()
    assert proxy.requests == []


def test_loopback_never_goes_through_the_proxy(fakes, proxies, monkeypatch) -> None:
    fake = fakes()
    proxy = proxies()
    monkeypatch.setenv("http_proxy", proxy.url)
    for setting in (None, proxy.url):
        client = dc.Client(fake.serve(), proxy=setting, connect_timeout=5)
        try:
            client.connect()
        finally:
            client.close()
    assert proxy.requests == []


def test_proxy_argument_wins_over_the_environment(fakes, proxies, monkeypatch) -> None:
    fake = fakes(hostnames=["daemon.test"])
    env_proxy, given = proxies(status=403), proxies()
    monkeypatch.setenv("http_proxy", env_proxy.url)
    client = dc.Client(daemon_url(fake), proxy=given.url, connect_timeout=5)
    try:
        client.connect()
    finally:
        client.close()
    assert env_proxy.requests == []
    assert len(given.requests) == 1


def test_proxy_false_ignores_the_environment(fakes, proxies, monkeypatch) -> None:
    fake = fakes(hostnames=["daemon.test"])
    env_proxy = proxies(status=403)
    monkeypatch.setenv("http_proxy", env_proxy.url)
    client = dc.Client(daemon_url(fake), proxy=False, transport_factory=transports, connect_timeout=5)
    try:
        client.connect()
    finally:
        client.close()
    assert env_proxy.requests == []


def test_the_relay_is_dialled_through_the_proxy(fakes, proxies, monkeypatch) -> None:
    fake = fakes()
    fake.serve_relay()
    relay_port = fake.relay.target.endpoint.rsplit(":", 1)[1]
    target = attrs.evolve(fake.relay.target, endpoint=f"relay.test:{relay_port}")
    proxy = proxies()
    monkeypatch.setenv("http_proxy", proxy.url)
    client = dc.Client(target, connect_timeout=5)
    try:
        client.connect()
        client.ping()
    finally:
        client.close()
    assert proxy.targets() == [f"relay.test:{relay_port}"]
    assert client.relay_stats is not None
    assert client.relay_stats.handshakes == 1


# ----------------------------------------------------------------------------- the setting


def test_lower_case_variables_win_and_http_proxy_is_not_read_in_a_cgi_request() -> None:
    target = parse_target("ws://daemon.example:80/ws")
    both = proxy_policy(None, {"http_proxy": "http://lower:1", "HTTP_PROXY": "http://upper:2"})
    assert both is not None
    assert both.for_target(target) == both.for_target(target)
    chosen = both.for_target(target)
    assert chosen is not None
    assert (chosen.host, chosen.port) == ("lower", 1)
    upper = proxy_policy(None, {"HTTP_PROXY": "upper:3"})
    chosen = upper.for_target(target) if upper is not None else None
    assert chosen is not None
    assert (chosen.host, chosen.port) == ("upper", 3)
    assert proxy_policy(None, {"HTTP_PROXY": "http://upper:3", "REQUEST_METHOD": "GET"}) is None
    secure = proxy_policy(None, {"https_proxy": "http://tls-proxy"})
    assert secure is not None
    assert secure.for_target(target) is None
    chosen = secure.for_target(parse_target("wss://daemon.example/ws"))
    assert chosen is not None
    assert chosen.port == 80
    assert proxy_policy(None, {}) is None
    assert proxy_policy(None, {"http_proxy": " ", "HTTP_PROXY": "http://upper:3"}) is None  # set empty: none
    assert proxy_policy(False, {"http_proxy": "http://p:1"}) is None


def test_an_unusable_environment_proxy_is_ignored_with_a_warning(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="daemon_client"):
        policy = proxy_policy(None, {"https_proxy": f"socks5://u:{SECRET}@p:1080", "http_proxy": "http://p:1"})
    assert policy is not None
    assert policy.for_target(parse_target("wss://d.example/ws")) is None
    assert "https_proxy is ignored" in caplog.text
    assert "socks5://" in caplog.text
    assert SECRET not in caplog.text


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (f"https://u:{SECRET}@proxy:443", "only http:// proxies"),
        (f"http://u:{SECRET}@proxy:99999", "malformed"),
        ("http://:8080", "has no host"),
        ("  ", "must be a proxy URL"),
        (True, "not bool"),
    ],
)
def test_a_bad_proxy_argument_is_refused_without_echoing_credentials(setting: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message) as failure:
        dc.Client("ws://daemon.example/ws", proxy=setting)
    assert SECRET not in str(failure.value)


@pytest.mark.parametrize(
    ("rules", "host", "port", "bypass"),
    [
        ("*", "anything.example", 80, True),
        ("example.com", "example.com", 80, True),
        ("example.com", "api.example.com", 80, True),
        (".example.com", "api.example.com", 80, True),
        (".example.com", "example.com", 80, True),
        ("*.example.com", "a.b.example.com", 80, True),
        ("example.com", "badexample.com", 80, False),
        ("example.com:8080", "example.com", 8080, True),
        ("example.com:8080", "example.com", 80, False),
        ("10.0.0.0/8", "10.1.2.3", 80, True),
        ("10.0.0.0/8", "11.1.2.3", 80, False),
        ("192.168.1.5", "192.168.1.5", 443, True),
        ("192.168.1.5:443", "192.168.1.5", 80, False),
        ("::1", "::1", 80, True),
        ("[2001:db8::1]:8443", "2001:db8::1", 8443, True),
        ("[2001:db8::1]:8443", "2001:db8::1", 80, False),
        ("2001:db8::/32", "[2001:db8::5]", 80, True),
        ("10.0.0.0/8", "a.example", 80, False),
        ("example.com", "10.0.0.1", 80, False),
        ("", "example.com", 80, False),
        ("a.example  b.example", "b.example", 80, True),
        ("[::1]", "::1", 8080, True),
        ("example.com:http", "example.com", 80, False),
    ],
)
def test_no_proxy_rules(rules: str, host: str, port: int, bypass: bool) -> None:
    assert NoProxy(rules).bypasses(host, port) is bypass


def test_reprs_show_no_credentials() -> None:
    proxy = parse_proxy(f"u:{SECRET}@[::1]:3128")
    assert proxy.display == "http://[::1]:3128"
    assert SECRET not in repr(proxy)
    policy = proxy_policy(f"http://u:{SECRET}@proxy.example:3128", {"no_proxy": "*"})
    assert "http://proxy.example:3128" in repr(policy)
    assert SECRET not in repr(policy)
    assert repr(NoProxy("*")) == "<NoProxy * rules>"
    assert repr(NoProxy("a,b")) == "<NoProxy 2 rules>"
    assert policy is not None
    assert policy.for_target(parse_target("ws://d.example/ws")) is None


# ----------------------------------------------------------------------------- odd proxies


def _tunnel_answer(answer: bytes, *, close: bool = False) -> BaseException:
    """What ``open_tunnel`` raises when the proxy sends ``answer`` (then closes, with ``close``)."""
    ours, theirs = socket.socketpair()

    def play() -> None:
        theirs.recv(65536)
        theirs.sendall(answer)
        if close:
            theirs.shutdown(socket.SHUT_WR)

    player = threading.Thread(target=play)
    player.start()
    try:
        with pytest.raises(ProxyError) as failure:
            open_tunnel(ours, Proxy("proxy.example", 3128), parse_target("ws://[2001:db8::1]:7/ws"), lambda: 5.0)
        return failure.value
    finally:
        player.join(5)
        ours.close()
        theirs.close()


def test_a_proxy_that_closes_before_answering() -> None:
    error = _tunnel_answer(b"", close=True)
    assert "closed the connection before answering CONNECT [2001:db8::1]:7" in str(error)


def test_a_malformed_proxy_answer() -> None:
    assert "malformed answer" in str(_tunnel_answer(b"nonsense\r\n\r\n"))


def test_a_proxy_that_sends_bytes_before_the_tunnel_is_used() -> None:
    assert "sent data before the tunnel" in str(_tunnel_answer(b"HTTP/1.1 200 OK\r\n\r\nextra"))
