"""The fleet's callback thread: order, errors, stop, batches handed over whole, deadlock
detection, flow control through it."""

from __future__ import annotations

import threading

import pytest

import daemon_client as dc
from daemon_client.fleet import SerialExecutor
from daemon_client.testing import FakeDaemon


def test_callables_run_in_order_on_one_thread_and_errors_do_not_stop_it(caplog) -> None:
    executor = SerialExecutor("t")
    ran: list[tuple[int, str]] = []

    def boom() -> None:
        raise RuntimeError("boom")

    for n in range(200):
        executor(lambda n=n: ran.append((n, threading.current_thread().name)))
        if n == 100:
            executor(boom)
    assert executor.stop(5)
    assert [n for n, _ in ran] == list(range(200))
    assert {name for _, name in ran} == {"t-callbacks"}
    assert "boom" in caplog.text
    executor(lambda: ran.append((-1, "late")))  # dropped after stop
    assert ran[-1][0] == 199
    assert executor.stopped


def test_stop_from_a_callable_does_not_join_itself() -> None:
    executor = SerialExecutor("self")
    stopped = threading.Event()
    executor(lambda: (executor.stop(1), stopped.set()))
    assert stopped.wait(5)
    executor.callback_thread.join(5)
    assert not executor.callback_thread.is_alive()


def test_many_threads_posting_lose_nothing(fast_switching) -> None:
    executor = SerialExecutor("many")
    counts = [0] * 16

    def post(index: int) -> None:
        for _ in range(500):
            executor(lambda index=index: counts.__setitem__(index, counts[index] + 1))

    threads = [threading.Thread(target=post, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert executor.stop(10)
    assert counts == [500] * 16


@pytest.fixture
def fake() -> FakeDaemon:
    daemon = FakeDaemon(server_id="srv-x")
    yield daemon
    daemon.close()


def test_a_fleet_client_in_a_callback_cannot_wait_for_callbacks(fake) -> None:
    with dc.Fleet([dc.Host("x", [fake.serve()])], connect_timeout=5.0) as fleet:
        assert isinstance(fleet.connect(10)["x"], dc.ServerInfo)
        outcome: list[BaseException | bool] = []
        done = threading.Event()

        def callback() -> None:
            try:
                outcome.append(fleet["x"].flush_callbacks(1.0))
            except BaseException as exc:
                outcome.append(exc)
            done.set()

        fleet.post(callback)
        assert done.wait(5)
        assert isinstance(outcome[0], dc.WouldDeadlock)
        assert fleet["x"].flush_callbacks(5.0)  # from another thread it waits and succeeds


def test_flow_control_counts_what_the_fleet_thread_has_not_run(fake) -> None:
    """Pushes handed over in batches are still counted until they ran: a blocked fleet thread
    makes the observation lag and skip, and it recovers once the thread runs again."""
    fake.agents.upsert(title="seed")
    with dc.Fleet(
        [dc.Host("x", [fake.serve()])], connect_timeout=5.0, flow_control=dc.FlowControl(max_events=50)
    ) as fleet:
        fleet.connect(10)
        client = fleet["x"]
        directory = client.agents.list(subscribe=True)
        release = threading.Event()
        blocked = threading.Event()
        fleet.post(lambda: (blocked.set(), release.wait(10)))
        assert blocked.wait(5)
        for n in range(400):
            fake.agents.upsert(title=f"a{n}")
        deadline_ok = threading.Event()

        def lagging() -> bool:
            return client.stats().dropped > 0

        for _ in range(100):
            if lagging():
                deadline_ok.set()
                break
            threading.Event().wait(0.05)
        release.set()
        assert deadline_ok.is_set(), client.stats()
        assert client.flush_callbacks(10)
        titles = {e.agent.title for e in directory.subscription.current().entries}
        for _ in range(100):
            if "a399" in titles:
                break
            threading.Event().wait(0.05)
            client.flush_callbacks(5)
            titles = {e.agent.title for e in directory.subscription.current().entries}
        assert "a399" in titles
        directory.subscription.release()
