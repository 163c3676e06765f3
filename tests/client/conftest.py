"""Fixtures of the client tests."""

from __future__ import annotations

from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon


@pytest.fixture
def connected(fakes, make_client):
    """``connected(kind="capable", **fake_options)``: a fake daemon and a client connected to it."""

    def make(kind: str = "capable", **options: Any) -> tuple[FakeDaemon, dc.Client]:
        fake = fakes(kind, **options)
        client = make_client(fake)
        client.connect()
        return fake, client

    return make
