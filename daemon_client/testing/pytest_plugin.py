"""pytest plugin (entry point ``daemon_client``): fixtures for testing code that uses the client.

* ``fake_daemon``: an in-memory :class:`FakeDaemon`, capable host by default; parametrize
  it indirectly with a host kind (``"capable"``, ``"selective"``, ``"broadcast"``).
* ``fake_client``: a strict :class:`~daemon_client.Client` connected to ``fake_daemon``;
  closed after the test, which then fails if a callback raised or a thread outlived it.

Fixtures run on the test's thread.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from daemon_client.client import Client
from daemon_client.config import ReconnectPolicy
from daemon_client.protocol.hosts import HostKind
from daemon_client.testing.fake.daemon import FakeDaemon
from daemon_client.testing.threads import assert_no_new_threads, live_threads


@pytest.fixture
def fake_daemon(request: pytest.FixtureRequest) -> Iterator[FakeDaemon]:
    """An in-memory fake daemon (``request.param``: a host kind, default capable)."""
    kind = HostKind(getattr(request, "param", "capable"))
    before = live_threads()
    daemon = FakeDaemon(host_kind=kind)
    try:
        yield daemon
    finally:
        daemon.close()
    assert_no_new_threads(before)


@pytest.fixture
def fake_client(fake_daemon: FakeDaemon) -> Iterator[Client]:
    """A strict client connected to ``fake_daemon``; reconnects quickly for tests."""
    before = live_threads()
    client = Client(
        "ws://fake-daemon/ws",
        transport_factory=fake_daemon.transport_factory,
        strict=True,
        reconnect=ReconnectPolicy(base_delay=0.05, max_delay=0.5),
    )
    try:
        client.connect(timeout=10)
        yield client
    finally:
        client.close()
    assert_no_new_threads(before)
