"""Where callbacks run: the manual loop, and done-callbacks of the futures the client returns.

* Manual mode: callbacks run only inside ``process_events()`` on the thread calling it;
  ``flush_callbacks()`` from another thread waits for that loop to run them.
* Every future the client returns (``request_async``, timeline and directory ``ready``) runs
  every done-callback exactly once, whenever it is added: on the callback thread while the
  client is open, at once on the adding thread after ``close()``.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon
from tests.reliability.conftest import wait_until
from tests.reliability.stalls import BOUND

PUSHES = 20


def connected(fakes, make_client, **options: Any) -> tuple[FakeDaemon, dc.Client]:  # type: ignore[no-untyped-def]
    fake = fakes()
    fake.agents.upsert("a1")
    fake.on_request("echo_request", lambda ctx: ctx.reply({"echo": ctx.message.get("value")}))
    client = make_client(fake, **options)
    client.connect()
    return fake, client


class Tracker:
    """Records which thread ran each call, and whether two calls ever overlapped."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self.threads: list[str] = []
        self.overlaps = 0

    def __call__(self, *_args: object) -> None:
        with self._lock:
            self._active += 1
            if self._active > 1:
                self.overlaps += 1
            self.threads.append(threading.current_thread().name)
        with self._lock:
            self._active -= 1


# ----------------------------------------------------------------------------- manual mode
def test_flush_from_another_thread_waits_for_the_manual_loop(fakes, make_client) -> None:
    fake, client = connected(fakes, make_client, callback_executor="manual")
    tracker = Tracker()
    client.add_push_listener(tracker, ["custom"])
    started, go, stop = threading.Event(), threading.Event(), threading.Event()

    def loop() -> None:
        client.process_events(0)  # this thread runs the application's loop from now on
        started.set()
        go.wait(BOUND)
        while not stop.is_set():
            client.process_events(0.05)

    looper = threading.Thread(target=loop, name="app-loop")
    looper.start()
    try:
        assert started.wait(BOUND)
        for n in range(PUSHES):
            fake.push("custom", {"n": n})
        client.ping()  # the pong follows the pushes: they are queued for the callback thread
        queued = client._dispatcher.pending
        assert queued >= PUSHES
        flushed: list[bool] = []
        flusher = threading.Thread(target=lambda: flushed.append(client.flush_callbacks(BOUND)), name="flusher")
        flusher.start()
        # The flusher has acted once the queue changed: one more job (it waits for the loop)
        # or fewer (it ran callbacks itself, on the wrong thread).
        wait_until(lambda: client._dispatcher.pending != queued, BOUND, "flush_callbacks() did nothing")
        go.set()
        flusher.join(BOUND)
        assert flushed == [True]
        assert tracker.threads == ["app-loop"] * PUSHES
        assert tracker.overlaps == 0
    finally:
        go.set()
        stop.set()
        looper.join(BOUND)


def test_flush_on_the_loop_thread_runs_the_callbacks_there(fakes, make_client) -> None:
    fake, client = connected(fakes, make_client, callback_executor="manual")
    tracker = Tracker()
    client.add_push_listener(tracker, ["custom"])
    client.process_events(0)
    for n in range(PUSHES):
        fake.push("custom", {"n": n})
    client.ping()
    assert client.flush_callbacks(BOUND)
    assert tracker.threads == [threading.current_thread().name] * PUSHES


def test_process_events_from_two_threads_never_overlap(fakes, make_client) -> None:
    fake, client = connected(fakes, make_client, callback_executor="manual")
    tracker = Tracker()
    client.add_push_listener(tracker, ["custom"])
    for n in range(200):
        fake.push("custom", {"n": n})
    client.ping()

    def pump() -> None:
        while client.process_events(0):
            pass

    pumps = [threading.Thread(target=pump, name=f"pump-{n}") for n in range(4)]
    for thread in pumps:
        thread.start()
    for thread in pumps:
        thread.join(BOUND)
    assert len(tracker.threads) == 200
    assert tracker.overlaps == 0


