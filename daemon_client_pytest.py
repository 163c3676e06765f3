"""pytest plugin of daemon_client (entry point ``daemon_client``): fixtures for testing code
that uses the client.

It lives outside the ``daemon_client`` package and imports the client only inside its
fixtures, so that loading the plugin (which pytest does before ``pytest-cov`` starts
measuring) imports nothing of the package: ``pytest --cov=daemon_client`` then measures the
same lines as ``coverage run -m pytest``.

* ``fake_daemon``: an in-memory :class:`FakeDaemon`, capable host by default; parametrize
  it indirectly with a host kind (``"capable"``, ``"selective"``, ``"broadcast"``).
* ``fake_client``: a strict :class:`~daemon_client.Client` connected to ``fake_daemon``;
  closed after the test, which then fails if a callback raised or a thread outlived it.

Fixtures run on the test's thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported inside the fixtures: loading the plugin imports nothing of the client
    from daemon_client.client import Client
    from daemon_client.testing.fake.daemon import FakeDaemon


@pytest.fixture
def fake_daemon(request: pytest.FixtureRequest) -> Iterator[FakeDaemon]:
    """An in-memory fake daemon (``request.param``: a host kind, default capable)."""
    from daemon_client.protocol.hosts import HostKind
    from daemon_client.testing.fake.daemon import FakeDaemon
    from daemon_client.testing.threads import assert_no_new_threads, live_threads

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
    from daemon_client.client import Client
    from daemon_client.config import ReconnectPolicy
    from daemon_client.testing.threads import assert_no_new_threads, live_threads

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
