"""``connect()`` from many threads, after a failure, and ``close()`` during a connect.

* Any number of concurrent ``connect()`` calls open exactly one connection (one socket, one
  reader thread) and all get its ``server_info``.
* A ``connect()`` right after a failed one joins a live attempt or starts a new one, even
  while the failed attempt's thread has not ended yet.
* ``close()`` interrupts a connect in progress, also a TCP connect whose SYN nobody answers
  (a loopback listener whose backlog is full), and no thread of the client outlives it.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.transport.base import ConnectParams
from daemon_client.transport.websocket import WebSocketTransport
from tests.conftest import TRANSPORTS, BackgroundConnect
from tests.reliability.conftest import client_threads
from tests.reliability.stalls import BOUND, bounded

ROUNDS = 20
CALLERS = 8


def threads_of(client: dc.Client) -> list[str]:
    prefix = f"{client._name}-"
    return [name for name in client_threads() if name.startswith(prefix)]


@pytest.fixture
def busy_switching() -> Iterator[None]:
    """Switch threads as often as the interpreter allows, to widen every race window."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(previous)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_concurrent_connects_open_exactly_one_connection(fakes, make_client, transport, busy_switching) -> None:
    fake = fakes()
    if transport == "loopback":
        fake.serve()
    for round_number in range(ROUNDS):
        client = make_client(fake, transport)
        barrier = threading.Barrier(CALLERS)
        infos: list[object] = []

        def call(client: dc.Client, barrier: threading.Barrier, infos: list[object]) -> None:
            barrier.wait(BOUND)
            try:
                result: object = client.connect(timeout=BOUND)
            except BaseException as exc:  # handed to the test
                result = exc
            infos.append(result)  # list.append is atomic

        callers = [
            threading.Thread(target=call, args=(client, barrier, infos), name=f"connect-caller-{n}")
            for n in range(CALLERS)
        ]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join(BOUND)
        assert len(infos) == CALLERS, infos
        assert all(info is infos[0] for info in infos), infos  # one outcome, shared
        assert isinstance(infos[0], dc.ServerInfo)
        readers = [name for name in threads_of(client) if name.endswith("-reader")]
        assert len(readers) == 1, (round_number, readers)
        assert fake.accepted_count == round_number + 1, (round_number, fake.accepted_count)
        client.close()
        assert threads_of(client) == []


@pytest.fixture
def lingering_readers(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[threading.Event, threading.Event]]:
    """A client's reader thread, once its work is done, stays alive until ``release`` is set
    (as a thread does for a moment after it settled the connect() waiters); ``paused`` is set
    when one lingers."""
    paused, release = threading.Event(), threading.Event()
    original = threading.Thread.run

    def run(self: threading.Thread) -> None:
        try:
            original(self)
        finally:
            if self.name.startswith("daemon-client-") and self.name.endswith("-reader"):
                paused.set()
                release.wait(BOUND)

    monkeypatch.setattr(threading.Thread, "run", run)
    yield paused, release
    release.set()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_connect_after_a_failed_one_starts_a_new_attempt(fakes, make_client, transport, lingering_readers) -> None:
    paused, release = lingering_readers
    fake = fakes()
    if transport == "loopback":
        fake.serve()
    client = make_client(fake, transport)
    fake.refuse_connections = True
    with pytest.raises(dc.ConnectionLost):
        client.connect(timeout=BOUND)
    assert paused.wait(BOUND)  # the failed attempt's thread is still alive
    fake.refuse_connections = False
    info = client.connect(timeout=5)  # must not wait for the lingering thread
    assert isinstance(info, dc.ServerInfo)
    assert client.state is dc.ConnectionState.CONNECTED
    release.set()
    client.close()
    assert threads_of(client) == []


def test_connects_after_failures_in_a_row_each_start_an_attempt(fakes, make_client) -> None:
    fake = fakes()
    client = make_client(fake)
    fake.refuse_connections = True
    for _ in range(20):
        with pytest.raises(dc.ConnectionLost):
            client.connect(timeout=BOUND)
    assert fake.accepted_count == 0
    fake.refuse_connections = False
    assert isinstance(client.connect(timeout=BOUND), dc.ServerInfo)
    client.close()
    assert threads_of(client) == []


