"""The asyncio executor: callbacks on the loop's thread in order, errors isolated, a closed loop
drops callbacks, blocking waits on the loop's thread raise WouldDeadlock, and client futures are
awaited with ``wrap``. Each test runs its own loop on a thread of its own."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.gui import AsyncioExecutor, asyncio_executor, wrap
from daemon_client.testing import FakeDaemon

BOUND = 10.0


class LoopThread:
    """An asyncio loop run by a thread of its own, as a Textual app or a server runs one."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="asyncio-loop")
        self.thread.start()

    def run(self, coroutine: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
        """Run ``coroutine()`` on the loop and return its result (or raise what it raised)."""
        return asyncio.run_coroutine_threadsafe(coroutine(), self.loop).result(BOUND)

    def close(self) -> None:
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(BOUND)
            self.loop.close()


@pytest.fixture
def loop() -> Iterator[LoopThread]:
    thread = LoopThread()
    yield thread
    thread.close()


def _executor(loop: LoopThread) -> AsyncioExecutor:
    async def make() -> AsyncioExecutor:
        return asyncio_executor()

    executor: AsyncioExecutor = loop.run(make)
    assert executor.callback_thread is loop.thread
    return executor


def test_callbacks_run_on_the_loop_thread_in_order(fakes, make_client, loop: LoopThread) -> None:
    fake: FakeDaemon = fakes("capable")
    client = make_client(fake, callback_executor=_executor(loop))
    client.connect()
    seen: list[tuple[int, bool]] = []
    done = threading.Event()

    def heard(message: dc.SessionMessage) -> None:
        seen.append((message.payload["n"], threading.current_thread() is loop.thread))
        if len(seen) == 50:
            done.set()

    client.add_push_listener(heard, ["numbered"])
    for n in range(50):
        fake.push("numbered", {"n": n})
    assert done.wait(BOUND)
    assert seen == [(n, True) for n in range(50)]


def test_a_raising_callback_is_reported_and_the_next_still_runs(fakes, make_client, loop: LoopThread) -> None:
    fake: FakeDaemon = fakes("capable")
    errors: list[BaseException] = []
    client = make_client(fake, callback_executor=_executor(loop), on_callback_error=errors.append, strict=False)
    client.connect()
    heard = threading.Event()

    def first(_message: dc.SessionMessage) -> None:
        raise ValueError("boom")

    client.add_push_listener(first, ["one"])
    client.add_push_listener(lambda _message: heard.set(), ["two"])
    fake.push("one", {})
    fake.push("two", {})
    assert heard.wait(BOUND)
    assert [type(error) for error in errors] == [ValueError]


def test_a_closed_loop_drops_callbacks_with_one_log_line(loop: LoopThread, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="daemon_client.gui")
    executor = _executor(loop)
    loop.close()
    assert executor.stopped
    ran: list[int] = []
    for n in range(3):
        executor(lambda n=n: ran.append(n))  # type: ignore[misc]
    assert ran == []
    assert [r.getMessage() for r in caplog.records] == ["the asyncio loop is closed: dropping callbacks"]


def test_a_callable_that_raises_is_logged_on_the_loop(loop: LoopThread, caplog: pytest.LogCaptureFixture) -> None:
    executor = _executor(loop)
    done = threading.Event()

    def boom() -> None:
        raise RuntimeError("inside the loop")

    executor(boom)
    executor(done.set)
    assert done.wait(BOUND)
    assert any("asyncio_executor raised" in r.getMessage() for r in caplog.records)


def test_waiting_on_the_loop_thread_for_callbacks_raises_would_deadlock(fakes, make_client, loop: LoopThread) -> None:
    fake: FakeDaemon = fakes("capable")
    client = make_client(fake, callback_executor=_executor(loop))
    client.connect()

    async def wait_there() -> BaseException | None:
        try:
            client.flush_callbacks(3600)  # an hour: a wait that started would outlast the bound
        except dc.WouldDeadlock as exc:
            return exc
        return None

    outcome = loop.run(wait_there)
    assert isinstance(outcome, dc.WouldDeadlock), outcome
    assert client.flush_callbacks(BOUND)  # any other thread waits as before


def test_client_futures_are_awaited_on_the_loop(fakes, make_client, loop: LoopThread) -> None:
    fake: FakeDaemon = fakes("capable")
    fake.on_request("echo_request", lambda ctx: ctx.reply({"echo": ctx.message["value"]}))
    client = make_client(fake, callback_executor=_executor(loop))
    client.connect()

    async def ask() -> list[Any]:
        replies = await asyncio.gather(
            *(wrap(client.request_async({"type": "echo_request", "value": n})) for n in range(5))
        )
        return [reply["echo"] for reply in replies]

    assert loop.run(ask) == [0, 1, 2, 3, 4]


def test_the_executor_needs_a_loop(loop: LoopThread) -> None:
    with pytest.raises(RuntimeError):
        asyncio_executor()  # no running loop on this thread
    executor = asyncio_executor(loop.loop)  # given explicitly: names the calling thread
    assert executor.loop is loop.loop
