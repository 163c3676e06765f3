"""What a client builds on first use is built once, whichever threads ask first.

Sixteen threads touch a lazily built namespace, a handle (whose first use builds the timeline
manager) and a name of the package's lazy table at the same moment, switching threads as often
as the interpreter allows; they all get the same object.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

import daemon_client as dc
from daemon_client import Client

THREADS = 16


def _at_once(touch: Callable[[], Any]) -> list[Any]:
    """``touch()`` on ``THREADS`` threads released together; what each got."""
    barrier = threading.Barrier(THREADS)
    got: list[Any] = []
    lock = threading.Lock()

    def run() -> None:
        barrier.wait(5)
        value = touch()
        with lock:
            got.append(value)

    threads = [threading.Thread(target=run, name=f"lazy-touch-{i}") for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(got) == THREADS, "a thread did not finish"
    return got


@pytest.mark.usefixtures("fast_switching")
def test_sixteen_threads_get_one_namespace_one_handle_and_one_timeline_manager() -> None:
    for _ in range(5):
        client = Client("ws://127.0.0.1:9/ws", connect_timeout=1.0)
        try:
            namespaces = _at_once(lambda client=client: client.agents)
            assert all(namespace is namespaces[0] for namespace in namespaces)
            handles = _at_once(lambda client=client: client.agents.ref("agent-1"))
            assert all(handle is handles[0] for handle in handles)
            managers = _at_once(client._namespaces.timelines)
            assert all(manager is managers[0] for manager in managers)
            assert handles[0].timeline._manager is managers[0]
        finally:
            client.close()


@pytest.mark.usefixtures("fast_switching")
def test_sixteen_threads_get_one_value_of_a_lazy_package_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from daemon_client.api.agents.handle import AgentHandle

    for _ in range(5):
        monkeypatch.delitem(vars(dc), "AgentHandle", raising=False)
        got = _at_once(lambda: dc.AgentHandle)
        assert all(value is AgentHandle for value in got)
