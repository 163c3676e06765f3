"""WouldDeadlock on the thread that runs callbacks in executor and manual modes, outside callbacks too.

A toolkit-free "GUI thread" (a loop draining a queue) stands in for Tk and Qt here; the
toolkits' own executors are tested in test_gui_tk.py and test_gui_qt.py.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import RecordingHandler


class LoopThread:
    """A thread running posted jobs in order, like a GUI event loop."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], object] | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._loop, name="fake-gui")
        self.thread.start()

    def _loop(self) -> None:
        while (job := self._jobs.get()) is not None:
            job()

    def post(self, job: Callable[[], object]) -> None:
        self._jobs.put(job)

    def call(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` on the loop thread outside any callback; its result or the exception it raised."""
        box: queue.SimpleQueue[Any] = queue.SimpleQueue()

        def job() -> None:
            try:
                box.put(fn())
            except BaseException as exc:  # handed back to the test
                box.put(exc)

        self.post(job)
        return box.get(timeout=10)

    def stop(self) -> None:
        self._jobs.put(None)
        self.thread.join(10)


class NamedExecutor:
    """An executor that names its thread, as daemon_client.gui's executors do."""

    def __init__(self, loop: LoopThread) -> None:
        self.loop = loop
        self.callback_thread = loop.thread

    def __call__(self, fn: Callable[[], object]) -> None:
        self.loop.post(fn)


@pytest.fixture
def loop() -> Iterator[LoopThread]:
    made = LoopThread()
    yield made
    made.stop()


def _client(fakes, make_client, **options: Any) -> tuple[Any, dc.Client, str]:
    fake = fakes("selective")
    client = make_client(fake, **options)
    client.connect()
    agent_id = fake.agents.upsert(title="gui")["id"]
    return fake, client, agent_id


def _waits(client: dc.Client, agent_id: str) -> dict[str, Callable[[], object]]:
    def stream() -> object:
        with client.agents.ref(agent_id).timeline.stream(timeout=5) as updates:
            return next(iter(updates), None)

    return {
        "providers.wait_for_ready()": lambda: client.providers.wait_for_ready(timeout=5),
        "timeline.stream()": stream,
        "flush_callbacks()": lambda: client.flush_callbacks(5),
    }


def _push_callback(fake: Any, client: dc.Client, seen: Callable[[Any], object]) -> None:
    """Queue one callback: a push the client hands to a listener calling ``seen``."""
    client.add_push_listener(lambda message: seen(message.payload["n"]), ["numbered"])
    fake.push("numbered", {"n": 1})


CASES = ["providers.wait_for_ready()", "timeline.stream()", "flush_callbacks()"]


@pytest.mark.parametrize("case", CASES)
def test_a_named_executor_thread_cannot_wait_for_callbacks(fakes, make_client, loop: LoopThread, case: str) -> None:
    _fake, client, agent_id = _client(fakes, make_client, callback_executor=NamedExecutor(loop))
    outcome = loop.call(_waits(client, agent_id)[case])  # no callback has run yet: the executor named it
    assert isinstance(outcome, dc.WouldDeadlock), outcome
    assert "worker thread" in str(outcome)
    assert "callback form" in str(outcome)
    assert client.flush_callbacks(5)  # any other thread waits as before
    assert _waits(client, agent_id)["providers.wait_for_ready()"]() is not None


@pytest.mark.parametrize("case", CASES)
def test_the_thread_that_ran_the_first_callback_cannot_wait_for_callbacks(
    fakes, make_client, loop: LoopThread, case: str
) -> None:
    fake, client, agent_id = _client(fakes, make_client, callback_executor=loop.post)
    ran = RecordingHandler[str]("ran")
    _push_callback(fake, client, lambda _n: ran(threading.current_thread().name))
    assert ran.wait_for(1) == ["fake-gui"]
    outcome = loop.call(_waits(client, agent_id)[case])
    assert isinstance(outcome, dc.WouldDeadlock), outcome


@pytest.mark.parametrize("case", ["providers.wait_for_ready()", "timeline.stream()"])
def test_the_manual_loop_thread_cannot_wait_for_callbacks(fakes, make_client, case: str) -> None:
    fake, client, agent_id = _client(fakes, make_client, callback_executor="manual")
    _push_callback(fake, client, lambda _n: None)
    assert client.process_events(timeout=5) >= 1  # this thread now runs the callbacks
    with pytest.raises(dc.WouldDeadlock, match="process_events"):
        _waits(client, agent_id)[case]()


def test_the_manual_loop_thread_still_drains_in_flush_callbacks(fakes, make_client) -> None:
    fake, client, _agent_id = _client(fakes, make_client, callback_executor="manual")
    seen: list[int] = []
    _push_callback(fake, client, seen.append)
    assert client.process_events(timeout=5) >= 1
    fake.push("numbered", {"n": 2})
    client.ping()  # the push was read before the ping's reply
    assert client.flush_callbacks(5)  # drained here, on the loop's own thread
    assert seen == [1, 2]


def test_callbacks_run_on_two_threads_name_no_callback_thread(fakes, make_client) -> None:
    """A pool of threads runs callbacks: no single thread is blocked by waiting, so none raises."""
    fake, client, agent_id = _client(fakes, make_client, callback_executor="manual")
    _push_callback(fake, client, lambda _n: None)
    assert client.process_events(timeout=5) >= 1
    fake.push("numbered", {"n": 2})
    ran_elsewhere: list[int] = []
    other = threading.Thread(target=lambda: ran_elsewhere.append(client.process_events(timeout=5)))
    other.start()
    other.join(10)
    assert ran_elsewhere == [1]
    with client.agents.ref(agent_id).timeline.stream(timeout=0.01) as updates:
        assert updates.next(timeout=0.01) is None  # waited (and timed out) instead of raising
