"""A pong clears the heartbeat's run of misses: miss, answer, miss is one miss in a row, not two
(:class:`daemon_client.runtime.heartbeat.HeartbeatMonitor`, driven here by hand, no clock)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from daemon_client.config import Heartbeat
from daemon_client.runtime.heartbeat import HeartbeatMonitor
from daemon_client.runtime.timers import TimerThread


class ManualTimers:
    """Records what is scheduled; the test runs it in the order it chooses."""

    def __init__(self) -> None:
        self.due: list[tuple[float, Callable[[], None]]] = []

    def schedule(self, delay: float, fn: Callable[[], None]) -> None:
        self.due.append((delay, fn))

    def run(self, delay: float) -> None:
        """Run (and forget) the first scheduled callable of that delay."""
        index = next(i for i, (d, _fn) in enumerate(self.due) if d == delay)
        _delay, fn = self.due.pop(index)
        fn()


INTERVAL, TIMEOUT = 1.0, 2.0


def _monitor() -> tuple[HeartbeatMonitor, ManualTimers, list[str], list[str]]:
    timers = ManualTimers()
    pings: list[str] = []
    dead: list[str] = []
    monitor = HeartbeatMonitor(
        Heartbeat(interval=INTERVAL, timeout=TIMEOUT, max_misses=2),
        cast(TimerThread, cast(Any, timers)),
        lambda: pings.append("ping"),
        dead.append,
    )
    monitor.start()
    return monitor, timers, pings, dead


def test_a_miss_then_a_pong_then_a_miss_does_not_close_the_socket() -> None:
    monitor, timers, pings, dead = _monitor()
    timers.run(INTERVAL)  # probe 1
    timers.run(TIMEOUT)  # no pong: miss 1
    assert (len(pings), monitor.misses, dead) == (1, 1, [])
    timers.run(INTERVAL)  # probe 2
    monitor.on_pong()  # answered
    timers.run(TIMEOUT)  # its deadline finds it answered
    assert (len(pings), monitor.misses, dead) == (2, 0, [])
    timers.run(INTERVAL)  # probe 3
    timers.run(TIMEOUT)  # no pong: one miss in a row again
    assert (len(pings), monitor.misses, dead) == (3, 1, [])
    timers.run(INTERVAL)  # probe 4
    timers.run(TIMEOUT)  # a second miss in a row: now dead
    assert monitor.misses == 2
    assert dead == [f"Heartbeat timeout: 2 pings without a pong within {TIMEOUT:g} s"]
    monitor.stop()


def test_a_new_connection_starts_with_no_misses() -> None:
    """A miss on the connection before does not count against the next one."""
    monitor, timers, pings, dead = _monitor()
    timers.run(INTERVAL)  # probe 1
    timers.run(TIMEOUT)  # no pong: miss 1
    assert monitor.misses == 1
    monitor.stop()  # the connection is lost
    timers.due.clear()  # the old generation's timers would do nothing anyway
    monitor.start()  # a fresh connection
    assert monitor.misses == 0
    timers.run(INTERVAL)  # its probe 1
    timers.run(TIMEOUT)  # no pong: one miss on this connection, not a second in a row
    assert (len(pings), monitor.misses, dead) == (2, 1, [])
    monitor.stop()
