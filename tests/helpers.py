"""Small helpers shared by the test modules (no fixtures: those live in the conftest files)."""

from __future__ import annotations

import threading
from typing import Any

from daemon_client import Client
from daemon_client.testing import FakeDaemon


def session_frames(fake: FakeDaemon, message_type: str) -> list[dict[str, Any]]:
    """The session messages of ``message_type`` the fake daemon received, in order."""
    return [f["message"] for f in fake.received if f.get("type") == "session" and f["message"]["type"] == message_type]


def supervisor_ended(client: Client, timeout: float = 5.0) -> bool:
    """Join the client's reader thread (its connection supervisor): True once none is alive.

    A supervisor that gave up has returned, so no further connection attempt can follow until
    an explicit ``connect()``: this proves "no retry" without watching the clock. A supervisor
    that keeps retrying stays alive, and this returns False after ``timeout``."""
    name = f"{client._name}-reader"
    for thread in threading.enumerate():
        if thread.name == name:
            thread.join(timeout)
    return not [t for t in threading.enumerate() if t.name == name and t.is_alive()]
