"""Name resolution within the connect deadline: ``close()``/``abort()`` and ``connect_timeout``
end a connect waiting for a resolver that never answers, and the lookup threads stay bounded.

Every test injects its lookup into a :class:`Resolver` of its own (the seam) and releases it
at the end, so that no lookup thread outlives the test.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import pytest

import daemon_client as dc
from daemon_client.testing.threads import assert_no_new_threads, live_threads
from daemon_client.transport.base import ConnectParams, TransportError
from daemon_client.transport.handshake_policy import parse_target
from daemon_client.transport.resolver import (
    AddrInfo,
    ResolveAborted,
    Resolver,
    ResolveTimeout,
    abandoned_threads,
    system_lookup,
)
from daemon_client.transport.upgrade import open_websocket
from daemon_client.transport.websocket import WebSocketTransport

from ..conftest import BackgroundConnect

NO_RETRY = dc.ReconnectPolicy(enabled=False)


class StuckLookup:
    """A lookup that answers only once released; counts calls and how many run at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self._lock = threading.Lock()
        self.calls = 0
        self.running = 0
        self.most_at_once = 0

    def __call__(self, host: str, port: int) -> list[AddrInfo]:
        with self._lock:
            self.calls += 1
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        self.entered.set()
        try:
            self.release.wait(30)
        finally:
            with self._lock:
                self.running -= 1
        raise socket.gaierror(socket.EAI_AGAIN, "released")


@pytest.fixture
def stuck() -> Iterator[StuckLookup]:
    lookup = StuckLookup()
    yield lookup
    lookup.release.set()


def connect_in_background(transport: WebSocketTransport, url: str, timeout: float) -> Callable[[], BaseException]:
    """Start ``transport.connect`` on a thread; the returned function joins it and gives what it raised."""
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            transport.connect(ConnectParams(url=url, timeout=timeout))
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, name="test-connect")
    thread.start()

    def result() -> BaseException:
        thread.join(10)
        assert not thread.is_alive(), "connect() did not end"
        assert len(outcome) == 1
        return outcome[0]

    return result


def test_abort_ends_a_connect_waiting_for_the_resolver(stuck: StuckLookup) -> None:
    transport = WebSocketTransport(resolver=Resolver(stuck))
    result = connect_in_background(transport, "ws://daemon.test:1/ws", timeout=60)
    assert stuck.entered.wait(10)
    transport.abort()
    error = result()
    assert isinstance(error, ResolveAborted)
    assert "aborted while resolving daemon.test" in str(error)


def test_the_connect_timeout_bounds_resolution(stuck: StuckLookup) -> None:
    transport = WebSocketTransport(resolver=Resolver(stuck))
    with pytest.raises(TimeoutError, match=r"no WebSocket connection within 0.2 s \(resolving daemon.test took"):
        transport.connect(ConnectParams(url="ws://daemon.test:1/ws", timeout=0.2))
    assert stuck.entered.is_set()


def test_close_ends_a_client_connect_waiting_for_the_resolver(stuck: StuckLookup) -> None:
    resolver = Resolver(stuck)
    before = live_threads()
    client = dc.Client(
        "ws://daemon.test:1/ws",
        transport_factory=lambda: WebSocketTransport(resolver=resolver),
        connect_timeout=60,
        reconnect=NO_RETRY,
    )
    connecting = BackgroundConnect(client)
    try:
        assert stuck.entered.wait(10)
    finally:
        client.close()
    assert isinstance(connecting.result(), dc.ClientClosed)
    # close() joined the reader: it no longer waits for the lookup, which is left to its thread
    assert_no_new_threads(before, timeout=0)
    assert len(resolver.abandoned()) == 1
    assert set(resolver.abandoned()) <= set(abandoned_threads())


def test_connect_timeout_ends_a_client_connect_waiting_for_the_resolver(stuck: StuckLookup) -> None:
    resolver = Resolver(stuck)
    before = live_threads()
    client = dc.Client(
        "ws://daemon.test:1/ws",
        transport_factory=lambda: WebSocketTransport(resolver=resolver),
        connect_timeout=0.2,
        reconnect=NO_RETRY,
    )
    try:
        with pytest.raises(dc.ConnectTimeout):
            client.connect()
    finally:
        client.close()
    assert_no_new_threads(before, timeout=0)  # the reader ended: it waited for the lookup no longer


