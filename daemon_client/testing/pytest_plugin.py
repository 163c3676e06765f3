"""The fixtures of the daemon_client pytest plugin, for ``pytest_plugins = [...]`` users.

The plugin itself is the top-level module ``daemon_client_pytest`` (pytest loads it through
the ``daemon_client`` entry point); this module re-exports its fixtures. Runs on the test's
thread.
"""

from daemon_client_pytest import fake_client, fake_daemon, recorded_client

__all__ = ["fake_client", "fake_daemon", "recorded_client"]
