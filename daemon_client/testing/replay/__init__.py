"""Record and replay: a recorded daemon session served back to a client, offline.

``ReplayDaemon`` (:mod:`~daemon_client.testing.replay.daemon`) plays a JSONL recording
(written by ``Client(trace=...)``, or a transcript) in memory and on a loopback port;
:mod:`~daemon_client.testing.replay.cassette` reads recordings,
:mod:`~daemon_client.testing.replay.matching` matches requests and adapts replies,
:mod:`~daemon_client.testing.replay.player` plays one connection.
"""
