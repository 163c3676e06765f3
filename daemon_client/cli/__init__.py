"""The ``daemon-client`` command: argument parsing, subcommands and rendering."""

from daemon_client.cli.main import main

__all__ = ["main"]
