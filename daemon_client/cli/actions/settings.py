"""``config get/set`` and ``agent set-mode/set-model/commands``: run the functions of
:mod:`daemon_client.cli.settings` with this invocation's connection. Main thread."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from daemon_client.cli import settings
from daemon_client.cli.context import CommandContext


def _run(function: Callable[[argparse.Namespace, Any], int], args: argparse.Namespace, ctx: CommandContext) -> int:
    args.connect = lambda _args: ctx.connect()
    return function(args, ctx.out)


def config_get(args: argparse.Namespace, ctx: CommandContext) -> int:
    return _run(settings.cmd_config_get, args, ctx)


def config_set(args: argparse.Namespace, ctx: CommandContext) -> int:
    return _run(settings.cmd_config_set, args, ctx)


def agent_set_mode(args: argparse.Namespace, ctx: CommandContext) -> int:
    return _run(settings.cmd_agent_set_mode, args, ctx)


def agent_set_model(args: argparse.Namespace, ctx: CommandContext) -> int:
    return _run(settings.cmd_agent_set_model, args, ctx)


def agent_commands(args: argparse.Namespace, ctx: CommandContext) -> int:
    return _run(settings.cmd_agent_commands, args, ctx)