# ----------------------------------------------------------------------------- done-callbacks
class Calls:
    """A done-callback that records each call with its thread."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Future[Any]]] = []
        self.done = threading.Event()

    def __call__(self, future: Future[Any]) -> None:
        self.calls.append((threading.current_thread().name, future))
        self.done.set()


def test_a_done_callback_added_after_close_runs_once_on_the_adding_thread(fakes, make_client) -> None:
    fake, client = connected(fakes, make_client)
    fake.ignore("echo_request")  # never answered: close() fails it
    future = client.request_async({"type": "echo_request", "value": 1})
    before = Calls()
    future.add_done_callback(before)
    client.close()
    assert isinstance(future.exception(0), dc.ClientClosed)
    after = Calls()
    future.add_done_callback(after)
    assert after.calls == [(threading.current_thread().name, future)]  # at once, as a plain Future does
    assert len(before.calls) == 1
    assert before.calls[0][0].endswith("-dispatch")  # delivered by close() before the callback thread stopped


def test_ready_futures_run_done_callbacks_added_after_close(fakes, make_client) -> None:
    _fake, client = connected(fakes, make_client)
    timeline = client.agents.ref("a1").timeline.subscribe(lambda update: None)
    directory = client.agents.list(subscribe=True).subscription
    assert directory is not None
    timeline.ready.result(BOUND)
    client.close()
    for ready in (timeline.ready, directory.ready):
        calls = Calls()
        ready.add_done_callback(calls)
        assert calls.calls == [(threading.current_thread().name, ready)]


def test_ready_done_callbacks_run_on_the_callback_thread_while_open(fakes, make_client) -> None:
    _fake, client = connected(fakes, make_client)
    directory = client.agents.list(subscribe=True).subscription
    assert directory is not None
    assert directory.ready.done()  # resolved when list(subscribe=True) returned
    calls = Calls()
    directory.ready.add_done_callback(calls)
    assert calls.done.wait(BOUND)
    assert len(calls.calls) == 1
    assert calls.calls[0][0].endswith("-dispatch")


def test_done_callbacks_racing_close_each_run_exactly_once(fakes, make_client) -> None:
    fake, client = connected(fakes, make_client)
    fake.ignore("echo_request")
    futures = [client.request_async({"type": "echo_request", "value": n}) for n in range(20)]
    counts: dict[int, int] = {}
    lock = threading.Lock()
    barrier = threading.Barrier(9)

    def add(worker: int) -> None:
        barrier.wait(BOUND)
        for index, future in enumerate(futures):
            key = worker * 1000 + index

            def count(_f: Future[Any], key: int = key) -> None:
                with lock:
                    counts[key] = counts.get(key, 0) + 1

            future.add_done_callback(count)

    adders = [threading.Thread(target=add, args=(n,), name=f"adder-{n}") for n in range(8)]
    for thread in adders:
        thread.start()
    barrier.wait(BOUND)
    client.close()
    for thread in adders:
        thread.join(BOUND)
    assert sorted(counts) == sorted(w * 1000 + i for w in range(8) for i in range(20))
    assert set(counts.values()) == {1}


def test_manual_mode_done_callbacks_after_close(fakes, make_client) -> None:
    fake, client = connected(fakes, make_client, callback_executor="manual")
    fake.ignore("echo_request")
    future = client.request_async({"type": "echo_request", "value": 1})
    queued = Calls()
    future.add_done_callback(queued)  # posted when close() fails the request
    client.close()
    assert queued.calls == []
    assert client.process_events() >= 1  # what close() queued is delivered by the loop
    assert [name for name, _ in queued.calls] == [threading.current_thread().name]
    late = Calls()
    future.add_done_callback(late)
    assert len(late.calls) == 1


@pytest.mark.parametrize("executor", [None, "manual"])
def test_flush_after_close_returns(fakes, make_client, executor) -> None:
    _fake, client = connected(fakes, make_client, callback_executor=executor)
    client.close()
    if executor == "manual":
        client.process_events()
    assert client.flush_callbacks(BOUND) is True
