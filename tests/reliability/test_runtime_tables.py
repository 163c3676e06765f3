"""The runtime's tables under load and under concurrent change.

* Timers: an answered, failed or abandoned request releases its timer at once; the timer
  heap stays proportional to what is pending, not to how many requests were made.
* Registrations (push listeners, state listeners, connection hooks): safe under concurrent
  add and remove from any thread, including from inside callbacks; a listener removed hears
  nothing afterwards, even what was already queued for it.
"""

from __future__ import annotations

import gc
import threading
import weakref
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.runtime.timers import TimerThread
from daemon_client.testing import RecordingHandler
from tests.reliability.conftest import StateLog, wait_until
from tests.reliability.stalls import BOUND

REQUESTS = 2_000
HEAP_BOUND = 128
"""Twice the compaction threshold (``timers.COMPACT_MIN``): the most a drained heap may hold."""
THREADS = 16


def connected(fakes, make_client, **options: Any) -> tuple[Any, dc.Client]:  # type: ignore[no-untyped-def]
    fake = fakes()
    fake.on_request("echo_request", lambda ctx: ctx.reply({"echo": ctx.message.get("value")}))
    client = make_client(fake, **options)
    client.connect()
    return fake, client


# ----------------------------------------------------------------------------- timers
def test_answered_requests_release_their_timers(fakes, make_client) -> None:
    _fake, client = connected(fakes, make_client, heartbeat=dc.Heartbeat(enabled=False))
    for n in range(REQUESTS):
        client.request({"type": "echo_request", "value": n}, timeout=60)
    assert len(client._timers._heap) < HEAP_BOUND  # not 2,000 entries kept for 60 s each
    assert client._timers.pending <= 1  # the socket's write watchdog, nothing per request


def test_failed_and_abandoned_requests_release_their_timers(fakes, make_client) -> None:
    fake, client = connected(fakes, make_client, heartbeat=dc.Heartbeat(enabled=False))
    fake.fail_next("echo_request")
    with pytest.raises(dc.RpcError):
        client.request({"type": "echo_request", "value": "x"})
    fake.ignore("echo_request")
    held = [client.request_async({"type": "echo_request", "value": n}, timeout=60) for n in range(REQUESTS // 2)]
    assert len(held) <= client._timers.pending <= len(held) + 1  # pending requests keep theirs
    states = StateLog()
    client.on_state_change(states)
    fake.drop_connections()  # every pending request fails with ConnectionLost
    for future in held:
        assert isinstance(future.exception(BOUND), dc.ConnectionLost)
    states.wait_reconnects(1, timeout=BOUND)
    assert client._timers.pending <= 2  # at most the write watchdogs of the two sockets
    assert len(client._timers) < HEAP_BOUND


def test_a_cancelled_timer_frees_what_it_holds_at_once() -> None:
    timers = TimerThread("test-timers")

    class Payload:
        pass

    try:
        payload = Payload()
        ref = weakref.ref(payload)
        timer = timers.schedule(3600, lambda payload=payload: None)  # type: ignore[misc]
        del payload
        gc.collect()
        assert ref() is not None
        timer.cancel()
        gc.collect()
        assert ref() is None
        many = [timers.schedule(3600, lambda: None) for _ in range(10_000)]
        for other in many:
            other.cancel()
        assert timers.pending == 0
        assert len(timers) < HEAP_BOUND
        ran = threading.Event()
        timers.schedule(0, ran.set)  # still serving after compaction
        assert ran.wait(BOUND)
    finally:
        timers.stop()


# ----------------------------------------------------------------------------- registrations
def test_push_listeners_added_and_removed_concurrently_each_hear_exactly_what_they_should(fakes, make_client) -> None:
    fake, client = connected(fakes, make_client)
    lock = threading.Lock()
    heard: dict[int, int] = {}
    kept: set[int] = set()
    barrier = threading.Barrier(THREADS)

    def worker(index: int) -> None:
        barrier.wait(BOUND)
        for n in range(100):
            key = index * 1000 + n

            def listener(_message: dc.SessionMessage, key: int = key) -> None:
                with lock:
                    heard[key] = heard.get(key, 0) + 1

            remove = client.add_push_listener(listener, ["custom"])
            if n % 2:
                remove()
            else:
                with lock:
                    kept.add(key)

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join(BOUND)
    fake.push("custom", {})
    client.ping()
    assert client.flush_callbacks(BOUND)
    assert set(heard) == kept
    assert set(heard.values()) == {1}


def test_a_listener_removed_from_a_callback_hears_nothing_more(fakes, make_client) -> None:
    fake, client = connected(fakes, make_client, callback_executor="manual")
    second: RecordingHandler[dc.SessionMessage] = RecordingHandler("second")
    removers: list[Any] = []

    def first(_message: dc.SessionMessage) -> None:
        removers[0]()  # removes ``second`` while its calls for both pushes are queued

    client.add_push_listener(first, ["custom"])
    removers.append(client.add_push_listener(second, ["custom"]))
    fake.push("custom", {"n": 1})
    fake.push("custom", {"n": 2})
    client.ping()
    client.process_events()
    assert second.items == []


def test_a_state_listener_removed_hears_nothing_more(fakes, make_client) -> None:
    fake, client = connected(fakes, make_client, callback_executor="manual")
    states = StateLog()
    remove = client.on_state_change(states)
    fake.drop_connections()  # transitions are queued for the manual loop
    wait_until(lambda: fake.accepted_count == 2 and client.state is dc.ConnectionState.CONNECTED, BOUND, "no reconnect")
    remove()
    client.process_events()
    assert states.items == []


def test_state_listeners_added_and_removed_concurrently(fakes, make_client) -> None:
    fake, client = connected(fakes, make_client)
    barrier = threading.Barrier(THREADS)
    recorders: list[tuple[StateLog, bool]] = []
    lock = threading.Lock()

    def worker() -> None:
        barrier.wait(BOUND)
        for n in range(50):
            log = StateLog()
            remove = client.on_state_change(log)
            if n % 2:
                remove()
            with lock:
                recorders.append((log, not n % 2))

    workers = [threading.Thread(target=worker) for _ in range(THREADS)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join(BOUND)
    assert client.flush_callbacks(BOUND)
    for log, _kept in recorders:
        log.clear()
    fake.drop_connections()
    wait_until(lambda: fake.accepted_count == 2 and client.state is dc.ConnectionState.CONNECTED, BOUND, "no reconnect")
    assert client.flush_callbacks(BOUND)
    for log, kept in recorders:
        assert (log.reconnects() == 1) is kept, log.items


def test_hooks_added_from_many_threads_each_restore_once_per_handshake(fakes, make_client) -> None:
    fake, client = connected(fakes, make_client)
    lock = threading.Lock()
    calls: dict[int, list[bool]] = {}
    barrier = threading.Barrier(THREADS)

    def worker(index: int) -> None:
        barrier.wait(BOUND)
        for n in range(20):
            key = index * 100 + n

            def restore(_kind: dc.HostKind, reconnected: bool, key: int = key) -> None:
                with lock:
                    calls.setdefault(key, []).append(reconnected)

            client._connection.add_hooks(restore)

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join(BOUND)
    assert len(calls) == THREADS * 20
    assert all(seen == [False] for seen in calls.values())  # each learnt the host kind once
    states = StateLog()
    client.on_state_change(states)
    fake.drop_connections()
    states.wait_reconnects(1, timeout=BOUND)
    assert all(seen == [False, True] for seen in calls.values())
