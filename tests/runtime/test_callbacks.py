"""Callbacks: ordering, isolation of errors, blocking calls and close() from callbacks, executors."""

from __future__ import annotations

import contextlib
import queue
import threading
import time

import pytest

import daemon_client as dc
from daemon_client.testing import RecordingHandler


def _connected(fakes, make_client, **options) -> tuple:
    fake = fakes("capable")
    fake.on_request("echo_request", lambda ctx: ctx.reply({"echo": ctx.message.get("value")}))
    client = make_client(fake, **options)
    client.connect()
    return fake, client


def test_pushes_arrive_in_order_on_the_dispatcher_thread(fakes, make_client) -> None:
    fake, client = _connected(fakes, make_client)
    threads: set[str] = set()
    seen = RecordingHandler[int]("seen")

    def handler(message: dc.SessionMessage) -> None:
        threads.add(threading.current_thread().name)
        seen(message.payload["n"])

    client.add_push_listener(handler, ["numbered"])
    for n in range(500):
        fake.push("numbered", {"n": n})
    seen.wait_for(500)
    assert seen.items == list(range(500))
    assert len(threads) == 1
    assert threads.pop().endswith("-dispatch")


def test_a_raising_callback_does_not_stop_later_callbacks(fakes, make_client, caplog) -> None:
    errors: list[BaseException] = []
    fake, client = _connected(fakes, make_client, on_callback_error=errors.append, strict=False)
    seen = RecordingHandler[int]("seen")

    def flaky(message: dc.SessionMessage) -> None:
        if message.payload["n"] % 2 == 0:
            raise RuntimeError(f"bad {message.payload['n']}")
        seen(message.payload["n"])

    client.add_push_listener(flaky)
    for n in range(6):
        fake.push("numbered", {"n": n})
    assert seen.wait_for(3) == [1, 3, 5]
    assert client.flush_callbacks()
    assert [str(e) for e in errors] == ["bad 0", "bad 2", "bad 4"]
    assert "callback" in caplog.text
    assert "RuntimeError: bad 0" in caplog.text  # logged with its traceback
    assert client.request({"type": "echo_request", "value": 1})["echo"] == 1


def test_strict_mode_surfaces_callback_errors(fakes, make_client) -> None:
    fake, client = _connected(fakes, make_client, strict=True)
    calls = RecordingHandler[dc.SessionMessage]("calls")

    def broken(message: dc.SessionMessage) -> None:
        calls(message)
        _ = 1 / 0

    client.add_push_listener(broken)
    fake.push("anything", {})
    calls.wait_for(1)
    assert client.flush_callbacks()
    with pytest.raises(dc.CallbackError, match="ZeroDivisionError") as info:
        client.raise_callback_errors()
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    client.raise_callback_errors()  # raised once
    fake.push("anything", {})
    calls.wait_for(2)
    assert client.flush_callbacks()
    with pytest.raises(dc.CallbackError):
        client.close()
    assert client.state is dc.ConnectionState.DISPOSED


def test_a_callback_may_call_blocking_requests(fakes, make_client) -> None:
    fake, client = _connected(fakes, make_client)
    results = RecordingHandler[object]("results")

    def handler(message: dc.SessionMessage) -> None:
        results(client.request({"type": "echo_request", "value": message.payload["n"]})["echo"])
        results(client.ping().request_id is not None)

    client.add_push_listener(handler)
    fake.push("go", {"n": 9})
    assert results.wait_for(2) == [9, True]


def test_done_callbacks_of_request_futures_run_on_the_callback_thread(fakes, make_client) -> None:
    _, client = _connected(fakes, make_client)
    where: queue.Queue[str] = queue.Queue()
    future = client.request_async({"type": "echo_request", "value": 1})
    future.add_done_callback(lambda f: where.put(threading.current_thread().name))
    assert where.get(timeout=5).endswith("-dispatch")
    later: queue.Queue[str] = queue.Queue()
    future.add_done_callback(lambda f: later.put(threading.current_thread().name))  # already done
    assert later.get(timeout=5).endswith("-dispatch")


def test_close_from_inside_a_callback_returns(fakes, make_client) -> None:
    fake, client = _connected(fakes, make_client)
    returned = threading.Event()

    def handler(message: dc.SessionMessage) -> None:
        client.close()
        returned.set()

    client.add_push_listener(handler)
    fake.push("close_now", {})
    assert returned.wait(5)
    deadline = time.monotonic() + 5
    while client.state is not dc.ConnectionState.DISPOSED and time.monotonic() < deadline:
        time.sleep(0.01)
    assert client.state is dc.ConnectionState.DISPOSED


def test_close_from_a_state_listener_returns(fakes, make_client) -> None:
    fake = fakes("capable")
    client = make_client(fake)
    done = threading.Event()

    def listener(old, new, reason) -> None:
        if new is dc.ConnectionState.CONNECTED:
            client.close()
            done.set()

    client.on_state_change(listener)
    client.connect()
    assert done.wait(5)


