"""The fake daemon's simulated agent runs."""
