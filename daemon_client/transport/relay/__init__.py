"""Reaching a daemon through a Paseo relay, end-to-end encrypted (protocol-relay.md).

* :mod:`~daemon_client.transport.relay.crypto`: NaCl ``crypto_box`` through PyNaCl (the
  optional ``relay`` extra): keys, shared key, sealing and opening frames;
* :mod:`~daemon_client.transport.relay.channel`: ``RelayTransport``, the E2EE handshake and
  the per-frame encryption under the ``Transport`` protocol;
* :mod:`~daemon_client.transport.relay.factory`: ``RelayTransportFactory`` and ``RelayStats``.

Importing this package does not import PyNaCl; building a factory does.
"""

from __future__ import annotations

from daemon_client.transport.relay.channel import RelayTransport
from daemon_client.transport.relay.factory import RelayStats, RelayTransportFactory

__all__ = ["RelayStats", "RelayTransport", "RelayTransportFactory"]