def test_waiting_on_the_callback_thread_for_callbacks_raises_would_deadlock(fakes, make_client) -> None:
    fake, client = _connected(fakes, make_client)
    outcomes = RecordingHandler[object]("outcomes")
    inner = RecordingHandler[object]("inner")

    def handler(message: dc.SessionMessage) -> None:
        inner(message)
        # An hour's timeout: a wait that started instead of refusing would outlast the test's bound.
        for attempt in (lambda: client.flush_callbacks(3600.0), lambda: inner.wait_for(2, timeout=3600.0)):
            try:
                attempt()
                outcomes("no error")
            except dc.WouldDeadlock as exc:
                outcomes(type(exc).__name__)

    client.add_push_listener(handler, ["go"])
    fake.push("go", {})
    assert outcomes.wait_for(2, timeout=30) == ["WouldDeadlock", "WouldDeadlock"]


def test_state_listener_gets_the_current_state_first(fakes, make_client) -> None:
    _, client = _connected(fakes, make_client)
    states = RecordingHandler[tuple]("states")
    remove = client.on_state_change(states)
    assert states.wait_for(1)[0] == (dc.ConnectionState.CONNECTED, dc.ConnectionState.CONNECTED, "current state")
    remove()
    client.close()  # runs what was queued (the close's state changes too), then joins the thread
    assert not [t for t in threading.enumerate() if t.name == f"{client._name}-dispatch" and t.is_alive()]
    assert len(states) == 1  # nothing can be delivered any more, and nothing came


def test_manual_mode_runs_callbacks_only_inside_process_events(fakes, make_client) -> None:
    fake, client = _connected(fakes, make_client, callback_executor="manual")
    seen: list[tuple[int, str]] = []
    client.add_push_listener(lambda m: seen.append((m.payload["n"], threading.current_thread().name)), ["n"])
    for n in range(5):
        fake.push("n", {"n": n})
    fake.push("n", {"n": 5})
    # The reply comes after the six pushes on the same socket (and needs no pumping): once it is
    # here, they are queued, and none ran outside process_events().
    assert client.request({"type": "echo_request", "value": 1})["echo"] == 1
    assert client._dispatcher.pending >= 6
    assert seen == []
    ran = 0
    deadline = time.monotonic() + 5
    while len(seen) < 6 and time.monotonic() < deadline:
        ran += client.process_events(timeout=0.1)
    assert [n for n, _ in seen] == list(range(6))
    assert {name for _, name in seen} == {threading.current_thread().name}
    assert ran >= 6
    assert client.request({"type": "echo_request", "value": 2})["echo"] == 2  # replies need no pumping
    assert not [t for t in threading.enumerate() if t.name.endswith("-dispatch") and client._name in t.name]


def test_process_events_needs_manual_mode(fakes, make_client) -> None:
    _, client = _connected(fakes, make_client)
    with pytest.raises(RuntimeError, match="manual"):
        client.process_events()


def test_user_executor_receives_callbacks_in_order(fakes, make_client) -> None:
    gui: queue.Queue = queue.Queue()
    fake, client = _connected(fakes, make_client, callback_executor=gui.put)
    seen: list[int] = []
    client.add_push_listener(lambda m: seen.append(m.payload["n"]), ["n"])
    for n in range(100):
        fake.push("n", {"n": n})
    deadline = time.monotonic() + 5
    while len(seen) < 100 and time.monotonic() < deadline:
        with contextlib.suppress(queue.Empty):
            gui.get(timeout=0.1)()  # the "GUI loop" runs what was posted, on this thread
    assert seen == list(range(100))


def test_slow_callbacks_are_reported(fakes, make_client, caplog) -> None:
    fake, client = _connected(fakes, make_client)
    client._dispatcher._slow = 0.05
    slow = RecordingHandler[dc.SessionMessage]("slow")

    def sleepy(message: dc.SessionMessage) -> None:
        time.sleep(0.1)
        slow(message)

    client.add_push_listener(sleepy)
    fake.push("slow", {})
    slow.wait_for(1)
    assert client.flush_callbacks()
    assert "later callbacks waited" in caplog.text


def test_invalid_executor_is_rejected() -> None:
    with pytest.raises(TypeError, match="callback_executor"):
        dc.Client("ws://x/ws", callback_executor="threads")  # type: ignore[arg-type]


def test_an_interrupted_manual_wait_leaves_no_stale_wake_up() -> None:
    """Ctrl-C inside process_events() while it waits: the next wait still waits its timeout
    for a callback, and callbacks posted meanwhile run in order."""
    import signal

    from daemon_client.runtime.dispatch import Dispatcher

    dispatcher = Dispatcher(executor="manual")
    previous = signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        with pytest.raises(KeyboardInterrupt):
            dispatcher.process_events(timeout=5)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    ran: list[int] = []
    dispatcher.post_in_order(lambda: ran.append(1))
    dispatcher.post_in_order(lambda: ran.append(2))
    assert dispatcher.process_events(timeout=0) == 2
    assert ran == [1, 2]
    assert dispatcher.process_events(timeout=0.05) == 0  # nothing queued: waits, then none ran
    dispatcher.stop()
