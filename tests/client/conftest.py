"""Fixtures of the client tests: the shared ones live in tests/conftest.py."""
