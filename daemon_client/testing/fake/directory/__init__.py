"""The fake daemon's agent and workspace directories."""
