"""Test helpers shipped to users: a fake daemon, recording handlers, thread-leak checks.

``FakeDaemon`` serves the daemon side of the protocol in memory (pass
``transport_factory=fake.transport_factory`` to :class:`~daemon_client.Client`) or on a
loopback port (``fake.serve()``, needs the ``test`` extra for ``websockets``). The pytest
plugin of this package adds the ``fake_daemon`` and ``fake_client`` fixtures.
"""

from daemon_client.testing.fake.daemon import FakeDaemon, RequestContext
from daemon_client.testing.recording import RecordingHandler
from daemon_client.testing.threads import assert_no_new_threads, live_threads, no_leaked_threads

__all__ = [
    "FakeDaemon",
    "RecordingHandler",
    "RequestContext",
    "assert_no_new_threads",
    "live_threads",
    "no_leaked_threads",
]
