"""The subcommands of ``daemon-client``: their options and help, one module per group.

Each module has ``register(registry)``; what a subcommand does is in the module of the same
name in :mod:`daemon_client.cli.actions`, imported only when it runs. The order of
:data:`GROUPS` is the order of ``--help``. Imported on the main thread when the parser is built.
"""

from __future__ import annotations

from daemon_client.cli.commands import (
    agents,
    catalog,
    completion,
    embedded,
    hosts,
    info,
    lifecycle,
    run,
    settings,
    tail,
    terminals,
    top,
)

GROUPS = (agents, tail, run, lifecycle, settings, terminals, catalog, info, hosts, top, embedded, completion)
