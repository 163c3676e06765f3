"""The request table, reply futures and the timer thread, used directly: settling rules,
duplicate ids, expiry, and callbacks once the client's callback thread is gone."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.protocol.replies import reply_for
from daemon_client.runtime.requests import CallbackFuture, RequestTable, settle
from daemon_client.runtime.timers import TimerThread

Job = Callable[[], None]


class Posted:
    """A stand-in for the callback thread: jobs are kept until run; ``open=False`` refuses them."""

    def __init__(self) -> None:
        self.jobs: list[Job] = []
        self.open = True

    def __call__(self, job: Job) -> bool:
        if not self.open:
            return False
        self.jobs.append(job)
        return True

    def run(self) -> None:
        jobs, self.jobs = self.jobs, []
        for job in jobs:
            job()


@pytest.fixture
def timers() -> Iterator[TimerThread]:
    thread = TimerThread("test-timers")
    yield thread
    thread.stop()


@pytest.fixture
def table(timers: TimerThread) -> tuple[RequestTable, Posted]:
    posted = Posted()
    return RequestTable(timers, posted, id_prefix="t"), posted


def _add(table: RequestTable, request_id: str, *, queued: bool = False, timeout: float = 60.0, **options: Any):  # type: ignore[no-untyped-def]
    return table.add(request_id, "ping", reply_for("ping"), "{}", timeout, queued=queued, **options)


def test_done_callbacks_run_on_the_callback_thread_or_at_once_when_it_is_gone() -> None:
    """Before close: on the callback thread. After: at once on the adding thread, and what a
    done-callback raises still reaches ``on_callback_error`` (it was only logged)."""
    from daemon_client.runtime.dispatch import Dispatcher

    errors: list[BaseException] = []
    dispatcher = Dispatcher(on_error=errors.append)
    future: CallbackFuture[int] = CallbackFuture(dispatcher.post_or_run_now)
    seen: list[tuple[str, bool]] = []
    main = threading.current_thread()
    try:
        future.add_done_callback(lambda fut: seen.append((f"got {fut.result()}", threading.current_thread() is main)))
        future.set_result(7)
        assert dispatcher.flush()
        assert seen == [("got 7", False)]
    finally:
        dispatcher.stop()

    def broken(fut: Future[int]) -> None:
        raise RuntimeError("callback bug")

    future.add_done_callback(broken)
    future.add_done_callback(lambda fut: seen.append(("at once", threading.current_thread() is main)))
    assert seen == [("got 7", False), ("at once", True)]
    assert [str(e) for e in errors] == ["callback bug"]


def test_a_failing_settle_hook_is_logged_and_the_future_still_settles(table, caplog) -> None:
    requests, _ = table

    def hook(result: Any, error: BaseException | None) -> None:
        raise RuntimeError("hook bug")

    entry = _add(requests, "t-1", on_settle=hook)
    assert requests.resolve("t-1", "pong", {"requestId": "t-1"})
    assert entry.future.result(0) == {"requestId": "t-1"}
    assert any(r.getMessage() == "settle hook of ping failed" for r in caplog.records if r.levelno == logging.ERROR)


def test_a_request_id_cannot_be_pending_twice(table) -> None:
    requests, _ = table
    _add(requests, "t-1")
    with pytest.raises(ValueError, match="requestId 't-1' is already pending"):
        _add(requests, "t-1")
    assert len(requests) == 1


def test_only_string_ids_of_pending_requests_resolve(table) -> None:
    requests, _ = table
    entry = _add(requests, "t-1")
    assert not requests.resolve(1, "pong", {})
    assert not requests.resolve("t-2", "pong", {})
    assert not entry.future.done()


def test_a_queued_request_that_expires_says_it_waited_for_the_connection(table) -> None:
    requests, _ = table
    queued = _add(requests, "t-1", queued=True, timeout=30)
    sent = _add(requests, "t-2", timeout=30)
    requests.expire("t-1")
    requests.expire("t-2")
    requests.expire("t-1")  # already settled: nothing happens
    with pytest.raises(
        dc.RequestTimeout, match=r"ping \(t-1\) got no reply within 30 s \(waiting for the connection\)"
    ):
        queued.future.result(0)
    with pytest.raises(dc.RequestTimeout, match=r"\(waiting for the reply\)"):
        sent.future.result(0)
    assert requests.take_queued() == []
    assert len(requests) == 0


def test_a_forgotten_request_is_neither_settled_nor_written(table) -> None:
    requests, _ = table
    entry = _add(requests, "t-1", queued=True)
    requests.forget("t-1")
    assert requests.take_queued() == []
    assert not requests.resolve("t-1", "pong", {})
    assert not entry.future.done()


def test_fail_all_counts_only_the_requests_it_settled(table) -> None:
    requests, _ = table
    cancelled = _add(requests, "t-1")
    failed = _add(requests, "t-2")
    assert cancelled.future.cancel()
    assert requests.fail_all(lambda entry: dc.ConnectionLost(f"lost {entry.request_id}")) == 1
    with pytest.raises(dc.ConnectionLost, match="lost t-2"):
        failed.future.result(0)
    assert not settle(cancelled.future, result={})


def test_timers_count_pending_entries_and_stop_dropping_later_ones(caplog) -> None:
    timers = TimerThread("test-timers")
    ran = threading.Event()

    def broken() -> None:
        raise RuntimeError("timer bug")

    try:
        kept = timers.schedule(60, lambda: None)
        dropped = timers.schedule(60, lambda: None)
        dropped.cancel()
        assert (len(timers), timers.pending) == (2, 1)
        timers.schedule(0, broken)
        timers.schedule(0, ran.set)  # runs after the failing callback: the thread survived it
        assert ran.wait(5)
        assert any(r.getMessage() == "timer callback failed" for r in caplog.records if r.levelno == logging.ERROR)
    finally:
        timers.stop()
    late = timers.schedule(0, lambda: None)
    assert late.cancelled
    assert timers.pending == 0
    kept.cancel()
    assert kept.cancelled
