"""The subcommands of ``daemon-client``, one module per group; each has ``register(registry)``.

A command function is ``run(args, ctx) -> int`` on the main thread (see
:mod:`daemon_client.cli.context`). The order of :data:`GROUPS` is the order of ``--help``.
"""

from __future__ import annotations

from daemon_client.cli.commands import agents, catalog, completion, embedded, info, lifecycle, run, tail

GROUPS = (agents, tail, run, lifecycle, catalog, info, embedded, completion)
