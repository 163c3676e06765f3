"""The fake daemon's agent timelines."""
