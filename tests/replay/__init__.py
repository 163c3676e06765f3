"""Tests of the record-and-replay daemon (daemon_client/testing/replay) and of the recorded transcripts replayed."""
