"""Finding the daemon: address forms, the resolution order, and per-attempt lookups.

* :mod:`~daemon_client.discovery.hosts` parses the address forms Paseo's CLI accepts;
* :mod:`~daemon_client.discovery.offer` reads pairing offers into relay targets;
* :mod:`~daemon_client.discovery.resolve` picks the daemon the way Paseo's CLI does
  (``PASEO_HOST``, ``PASEO_LISTEN``, the pid file, the config, ``localhost:6767``);
* :mod:`~daemon_client.discovery.attempts` looks a discovered daemon up again before each
  reconnect;
* :mod:`~daemon_client.discovery.profiles` holds host profiles (a daemon and its connections);
* :mod:`~daemon_client.discovery.failover` chooses among a host's connections and fails over
  (both imported only by clients of a host).
"""

from __future__ import annotations

from daemon_client.discovery.attempts import Targets, TargetSource
from daemon_client.discovery.hosts import DaemonTarget, TargetKind, parse_target
from daemon_client.discovery.offer import RelayTarget, parse_offer
from daemon_client.discovery.resolve import DEFAULT_HOST, Resolution, Step, paseo_home, resolve

__all__ = [
    "DEFAULT_HOST",
    "DaemonTarget",
    "RelayTarget",
    "Resolution",
    "Step",
    "TargetKind",
    "TargetSource",
    "Targets",
    "parse_offer",
    "parse_target",
    "paseo_home",
    "resolve",
]
