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
* ``recorded_client``: a strict client connected to a recorded daemon session, named by
  ``@pytest.mark.daemon_recording("name", volatile=..., pace=..., on_unmatched=...,
  connections=..., allow_unplayed=False)`` (default: the test's name) and kept in
  ``recordings/<test module>/<name>.jsonl`` beside the test. ``--daemon-record-mode``:
  ``none`` (replay only, the default), ``once`` (record against ``--daemon-url`` when the
  file is missing), ``rewrite`` (record again). After the test, replaying fails it on a
  request the recording does not have and on recorded frames left unplayed.

Fixtures run on the test's thread.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
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


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("daemon_client", "daemon_client record and replay")
    group.addoption(
        "--daemon-record-mode",
        choices=["none", "once", "rewrite"],
        default="none",
        help="recorded daemon sessions (recorded_client): none = replay only (default), "
        "once = record the missing ones against --daemon-url, rewrite = record them all again",
    )
    group.addoption("--daemon-url", default=None, help="the daemon to record against, e.g. ws://127.0.0.1:6767/ws")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "daemon_recording(name=None, *, volatile=(), pace=None, on_unmatched='fail', connections=None, "
        "allow_unplayed=False): the recorded daemon session the recorded_client fixture replays",
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Remember whether the test itself failed: a failed test leaves frames unplayed."""
    report = yield
    if report.when == "call" and report.failed:
        item.stash[_TEST_FAILED] = True
    return report


_TEST_FAILED = pytest.StashKey[bool]()


@pytest.fixture
def recorded_client(request: pytest.FixtureRequest) -> Iterator[Client]:
    """A strict client connected to the recorded session of ``@pytest.mark.daemon_recording``."""
    from daemon_client.testing.replay.cassettes import (
        RecordedSession,
        RecordingSettings,
        RecordingUnavailable,
        recording_path,
    )
    from daemon_client.testing.threads import assert_no_new_threads, live_threads

    marker = request.node.get_closest_marker("daemon_recording")
    settings = RecordingSettings.from_marker(
        marker.args if marker else (), marker.kwargs if marker else {}, request.node.name
    )
    session = RecordedSession(
        recording_path(Path(request.node.path), settings.name),
        settings,
        mode=request.config.getoption("daemon_record_mode", default="none"),
        daemon_url=request.config.getoption("daemon_url", default=None),
    )
    before = live_threads()
    try:
        client = session.open()
    except RecordingUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield client
    finally:
        session.finish(check=not request.node.stash.get(_TEST_FAILED, False))
    assert_no_new_threads(before)
