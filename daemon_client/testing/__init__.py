"""Test helpers shipped to users: a fake daemon, a replayed daemon, recording handlers,
thread-leak checks.

``FakeDaemon`` serves the daemon side of the protocol in memory (pass
``transport_factory=fake.transport_factory`` to :class:`~daemon_client.Client`), on a
loopback port (``fake.serve()``, needs the ``test`` extra for ``websockets``) or through a
``FakeRelay``, end-to-end encrypted (``fake.serve_relay()`` returns a pairing-offer link; also
needs the ``relay`` extra). ``ReplayDaemon`` serves a recorded session (``Client(trace=...)``)
in memory or on a loopback port. The pytest plugin of this package adds the ``fake_daemon``, ``fake_client`` and
``recorded_client`` fixtures and the ``daemon_recording`` marker.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from daemon_client.testing.fake.daemon import FakeDaemon as FakeDaemon
    from daemon_client.testing.fake.daemon import RequestContext as RequestContext
    from daemon_client.testing.fake.relay.server import FakeRelay as FakeRelay
    from daemon_client.testing.recording import RecordingHandler as RecordingHandler
    from daemon_client.testing.replay.daemon import ReplayDaemon as ReplayDaemon
    from daemon_client.testing.replay.daemon import ReplayMismatch as ReplayMismatch
    from daemon_client.testing.threads import assert_no_new_threads as assert_no_new_threads
    from daemon_client.testing.threads import live_threads as live_threads
    from daemon_client.testing.threads import no_leaked_threads as no_leaked_threads

_LAZY: dict[str, str] = {
    "FakeDaemon": "daemon_client.testing.fake.daemon",
    "FakeRelay": "daemon_client.testing.fake.relay.server",
    "RecordingHandler": "daemon_client.testing.recording",
    "ReplayDaemon": "daemon_client.testing.replay.daemon",
    "ReplayMismatch": "daemon_client.testing.replay.daemon",
    "RequestContext": "daemon_client.testing.fake.daemon",
    "assert_no_new_threads": "daemon_client.testing.threads",
    "live_threads": "daemon_client.testing.threads",
    "no_leaked_threads": "daemon_client.testing.threads",
}


def __getattr__(name: str) -> Any:
    """Import public names on first use: loading the pytest plugin (which lives in this
    package) imports nothing of the client until a fixture runs."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'daemon_client.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = sorted(_LAZY)  # noqa: PLE0605 - one source: the lazy table
