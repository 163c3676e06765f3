"""Pushes skipped while a resync holds an observation (:meth:`Lag.hold`) are counted once, in
the observation's total, and not again as a new lagging period: the resync already covers them."""

from __future__ import annotations

from daemon_client.subscriptions.flow import Lag, LagSummary


def test_updates_skipped_during_a_resync_hold_are_recorded_once() -> None:
    recoveries: list[LagSummary] = []

    def recover(summary: LagSummary) -> None:
        recoveries.append(summary)
        lag.hold()  # a directory observation re-reads its snapshot: skip until it is back

    lag = Lag(lambda: "<observation>", recover)
    with lag.lock:
        lag.record(kind="agent_update")  # the lagging period
        assert lag.recover_locked() is None  # ... ends: the resync starts and holds
    assert [s.dropped for s in recoveries] == [1]
    assert lag.lagging  # held

    with lag.lock:
        for _ in range(3):
            lag.record(kind="agent_update")  # skipped while the resync is in flight
    assert lag.total == 4  # each skipped push counted once
    assert (lag.pending, lag.dropped, lag.skipped_types) == (False, 0, [])  # nothing more to announce

    with lag.lock:
        lag.release_hold()  # the resync completed
    assert not lag.lagging
    assert len(recoveries) == 1  # no second recovery for what the resync covered
