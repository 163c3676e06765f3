"""A daemon that stops reading must not hang anything (the write path).

Every socket write happens on the socket's writer thread; callers only queue frames. So
while the daemon's TCP window is full: ``request_async`` returns at once, request deadlines
and the heartbeat keep firing, the reader keeps delivering what the daemon sends (its
WebSocket pings are answered by the writer, not the reader), a write stalled past the
heartbeat bounds ends the connection (which reconnects), and ``close(timeout)`` returns
within its timeout, leaving no thread. In memory (a transport whose writes block until it
is aborted) and on loopback (a daemon with a tiny receive buffer that never reads).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon, RecordingHandler
from tests.reliability.conftest import StateLog, client_threads, wait_until
from tests.reliability.stalls import BOUND, DeafDaemon, StallGate, bounded, stalling_factory

FAST_HEARTBEAT = dc.Heartbeat(interval=0.1, timeout=0.2, max_misses=2)
BIG = "x" * (32 * 1024 * 1024)


def echo(ctx) -> None:  # type: ignore[no-untyped-def]
    ctx.reply({"value": ctx.message.get("value")})


@pytest.fixture
def gate() -> StallGate:
    return StallGate()


@pytest.fixture
def make_stalling(fakes, gate: StallGate) -> Iterator[Callable[..., tuple[FakeDaemon, dc.Client]]]:  # type: ignore[no-untyped-def]
    """``make_stalling(**options)``: a fake and a strict in-memory client whose transports
    obey ``gate``; closed after the test."""
    clients: list[dc.Client] = []

    def make(**options: object) -> tuple[FakeDaemon, dc.Client]:
        fake = fakes()
        fake.on_request("echo_request", echo)
        options.setdefault("reconnect", dc.ReconnectPolicy(base_delay=0.05, max_delay=0.2, stable_after=0.5))
        client = dc.Client("ws://fake/ws", transport_factory=stalling_factory(fake, gate), strict=True, **options)  # type: ignore[arg-type]
        clients.append(client)
        return fake, client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def stalled_client(make_stalling, gate: StallGate) -> Callable[..., dc.Client]:  # type: ignore[no-untyped-def]
    """``stalled_client(**options)``: connected, and its first connection stalls from now on."""

    def make(**options: object) -> dc.Client:
        _fake, client = make_stalling(**options)
        client.connect()
        gate.stall(1)
        return client

    return make


def assert_closed_within(client: dc.Client, timeout: float) -> None:
    """``close(timeout)`` returned (bounded) and no thread of this client is left."""
    bounded(lambda: client.close(timeout), what="close()")
    prefix = f"{client._name}-"
    assert [name for name in client_threads() if name.startswith(prefix)] == []


def test_request_async_never_blocks_and_deadlines_keep_firing(stalled_client, gate) -> None:
    client = stalled_client(heartbeat=dc.Heartbeat(enabled=False))
    stuck = bounded(lambda: client.request_async({"type": "echo_request", "value": BIG}, timeout=0.3))
    assert gate.stalled.wait(BOUND)  # the writer is blocked in that write
    behind = bounded(lambda: client.request_async({"type": "echo_request", "value": "small"}, timeout=0.3))
    with pytest.raises(dc.RequestTimeout):  # a blocking request from another thread ends at its deadline
        bounded(lambda: client.request({"type": "echo_request", "value": "other"}, timeout=0.3))
    assert isinstance(stuck.exception(BOUND), dc.RequestTimeout)
    assert isinstance(behind.exception(BOUND), dc.RequestTimeout)
    assert client.state is dc.ConnectionState.CONNECTED  # no heartbeat here: the socket is kept
    assert_closed_within(client, 1.0)


def test_stalled_writes_past_the_heartbeat_bounds_reconnect(stalled_client, gate) -> None:
    client = stalled_client(heartbeat=FAST_HEARTBEAT)
    states = StateLog()
    client.on_state_change(states)
    client.request_async({"type": "echo_request", "value": "never written"}, timeout=30)
    states.wait_reconnects(1, timeout=BOUND)  # the heartbeat's timer never blocked on the write
    assert client.request({"type": "echo_request", "value": "again"}, timeout=5)["value"] == "again"
    assert_closed_within(client, 1.0)


def test_the_stall_watchdog_ends_the_connection_without_a_heartbeat(stalled_client, gate) -> None:
    watchdog_only = dc.Heartbeat(enabled=False, interval=0.1, timeout=0.1, max_misses=1)  # bound: 0.2 s
    client = stalled_client(heartbeat=watchdog_only)
    states = StateLog()
    client.on_state_change(states)
    pending = client.request_async({"type": "echo_request", "value": "stuck"}, timeout=30)
    error = pending.exception(BOUND)
    assert isinstance(error, dc.ConnectionLost), error
    assert "no progress" in str(error), error
    states.wait_reconnects(1, timeout=BOUND)
    assert client.request({"type": "echo_request", "value": "again"}, timeout=5)["value"] == "again"
    assert_closed_within(client, 1.0)


def test_close_aborts_a_stuck_write_and_returns_within_its_timeout(stalled_client, gate) -> None:
    client = stalled_client()
    client.request_async({"type": "echo_request", "value": BIG})
    assert gate.stalled.wait(BOUND)
    assert_closed_within(client, 1.0)


def test_a_full_outbound_queue_fails_the_request_at_once(stalled_client, gate, monkeypatch) -> None:
    monkeypatch.setattr("daemon_client.runtime.writer.MAX_QUEUED_CHARS", 10_000)
    client = stalled_client(heartbeat=dc.Heartbeat(enabled=False))
    client.request_async({"type": "echo_request", "value": "first"})  # taken by the writer, which blocks
    assert gate.stalled.wait(BOUND)
    queued = client.request_async({"type": "echo_request", "value": "y" * 6_000})
    refused = client.request_async({"type": "echo_request", "value": "z" * 6_000})
    error = refused.exception(0)  # failed before request_async returned
    assert isinstance(error, dc.ConnectionLost), error
    assert "not reading" in str(error), error
    assert not queued.done()
    assert_closed_within(client, 1.0)
    assert isinstance(queued.exception(0), dc.ClientClosed)


# ----------------------------------------------------------------------------- on loopback
@pytest.fixture
def deaf() -> Iterator[DeafDaemon]:
    daemon = DeafDaemon()
    yield daemon
    daemon.close()


def test_a_deaf_daemon_on_loopback_blocks_no_caller_and_no_reader(deaf: DeafDaemon) -> None:
    client = dc.Client(deaf.url, strict=True, reconnect=dc.ReconnectPolicy(enabled=False))
    try:
        client.connect(timeout=BOUND)
        pushes: RecordingHandler[dc.SessionMessage] = RecordingHandler("pushes")
        client.add_push_listener(pushes, ["custom_push"])
        big = bounded(lambda: client.request_async({"type": "ping", "blob": BIG}, timeout=30), what="request_async")
        with pytest.raises(dc.RequestTimeout):
            bounded(lambda: client.request({"type": "ping"}, timeout=0.5), what="request")
        # The daemon still writes: a WebSocket ping (its pong is queued behind the 32 MB frame,
        # so the reader must not write it), then a push the reader must still deliver.
        deaf.send_ping(b"still there?")
        deaf.push("custom_push", {"n": 1})
        assert pushes.wait_for(1, timeout=BOUND)[0].payload == {"n": 1}
        assert not big.done()
        assert_closed_within(client, 1.0)
        assert isinstance(big.exception(0), dc.ClientClosed)
    finally:
        client.close()


def test_a_deaf_daemon_on_loopback_is_declared_dead_by_the_heartbeat(deaf: DeafDaemon) -> None:
    client = dc.Client(deaf.url, strict=True, heartbeat=FAST_HEARTBEAT, reconnect=dc.ReconnectPolicy(enabled=False))
    states = StateLog()
    client.on_state_change(states)
    try:
        client.connect(timeout=BOUND)
        client.request_async({"type": "ping", "blob": BIG}, timeout=30)
        lost = states.wait_for(1, predicate=lambda c: c[1] is dc.ConnectionState.DISCONNECTED, timeout=BOUND)
        assert "Heartbeat timeout" in lost[0][2] or "no progress" in lost[0][2], lost
    finally:
        assert_closed_within(client, 1.0)


def test_a_daemon_that_stops_reading_during_the_handshake_times_out(make_stalling, gate) -> None:
    gate.stall(1)  # even the hello never leaves
    _fake, client = make_stalling(connect_timeout=0.3)
    with pytest.raises(dc.ConnectTimeout):
        bounded(client.connect, what="connect()")
    assert gate.stalled.is_set()
    assert_closed_within(client, 1.0)


def test_threads_blocked_on_nothing_after_many_stalled_requests(stalled_client, gate) -> None:
    """Many threads issue requests while the writer is stuck: none of them blocks."""
    client = stalled_client(heartbeat=dc.Heartbeat(enabled=False))
    client.request_async({"type": "echo_request", "value": BIG})
    assert gate.stalled.wait(BOUND)
    futures = []
    lock = threading.Lock()

    def burst() -> None:
        for n in range(50):
            future = client.request_async({"type": "echo_request", "value": f"v{n}"}, timeout=30)
            with lock:
                futures.append(future)

    workers = [threading.Thread(target=burst) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(BOUND)
    assert not any(worker.is_alive() for worker in workers)
    assert len(futures) == 400
    assert not any(f.done() for f in futures)
    assert_closed_within(client, 1.0)
    assert all(isinstance(f.exception(0), dc.ClientClosed) for f in futures)


def test_what_was_queued_before_close_is_written_before_the_close_frame(fakes, make_client) -> None:
    fake = fakes()
    fake.agents.upsert("a1")
    client = make_client(fake)
    client.connect()
    for n in range(50):
        client.agents.ref("a1").respond_to_permission(f"perm-{n}", allow=True)  # fire and forget
    client.close()
    fake.wait_for_frame(lambda f: f.matches("agent_permission_response") and f["message"]["requestId"] == "perm-49")
    answered = [f["message"]["requestId"] for f in fake.received if f.matches("agent_permission_response")]
    assert answered == [f"perm-{n}" for n in range(50)]
    wait_until(lambda: fake.connections == [], BOUND, "the socket did not end")
