"""The fake daemon's transport-neutral engine: shared state, per-connection protocol, handlers, outbox."""
