"""The subcommands of ``daemon-client``: their options and help, one module per group.

Each module has ``register(registry)``; what a subcommand does is in the module of the same
name in :mod:`daemon_client.cli.actions`, imported only when it runs. The order of
:data:`GROUPS` is the order of ``--help``; :data:`COMMANDS` names the module of every
top-level command, so that a run of one command imports and registers only its own module
(:func:`modules`). Imported on the main thread when the parser is built.
"""

from __future__ import annotations

import importlib
from types import ModuleType

GROUPS = ("agents", "tail", "run", "lifecycle", "settings", "terminals", "catalog", "info", "hosts", "top",
          "embedded", "completion")  # fmt: skip
"""The modules of this package, in the order of ``--help``."""

COMMANDS: dict[str, str] = {
    "agents": "agents",
    "tail": "tail",
    "run": "run",
    "send": "run",
    "wait": "run",
    "cancel": "lifecycle",
    "archive": "lifecycle",
    "permissions": "lifecycle",
    "config": "settings",
    "agent": "settings",
    "terminals": "terminals",
    "attach": "terminals",
    "providers": "catalog",
    "workspaces": "catalog",
    "projects": "catalog",
    "info": "info",
    "hosts": "hosts",
    "top": "top",
    "demo": "embedded",
    "serve": "embedded",
    "completion": "completion",
}
"""Top-level command → the module of :data:`GROUPS` that registers it."""


def modules(command: str | None = None) -> list[ModuleType]:
    """The modules to register: every group, or only the one of ``command`` (a key of :data:`COMMANDS`)."""
    names = GROUPS if command is None else (COMMANDS[command],)
    return [importlib.import_module(f"{__name__}.{name}") for name in names]
