"""Reliability tests: drops, restarts, dead connections, bad input, concurrency, soak."""
