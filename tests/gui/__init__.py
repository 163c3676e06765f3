"""Tests of the GUI executors (daemon_client/gui) and of WouldDeadlock on a GUI-like callback thread."""
