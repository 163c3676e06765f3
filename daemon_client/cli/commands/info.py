"""``info``: options and help (work: :mod:`daemon_client.cli.actions.info`)."""

from __future__ import annotations

from daemon_client.cli.parser import Registry, json_arg


def register(registry: Registry) -> None:
    parser = registry.add(
        "info", "print how the daemon was found, its version and features, and a ping", "info:run",
        epilog="examples:\n  daemon-client info\n  daemon-client info --json | jq -r .serverInfo.version",
    )  # fmt: skip
    json_arg(parser, "the address, how it was found, server_info and the ping")
