"""Tests of the client through its public API, in memory and over loopback."""
