"""Terminals: the namespace (client-wide and per workspace) and terminal handles with their
live streams. Caller's thread for calls, the callback thread for stream callbacks."""
