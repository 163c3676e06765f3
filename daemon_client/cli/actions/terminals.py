"""``terminals ...`` and ``attach``: run the functions of :mod:`daemon_client.cli.terminals`
and :mod:`daemon_client.cli.attach` with this invocation's connection. Main thread."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from daemon_client.cli import attach as attaching
from daemon_client.cli import terminals
from daemon_client.cli.context import CommandContext
from daemon_client.cli.exit_codes import USAGE, CliError

Function = Callable[[argparse.Namespace, Any, Callable[[argparse.Namespace], Any]], int]


def _run(function: Function, args: argparse.Namespace, ctx: CommandContext, out: Any = None) -> int:
    return function(args, ctx.out if out is None else out, lambda _args: ctx.connect())


def ls(args: argparse.Namespace, ctx: CommandContext) -> int:
    return _run(terminals.cmd_ls, args, ctx)


def new(args: argparse.Namespace, ctx: CommandContext) -> int:
    return _run(terminals.cmd_new, args, ctx)


def send(args: argparse.Namespace, ctx: CommandContext) -> int:
    return _run(terminals.cmd_send, args, ctx)


def capture(args: argparse.Namespace, ctx: CommandContext) -> int:
    return _run(terminals.cmd_capture, args, ctx)


def kill(args: argparse.Namespace, ctx: CommandContext) -> int:
    return _run(terminals.cmd_kill, args, ctx)


def tail(args: argparse.Namespace, ctx: CommandContext) -> int:
    return _run(terminals.cmd_tail, args, ctx)


def attach(args: argparse.Namespace, ctx: CommandContext) -> int:
    try:
        key = attaching.parse_detach_key(args.detach_key or attaching.DEFAULT_DETACH_KEY)
    except (ValueError, argparse.ArgumentTypeError) as exc:
        raise CliError(f"--detach-key: {exc}", USAGE) from None
    args.detach_key = key
    try:
        stdin = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # no standard input at all (closed or replaced)
        stdin = -1
    if not attaching.reads_keys(stdin):
        raise CliError(attaching.NOT_A_TERMINAL, USAGE)
    return _run(attaching.cmd_attach, args, ctx, out=ctx.out.stream)