# ----------------------------------------------------------------------------- close during connect
class Unanswered:
    """A loopback listener that never answers. ``syn``: its backlog is full, so a new SYN
    goes unanswered; ``silent``: the TCP connect completes, the client's first bytes (a TLS
    ClientHello, an HTTP upgrade) are read (``spoke`` is set), and nothing is ever said."""

    def __init__(self, kind: str) -> None:
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(0 if kind == "syn" else 8)
        self.port = self.listener.getsockname()[1]
        self.fillers: list[socket.socket] = []
        self.spoke = threading.Event()
        self._thread: threading.Thread | None = None
        if kind == "syn":  # Linux queues backlog + 1 connections; later SYNs are dropped
            filler = socket.create_connection(("127.0.0.1", self.port), timeout=BOUND)
            self.fillers.append(filler)
        else:
            self._thread = threading.Thread(target=self._listen, name="unanswered", daemon=True)
            self._thread.start()

    def _listen(self) -> None:
        with contextlib.suppress(OSError):
            sock, _ = self.listener.accept()
            self.fillers.append(sock)
            if sock.recv(1):
                self.spoke.set()

    def close(self) -> None:
        for sock in self.fillers:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        if self._thread is not None:
            self._thread.join(BOUND)
        for sock in self.fillers:
            sock.close()


class EnteringTransport(WebSocketTransport):
    """Sets ``entered`` when a connect begins."""

    entered = threading.Event()

    def connect(self, params: ConnectParams) -> None:
        type(self).entered.set()
        super().connect(params)


@pytest.mark.parametrize(("kind", "scheme"), [("syn", "ws"), ("silent", "wss"), ("silent", "ws")])
def test_close_interrupts_a_connect_in_progress(kind: str, scheme: str) -> None:
    server = Unanswered(kind)
    entered = threading.Event()
    transport = type("Entering", (EnteringTransport,), {"entered": entered})
    context = ssl.create_default_context() if scheme == "wss" else None
    client = dc.Client(
        f"{scheme}://127.0.0.1:{server.port}/ws", connect_timeout=20, transport_factory=transport, ssl_context=context
    )
    try:
        connecting = BackgroundConnect(client)
        assert entered.wait(BOUND)
        if kind == "silent":
            assert server.spoke.wait(BOUND)  # inside the TLS handshake or the upgrade
        bounded(lambda: client.close(1.0), what="close()")
        assert threads_of(client) == []  # close() joined the reader: it left the connect at once
        assert isinstance(connecting.result(BOUND), dc.ClientClosed)
    finally:
        client.close()
        server.close()


def test_close_before_the_transport_connects_refuses_the_connect(fakes) -> None:
    """An abort that lands before ``connect()`` starts still ends it (the transport remembers)."""
    transport = WebSocketTransport()
    transport.abort()
    server = Unanswered("syn")
    try:
        with pytest.raises(Exception, match="aborted"):
            bounded(lambda: transport.connect(ConnectParams(url=f"ws://127.0.0.1:{server.port}/ws", timeout=20)))
    finally:
        server.close()


def test_a_transport_factory_that_raises_fails_that_connect_at_once(fakes) -> None:
    fake = fakes()
    calls: list[int] = []

    def factory() -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("factory defect")
        return fake.transport_factory()

    client = dc.Client("ws://fake/ws", transport_factory=factory, strict=True)
    try:
        with pytest.raises(dc.ConnectionLost, match="factory defect"):
            client.connect(timeout=BOUND)
        assert isinstance(client.connect(timeout=BOUND), dc.ServerInfo)
    finally:
        client.close()
    assert threads_of(client) == []


def test_a_reader_thread_that_fails_hands_over(fakes, make_client) -> None:
    """An internal defect in the reader thread fails the waiting connect() at once, and the
    next connect() starts a new reader."""
    failures = [RuntimeError("reader defect")]

    def defect() -> None:  # the first connection attempt's reader thread fails
        if failures:
            raise failures.pop()

    client = make_client(fakes())
    client._connection._supervisor._before_attempt = defect
    with pytest.raises(dc.ConnectionLost, match="reader defect"):
        client.connect(timeout=BOUND)
    assert client.state is dc.ConnectionState.DISCONNECTED
    assert isinstance(client.connect(timeout=BOUND), dc.ServerInfo)
    client.close()
    assert threads_of(client) == []


def test_concurrent_close_calls_each_return_with_every_thread_ended(fakes, make_client) -> None:
    """Every caller of close(), not only the first, returns after the client's threads ended;
    here while a callback is still running when the calls begin."""
    fake = fakes()
    client = make_client(fake)
    client.connect()
    closers = 4
    entered = threading.Semaphore(0)
    in_callback = threading.Event()

    def slow_callback(_message: dc.SessionMessage) -> None:
        in_callback.set()
        for _ in range(closers):  # returns once every close() call has begun
            assert entered.acquire(timeout=BOUND)

    client.add_push_listener(slow_callback, ["custom"])
    fake.push("custom", {})
    assert in_callback.wait(BOUND)
    leftovers: list[list[str]] = []

    def close() -> None:
        entered.release()
        client.close(BOUND)
        leftovers.append(threads_of(client))

    threads = [threading.Thread(target=close, name=f"closer-{n}") for n in range(closers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(2 * BOUND)
    assert leftovers == [[]] * closers