def test_sixteen_connects_to_sixteen_hosts_use_at_most_the_pool(stuck: StuckLookup, fast_switching: None) -> None:
    resolver = Resolver(stuck, max_threads=2)
    before = live_threads()
    results = [
        connect_in_background(WebSocketTransport(resolver=resolver), f"ws://host-{n}.test:1/ws", timeout=0.3)
        for n in range(16)
    ]
    errors = [result() for result in results]
    assert all(isinstance(error, TimeoutError) for error in errors), errors
    assert stuck.calls == 2
    assert stuck.most_at_once == 2
    stuck_threads = resolver.abandoned()
    assert set(stuck_threads) <= set(abandoned_threads())
    assert len(stuck_threads) == 2
    assert all(t.name.startswith("daemon-client-resolver-") for t in stuck_threads)
    assert_no_new_threads(before, timeout=0)  # only the abandoned lookups are alive, and they are allowed
    stuck.release.set()
    for thread in stuck_threads:
        thread.join(5)
    assert stuck.calls == 2  # nobody waited for the queued ones: dropped, not run


def test_connects_to_one_host_share_one_lookup(stuck: StuckLookup, fast_switching: None) -> None:
    resolver = Resolver(stuck, max_threads=4)
    results = [
        connect_in_background(WebSocketTransport(resolver=resolver), "ws://daemon.test:1/ws", timeout=0.3)
        for _ in range(16)
    ]
    assert all(isinstance(result(), TimeoutError) for result in results)
    assert stuck.calls == 1


def test_a_lookup_someone_waits_for_is_a_leak_until_it_ends(stuck: StuckLookup) -> None:
    transport = WebSocketTransport(resolver=Resolver(stuck))
    result = connect_in_background(transport, "ws://daemon.test:1/ws", timeout=60)
    before = live_threads()  # the connecting thread, not yet the lookup's
    assert stuck.entered.wait(10)
    with pytest.raises(AssertionError, match="daemon-client-resolver-"):
        assert_no_new_threads(before - {t for t in before if t.name.startswith("daemon-client-resolver")}, timeout=0)
    transport.abort()
    assert isinstance(result(), ResolveAborted)


def test_a_released_lookup_answers_its_waiter_and_the_thread_ends() -> None:
    answered = threading.Event()

    def lookup(host: str, port: int) -> list[AddrInfo]:
        answered.set()
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    resolver = Resolver(lookup)
    assert resolver.max_threads == 4
    found = resolver.resolve("daemon.test", 7, timeout=5, wake=threading.Event())
    assert answered.is_set()
    assert found[0][4] == ("127.0.0.1", 7)


def test_lookup_failures_reach_the_connect() -> None:
    def unknown(host: str, port: int) -> list[AddrInfo]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    def broken(host: str, port: int) -> list[AddrInfo]:
        raise RuntimeError("resolver defect")

    with pytest.raises(TransportError, match="Name or service not known"):
        WebSocketTransport(resolver=Resolver(unknown)).connect(ConnectParams(url="ws://nowhere.test/ws", timeout=5))
    with pytest.raises(OSError, match=r"resolving nowhere\.test failed: RuntimeError"):
        Resolver(broken).resolve("nowhere.test", 80, timeout=5, wake=threading.Event())


def test_ip_literals_are_not_looked_up_and_an_aborted_caller_never_queues(stuck: StuckLookup) -> None:
    resolver = Resolver(stuck)
    assert resolver.resolve("127.0.0.1", 9, timeout=5, wake=threading.Event())[0][4] == ("127.0.0.1", 9)
    assert resolver.resolve("::1", 9, timeout=5, wake=threading.Event())[0][4][:2] == ("::1", 9)
    gone = threading.Event()
    gone.set()
    with pytest.raises(ResolveAborted, match="aborted before resolving"):
        resolver.resolve("daemon.test", 9, timeout=5, wake=gone)
    with pytest.raises(ResolveTimeout):
        resolver.resolve("daemon.test", 9, timeout=0, wake=threading.Event())
    assert stuck.calls in (0, 1)  # a zero timeout may leave before the pool thread took the lookup


def test_an_aborted_transport_does_not_resolve(stuck: StuckLookup) -> None:
    transport = WebSocketTransport(resolver=Resolver(stuck))
    transport.abort()
    with pytest.raises(TransportError, match="aborted before connecting"):
        transport.connect(ConnectParams(url="ws://daemon.test/ws", timeout=5))
    assert stuck.calls == 0


def test_the_pool_needs_a_thread() -> None:
    with pytest.raises(ValueError, match="max_threads"):
        Resolver(max_threads=0)


def test_the_system_lookup_and_the_process_wide_resolver(fakes) -> None:
    assert any(entry[4][1] == 80 for entry in system_lookup("localhost", 80))
    url = fakes().serve()
    upgraded = open_websocket(
        parse_target(url), timeout=5, headers={}, subprotocols=(), ssl_context=None, adopt=lambda sock: None
    )  # no resolve given: the process-wide resolver, bounded by the timeout only
    upgraded.sock.close()
