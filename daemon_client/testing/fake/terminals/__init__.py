"""Terminals of the fake daemon: a deterministic scripted shell per terminal, the terminal
requests of every host kind, stream slots and binary frames, and fault injection."""
