"""Shared fixtures: every test is checked for threads that outlive it."""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from daemon_client import Client, ReconnectPolicy
from daemon_client.protocol.hosts import HostKind
from daemon_client.subscriptions.lifecycle import set_strict_transitions
from daemon_client.testing import FakeDaemon
from daemon_client.testing.threads import assert_no_new_threads, live_threads

set_strict_transitions(True)  # an illegal subscription transition raises in the test that made it

TRANSCRIPTS = Path(__file__).resolve().parent / "fixtures" / "paseo-0.1.65"
KINDS = [kind.value for kind in HostKind]
TRANSPORTS = ["memory", "loopback"]


@pytest.fixture(autouse=True)
def _no_leaked_threads() -> Iterator[None]:
    """Every test: no thread it started may outlive it (clients and fakes are closed by then).

    The one exception is a name-lookup thread stuck in ``getaddrinfo`` for a connect nobody waits
    for any more (see ``daemon_client/testing/threads.py``)."""
    before = live_threads()
    yield
    assert_no_new_threads(before, timeout=5.0)


@pytest.fixture(autouse=True)
def _debug_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="daemon_client")


ClientFactory = Callable[..., Client]


class BackgroundConnect:
    """``client.connect()`` running on a helper thread while a test plays the daemon's part."""

    def __init__(self, client: Client) -> None:
        self.outcome: list[object] = []
        self._thread = threading.Thread(target=self._run, args=(client,))
        self._thread.start()

    def _run(self, client: Client) -> None:
        try:
            self.outcome.append(client.connect())
        except BaseException as exc:
            self.outcome.append(exc)

    def result(self, timeout: float = 10.0) -> object:
        """What ``connect()`` returned or raised."""
        self._thread.join(timeout)
        assert len(self.outcome) == 1, "connect() did not finish"
        return self.outcome[0]


@pytest.fixture
def make_client() -> Iterator[Callable[..., Client]]:
    """``make_client(fake, transport="memory", **options)``: a strict client, closed after the test.

    ``transport``: ``"memory"``, ``"loopback"``, or ``"relay"`` (through a fake relay, end-to-end
    encrypted, given only the fake's pairing-offer link)."""
    clients: list[Client] = []

    def make(fake: FakeDaemon, transport: str = "memory", **options: object) -> Client:
        options.setdefault("strict", True)
        options.setdefault("reconnect", ReconnectPolicy(base_delay=0.05, max_delay=0.2, stable_after=0.5))
        options.setdefault("connect_timeout", 5.0)
        if transport == "loopback":
            client = Client(fake.serve(), **options)  # type: ignore[arg-type]
        elif transport == "relay":
            client = Client(fake.serve_relay(), **options)  # type: ignore[arg-type]
        else:
            client = Client("ws://fake-daemon/ws", transport_factory=fake.transport_factory, **options)  # type: ignore[arg-type]
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def fakes() -> Iterator[Callable[..., FakeDaemon]]:
    """``fakes(host_kind=..., **options)``: a FakeDaemon, closed after the test."""
    made: list[FakeDaemon] = []

    def make(host_kind: str | HostKind = "capable", **options: object) -> FakeDaemon:
        fake = FakeDaemon(host_kind=HostKind(host_kind), **options)  # type: ignore[arg-type]
        made.append(fake)
        return fake

    yield make
    for fake in made:
        fake.close()


@pytest.fixture
def connected(
    fakes: Callable[..., FakeDaemon], make_client: Callable[..., Client]
) -> Callable[..., tuple[FakeDaemon, Client]]:
    """``connected(kind="capable", transport="memory", **fake_options)``: a fake daemon and a client
    connected to it over ``transport``."""

    def make(kind: str = "capable", transport: str = "memory", **options: object) -> tuple[FakeDaemon, Client]:
        fake = fakes(kind, **options)
        client = make_client(fake, transport)
        client.connect()
        return fake, client

    return make


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Switch threads as often as the interpreter allows, to widen every race window."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


@pytest.fixture
def paseo_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty ``PASEO_HOME``; no ``PASEO_HOST``/``PASEO_LISTEN``/``PASEO_URL``/``PASEO_PASSWORD``."""
    for name in ("PASEO_HOST", "PASEO_LISTEN", "PASEO_URL", "PASEO_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "paseo-home"
    path.mkdir()
    monkeypatch.setenv("PASEO_HOME", str(path))
    return path
