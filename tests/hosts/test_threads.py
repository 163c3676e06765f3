"""Threads and close(): no client, probe or probing-client thread outlives ``close()``, also
when it is called while probes wait on addresses that never answer the upgrade; the probing
clients stay quiet below WARNING; ``connect()``'s default bound covers a whole round."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Iterator

import pytest

import daemon_client as dc
from daemon_client.discovery.failover import Probe
from daemon_client.testing import FakeDaemon

from .conftest import HostClientFactory, close_and_check, wait_until


@pytest.fixture
def black_hole() -> Iterator[Callable[[str], str]]:
    """``black_hole(path)``: a ``ws://`` URL on a listening socket that never accepts, so the
    TCP connection opens and the WebSocket upgrade is never answered."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=64)
    port = listener.getsockname()[1]
    try:
        yield lambda path: f"ws://127.0.0.1:{port}/{path}"
    finally:
        listener.close()


class Connecting:
    """``client.connect()`` on a helper thread."""

    def __init__(self, client: dc.Client) -> None:
        self.outcome: list[object] = []
        self.thread = threading.Thread(target=self._run, args=(client,), name="test-connect")
        self.thread.start()

    def _run(self, client: dc.Client) -> None:
        try:
            self.outcome.append(client.connect())
        except BaseException as exc:
            self.outcome.append(exc)

    def result(self) -> object:
        self.thread.join(15)
        assert self.outcome, "connect() did not return"
        return self.outcome[0]


def probe_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("probe-")]


def test_close_while_probes_wait_on_black_holes(
    black_hole: Callable[[str], str], host_client: HostClientFactory
) -> None:
    host = dc.Host("laptop", [black_hole("a"), black_hole("b"), black_hole("c")])
    client = host_client(host, connect_timeout=30.0)  # probes wait up to 3 s, attempts 30 s
    connecting = Connecting(client)
    wait_until(lambda: len(probe_threads()) == 3, 10, "the probes did not start")
    close_and_check(client, timeout=2.0)
    assert probe_threads() == []
    assert isinstance(connecting.result(), dc.ClientClosed)


def test_close_while_an_attempt_waits_on_a_black_hole(
    black_hole: Callable[[str], str], host_client: HostClientFactory
) -> None:
    client = host_client(dc.Host("laptop", [black_hole("a"), black_hole("b")]), connect_timeout=30.0)
    connecting = Connecting(client)
    wait_until(lambda: client.resolution.steps[1].note != "not probed", 15, "no round began")
    close_and_check(client, timeout=2.0)
    assert isinstance(connecting.result(), dc.ClientClosed)


def test_no_thread_outlives_close_after_probing(
    fakes: Callable[..., FakeDaemon], black_hole: Callable[[str], str], host_client: HostClientFactory
) -> None:
    fake = fakes(server_id="srv-a")
    url = fake.serve()
    client = host_client(dc.Host("laptop", [black_hole("a"), url], preferred=url))
    client.connect()
    assert client.active_connection is not None
    assert client.active_connection.url == url
    assert probe_threads() == []  # the round ended the probe of the black hole
    close_and_check(client)


def test_probing_clients_log_nothing_below_warning(
    fakes: Callable[..., FakeDaemon], host_client: HostClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    fake = fakes(server_id="srv-a")
    url = fake.serve()
    other = fakes(server_id="srv-a")
    host = dc.Host("laptop", [url, other.serve()], preferred=url)
    assert logging.getLogger("daemon_client").isEnabledFor(logging.DEBUG)  # the tests' own setting
    client = host_client(host)
    client.connect()
    assert client.resolution.steps[0].note == "used"
    close_and_check(client)
    probing = [r for r in caplog.records if r.name.startswith("daemon_client.hosts.probe")]
    assert [r.getMessage() for r in probing if r.levelno < logging.WARNING] == []
    assert logging.getLogger().level == logging.WARNING or logging.getLogger().handlers  # root untouched
    assert any(r.name == "daemon_client.hosts" and "probed" in r.getMessage() for r in caplog.records)


@pytest.mark.timeout(60)
def test_connect_default_bound_covers_a_whole_round(
    fakes: Callable[..., FakeDaemon],
    black_hole: Callable[[str], str],
    host_client: HostClientFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seven connections that never answer come before the one that does (nothing answered
    the probes): connect() waits for the round, not ``connect_timeout`` plus a grace."""

    def silent(connection: dc.HostConnection, _timeout: float, _on_cancel: object, **_options: object) -> Probe:
        return Probe(connection, False, error="silent")

    monkeypatch.setattr("daemon_client.client.assembly.probe_lazily", silent)
    fake = fakes(server_id="srv-a")
    holes = [black_hole(str(i)) for i in range(7)]
    client = host_client(dc.Host("laptop", [*holes, fake.serve()]), connect_timeout=1.0)
    info = client.connect()
    assert info.server_id == "srv-a"
    assert client.active_connection is not None
    assert client.active_connection.url == fake.url


def test_probes_ended_early_warn_of_nothing(
    fakes: Callable[..., FakeDaemon], host_client: HostClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """The preferred direct connection answers first: the relay probe, still in its end-to-end
    handshake, is ended, which is no daemon missing from the relay."""
    pytest.importorskip("nacl")
    fake = fakes(server_id="srv-a")
    direct, link = fake.serve(), fake.serve_relay()
    for _ in range(3):
        client = host_client(dc.Host("laptop", [direct, link], preferred=direct))
        client.connect()
        assert client.active_connection is not None
        assert client.active_connection.url == direct
        close_and_check(client)
    probing = [r for r in caplog.records if r.name.startswith("daemon_client.hosts.probe")]
    assert [r.getMessage() for r in probing if r.levelno >= logging.WARNING] == []
