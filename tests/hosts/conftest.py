"""Fixtures of the host tests: clients of a host, closed and checked for leftover threads."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

import daemon_client as dc

HostClientFactory = Callable[..., dc.Client]
FAST = dc.ReconnectPolicy(base_delay=0.05, max_delay=0.2, stable_after=0.5)


def host_threads(client: dc.Client) -> list[str]:
    """Threads a host's client may start: its own, its probes' and the probing clients'."""
    return sorted(
        t.name
        for t in threading.enumerate()
        if t.is_alive() and (t.name.startswith((client._name, "probe-")) or t.name.startswith("daemon-client-"))
    )


def close_and_check(client: dc.Client, timeout: float = 5.0) -> None:
    """``client.close(timeout)``: it returns within ``timeout`` (a liveness bound) and no
    client or probe thread is alive once it has."""
    done = threading.Event()
    closer = threading.Thread(target=lambda: (client.close(timeout), done.set()), name="test-closer")
    closer.start()
    assert done.wait(timeout + 5.0), "close() did not return"
    closer.join(5.0)
    assert host_threads(client) == []


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} (after {timeout:g} s)")
        time.sleep(0.01)


@pytest.fixture
def host_client() -> Iterator[HostClientFactory]:
    """``host_client(host, **options)``: a strict client of ``host`` with fast reconnects,
    closed (and checked) after the test unless the test closed it."""
    made: list[dc.Client] = []

    def make(host: dc.Host, **options: object) -> dc.Client:
        options.setdefault("strict", True)
        options.setdefault("reconnect", FAST)
        options.setdefault("connect_timeout", 5.0)
        client = dc.Client(host, **options)  # type: ignore[arg-type]
        made.append(client)
        return client

    yield make
    for client in made:
        close_and_check(client)
