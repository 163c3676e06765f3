"""A callback executor that refuses an admitted push releases what the backlog counted for it
(:meth:`daemon_client.runtime.dispatch.Dispatcher._hand_over`), for any admitted push, not only
for a run of terminal output (that case: ``tests/subscriptions/test_terminal_flow.py``)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

from daemon_client.runtime.dispatch import Dispatcher, call_plain
from daemon_client.runtime.flow_limits import FlowControl


class RefuseFirst:
    """An executor that refuses its first ``count`` callables and runs the rest at once."""

    def __init__(self, count: int) -> None:
        self.refusals = count
        self.ran = 0

    def __call__(self, fn: Callable[[], None]) -> None:
        if self.refusals > 0:
            self.refusals -= 1
            raise RuntimeError("the event loop is closing")
        self.ran += 1
        fn()


def test_an_admitted_push_the_executor_refuses_is_no_longer_counted_in_the_backlog() -> None:
    errors: list[BaseException] = []
    executor = RefuseFirst(2)
    dispatcher = Dispatcher(executor=executor, on_error=errors.append, flow_control=FlowControl(4, None))
    delivered: list[int] = []
    try:
        assert dispatcher.post_if_admitted(call_plain, lambda: delivered.append(1), None, 100)
        assert dispatcher.post_if_admitted(call_plain, lambda: delivered.append(2), None, 200)
        assert dispatcher.flush()  # handed over after both refusals: proves they were handled
        stats = dispatcher.backlog.stats()
        assert (stats.queued_events, stats.queued_bytes) == (0, 0)
        assert delivered == []
        assert [str(e) for e in errors] == ["the event loop is closing"] * 2
        # The limit (4 events) is not eaten by refused pushes: four more are admitted and run.
        ran = threading.Event()
        for n in range(4):
            assert dispatcher.post_if_admitted(call_plain, functools.partial(delivered.append, n), None, 1)
        dispatcher.post_in_order(ran.set)
        assert ran.wait(5)
        assert delivered == [0, 1, 2, 3]
    finally:
        dispatcher.stop()
