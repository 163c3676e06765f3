"""The fake relay and the fake daemon's relay mode (protocol-relay.md).

* :mod:`~daemon_client.testing.fake.relay.server`: ``FakeRelay``, a relay on loopback;
* :mod:`~daemon_client.testing.fake.relay.links`: its forwarding and buffering rules;
* :mod:`~daemon_client.testing.fake.relay.daemon_side`: ``RelayAttachment``, a fake daemon's
  control and data sockets and its end of the end-to-end encryption.

Needs ``websockets`` (the ``test`` extra) and PyNaCl (the ``relay`` extra).
"""
