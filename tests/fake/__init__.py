"""Tests of the shipped fake daemon, driven by a raw WebSocket client."""
