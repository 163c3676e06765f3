"""Tests of the composition root (daemon_client/client): construction, connecting, credentials,
whole-client parity."""
