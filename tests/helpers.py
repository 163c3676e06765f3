"""Small helpers shared by the test modules (no fixtures: those live in the conftest files)."""

from __future__ import annotations

from typing import Any

from daemon_client.testing import FakeDaemon


def session_frames(fake: FakeDaemon, message_type: str) -> list[dict[str, Any]]:
    """The session messages of ``message_type`` the fake daemon received, in order."""
    return [f["message"] for f in fake.received if f.get("type") == "session" and f["message"]["type"] == message_type]
