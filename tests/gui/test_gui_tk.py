"""tk_executor under Xvfb: order under a burst, close from a callback, the root destroyed while
events still arrive, and WouldDeadlock on the Tk thread."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.gui import TkExecutor, tk_executor

tkinter = pytest.importorskip("tkinter", reason="Python was built without Tk")


@pytest.fixture(scope="module")
def display() -> Iterator[str]:
    """One private Xvfb screen for the module: Tk keeps its X connection open after a root is
    destroyed, and a vanished X server ends the process, so the screen outlives every root."""
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        pytest.skip("Xvfb is not installed")
    read, write = os.pipe()
    server = subprocess.Popen(
        [xvfb, "-displayfd", str(write), "-screen", "0", "800x600x24", "-nolisten", "tcp"],
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    try:
        ready, _, _ = select.select([read], [], [], 10.0)
        number = os.read(read, 32).decode().strip() if ready else ""
        assert number.isdigit(), "Xvfb did not report its display"
        yield f":{number}"
    finally:
        os.close(read)
        server.terminate()
        server.wait(10)


ROOTS: list[Any] = []
"""Every root made, kept to the end: a Tk interpreter freed on another thread (a test's client
collected there by the garbage collector, with a callback that holds the root) aborts the process."""


@pytest.fixture
def root(display: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("DISPLAY", display)
    made = tkinter.Tk()
    ROOTS.append(made)
    yield made
    with contextlib.suppress(tkinter.TclError):  # destroyed by the test
        made.destroy()


def pump(root: Any, until: Callable[[], bool], timeout: float = 10.0) -> None:
    """Run the Tk event loop on this thread until ``until()`` holds (fails after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, "the Tk loop did not get there in time"
        root.update()
        time.sleep(0.002)


def _connected(fakes, make_client, executor: TkExecutor) -> tuple[Any, dc.Client]:
    fake = fakes("selective")
    client = make_client(fake, callback_executor=executor)
    client.connect()
    return fake, client


def test_a_burst_runs_in_order_on_the_tk_thread(root, fakes, make_client) -> None:
    fake, client = _connected(fakes, make_client, tk_executor(root))
    seen: list[tuple[int, str]] = []
    client.add_push_listener(lambda m: seen.append((m.payload["n"], threading.current_thread().name)), ["numbered"])
    for n in range(3000):
        fake.push("numbered", {"n": n})
    pump(root, lambda: len(seen) == 3000)
    assert [n for n, _ in seen] == list(range(3000))
    assert {name for _, name in seen} == {threading.current_thread().name}


def test_close_from_a_tk_callback(root, fakes, make_client) -> None:
    fake, client = _connected(fakes, make_client, tk_executor(root))
    states: list[dc.ConnectionState] = []
    client.on_state_change(lambda _old, new, _reason: states.append(new))
    client.add_push_listener(lambda _m: client.close(), ["numbered"])
    fake.push("numbered", {"n": 1})
    pump(root, lambda: dc.ConnectionState.DISPOSED in states)
    assert client.state is dc.ConnectionState.DISPOSED


def test_the_root_destroyed_while_events_still_arrive(root, fakes, make_client, caplog) -> None:
    executor = tk_executor(root)
    fake, client = _connected(fakes, make_client, executor)
    seen: list[int] = []

    def on_push(message: dc.SessionMessage) -> None:
        seen.append(message.payload["n"])
        if message.payload["n"] == 10:
            root.destroy()

    client.add_push_listener(on_push, ["numbered"])
    for n in range(50):
        fake.push("numbered", {"n": n})
    pump(root, lambda: executor.stopped)
    for n in range(50, 100):
        fake.push("numbered", {"n": n})
    client.ping()  # the pushes before it were read and handed to the (stopped) executor
    flushed: list[bool] = []
    worker = threading.Thread(target=lambda: flushed.append(client.flush_callbacks(0.2)))
    worker.start()
    worker.join(10)
    assert flushed == [False]  # nothing runs them any more: the wait ends, False
    client.close()  # closes cleanly; no Tk call from any thread
    assert seen == list(range(11))
    assert executor.pending == 0
    assert executor.root is None  # let go of, so that no other thread frees the interpreter
    assert "dropping" in caplog.text


@pytest.mark.parametrize("case", ["providers.wait_for_ready()", "timeline.stream()", "flush_callbacks()"])
def test_waiting_on_the_tk_thread_raises_would_deadlock(root, fakes, make_client, case: str) -> None:
    fake, client = _connected(fakes, make_client, tk_executor(root))
    agent_id = fake.agents.upsert(title="tk")["id"]
    waits: dict[str, Callable[[], object]] = {
        "providers.wait_for_ready()": lambda: client.providers.wait_for_ready(timeout=5),
        "timeline.stream()": lambda: next(iter(client.agents.ref(agent_id).timeline.stream(timeout=5))),
        "flush_callbacks()": lambda: client.flush_callbacks(5),
    }
    with pytest.raises(dc.WouldDeadlock, match="worker thread"):
        waits[case]()
    done = threading.Event()
    worker = threading.Thread(target=lambda: (client.flush_callbacks(5), done.set()))
    worker.start()  # from a worker thread the same wait works while Tk runs
    pump(root, done.is_set)
    worker.join(5)


def test_bad_arguments_are_refused(root) -> None:
    with pytest.raises(ValueError, match="poll_ms"):
        tk_executor(root, poll_ms=0)


def test_a_raising_callable_is_logged_and_the_next_still_runs(root, caplog) -> None:
    executor = tk_executor(root)
    ran: list[str] = []
    executor(lambda: 1 / 0)
    executor(lambda: ran.append("after"))
    assert executor.drain() == 2
    assert ran == ["after"]
    assert "a callable handed to tk_executor raised" in caplog.text
    assert "ZeroDivisionError" in caplog.text
    executor.stop()


def test_a_child_widget_destroyed_does_not_stop_the_executor(root) -> None:
    executor = tk_executor(root)
    child = tkinter.Frame(root)
    child.destroy()  # its <Destroy> event reaches the root's binding too
    root.update()
    assert not executor.stopped
    ran: list[int] = []
    executor(lambda: ran.append(1))
    pump(root, lambda: ran == [1])
    executor.stop()


def test_stop_is_idempotent_and_later_callables_are_dropped(root, caplog) -> None:
    executor = tk_executor(root)
    executor.stop()
    executor.stop()
    assert executor.stopped
    assert executor.root is None
    executor(lambda: None)
    assert executor.pending == 0
    assert "dropping 1 callback(s)" in caplog.text


def test_polling_stops_when_tk_refuses_to_schedule(root, monkeypatch) -> None:
    executor = tk_executor(root, poll_ms=1)

    def refuse(*args: object) -> str:
        raise tkinter.TclError('can\'t invoke "after" command: application has been destroyed')

    monkeypatch.setattr(root, "after", refuse)  # the tick already scheduled still runs
    pump(root, lambda: executor.stopped)
    assert executor.root is None
