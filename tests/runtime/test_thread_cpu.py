"""``Client(thread_cpu=N)``: the client's own threads run on that CPU only, the ones started
after a reconnect too; anything else is refused before a thread starts."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon, RecordingHandler

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs os.sched_setaffinity and two CPUs to tell a pinned thread from the others",
)


def _client_threads() -> dict[str, set[int]]:
    """The CPUs each live client thread may run on, by the thread's role."""
    return {
        thread.name.rsplit("-", 1)[1]: os.sched_getaffinity(thread.native_id)
        for thread in threading.enumerate()
        if thread.name.startswith("daemon-client-") and thread.native_id is not None and thread.is_alive()
    }


def _exercise(client: dc.Client, agent_id: str, fake: FakeDaemon) -> None:
    """Start every thread: the reader (connect), the writer and the timer (a request with a
    timeout), the callback thread (a timeline update)."""
    seen = RecordingHandler[dc.TimelineUpdate]("seen")
    client.agents.ref(agent_id).timeline.subscribe(seen).ready.result(5)
    fake.timeline.append(agent_id, {"type": "assistant_message", "text": "hi"})
    client.ping()
    seen.wait_for(1)


@pytest.mark.parametrize("transport", ["memory", "loopback"])
def test_every_client_thread_runs_on_the_cpu_it_was_given(
    fakes: Callable[..., FakeDaemon], make_client: Callable[..., dc.Client], transport: str
) -> None:
    cpu = max(os.sched_getaffinity(0))
    fake = fakes("capable")
    agent_id = fake.agents.upsert(title="pinned")["id"]
    client = make_client(fake, transport, thread_cpu=cpu)
    client.connect()
    _exercise(client, agent_id, fake)
    threads = _client_threads()
    assert {"reader", "writer", "timer", "dispatch"} <= set(threads)
    assert all(cpus == {cpu} for cpus in threads.values()), threads

    fake.drop_connections()  # the next connection's threads too
    deadline = time.monotonic() + 10
    while fake.accepted_count < 2 or client.state is not dc.ConnectionState.CONNECTED:
        assert time.monotonic() < deadline, "no reconnect"
        time.sleep(0.01)
    client.ping()
    threads = _client_threads()
    assert "writer" in threads
    assert all(cpus == {cpu} for cpus in threads.values()), threads
    assert os.sched_getaffinity(0) != {cpu}  # the calling thread is left alone


def test_without_thread_cpu_the_threads_run_where_the_system_puts_them(
    fakes: Callable[..., FakeDaemon], make_client: Callable[..., dc.Client]
) -> None:
    fake = fakes("capable")
    agent_id = fake.agents.upsert(title="free")["id"]
    client = make_client(fake)
    client.connect()
    _exercise(client, agent_id, fake)
    allowed = os.sched_getaffinity(0)
    assert all(cpus == allowed for cpus in _client_threads().values())


@pytest.mark.parametrize("cpu", [-1, 10_000, True, "0", 1.0])
def test_a_cpu_the_process_may_not_use_is_refused_before_any_thread_starts(cpu: object) -> None:
    before = threading.active_count()
    with pytest.raises(ValueError, match="thread_cpu"):
        dc.Client("ws://127.0.0.1:9/ws", thread_cpu=cpu)  # type: ignore[arg-type]
    assert threading.active_count() == before
