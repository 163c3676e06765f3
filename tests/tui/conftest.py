"""Fixtures of the dashboard's tests: a fake daemon served on loopback, closed after the test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("textual")

from daemon_client.testing import FakeDaemon


@pytest.fixture
def fake() -> Iterator[FakeDaemon]:
    daemon = FakeDaemon()
    daemon.serve()
    yield daemon
    daemon.close()
