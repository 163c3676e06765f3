"""``terminals ls/new/send/capture/kill/tail`` and ``attach``: options and help (work:
:mod:`daemon_client.cli.actions.terminals`)."""

from __future__ import annotations

import argparse

from daemon_client.cli.argtypes import seconds
from daemon_client.cli.parser import Registry, json_arg


def _size(text: str) -> tuple[int, int]:
    """``ROWSxCOLS`` → ``(rows, cols)``, both positive."""
    rows, sep, cols = text.lower().partition("x")
    try:
        size = (int(rows), int(cols))
    except ValueError:
        size = (0, 0)
    if not sep or min(size) < 1:
        raise argparse.ArgumentTypeError(f"expected ROWSxCOLS such as 24x80, got {text!r}")
    return size


def register(registry: Registry) -> None:
    group = registry.add_group("terminals", "the daemon's terminals: ls, new, send, capture, kill, tail")
    ls = group.add("ls", "list terminals (all, or of one --cwd or --workspace)", "terminals:ls")
    ls.add_argument("--cwd", help="only terminals started in this exact directory")
    ls.add_argument("--workspace", help="only terminals of this workspace (current daemons)")
    json_arg(ls, "the terminals")
    new = group.add("new", "start a terminal and print its ID", "terminals:new")
    new.add_argument("--cwd", help="absolute directory (default: this one, or the workspace's)")
    new.add_argument("--workspace", help="the owning workspace's ID (current daemons)")
    new.add_argument("--name", help="the terminal's name")
    new.add_argument("--size", type=_size, help="ROWSxCOLS (default: the daemon's, 24x80)")
    new.add_argument("command", nargs="*", help="-- PROGRAM ARGS... (default: the user's shell)")
    send = group.add("send", "type into a terminal: text and key tokens (Enter, Tab, C-c, ...)", "terminals:send")
    send.add_argument("terminal", help="ID, unique ID prefix or name")
    send.add_argument("keys", nargs="+", help='e.g. "ls -la" Enter')
    capture = group.add("capture", "print a terminal's scrollback and screen", "terminals:capture")
    capture.add_argument("terminal", help="ID, unique ID prefix or name")
    capture.add_argument("--start", type=int, help="first line, 0-based; negative counts from the end")
    capture.add_argument("--end", type=int, help="last line (inclusive); negative counts from the end")
    capture.add_argument("--ansi", action="store_true", help="keep colours and other escape sequences")
    kill = group.add("kill", "kill a terminal", "terminals:kill")
    kill.add_argument("terminal", help="ID, unique ID prefix or name")
    tail = group.add("tail", "print a terminal's screen, then its output as it comes", "terminals:tail")
    tail.add_argument("terminal", help="ID, unique ID prefix or name")
    tail.add_argument("--duration", type=seconds, metavar="SECONDS", help="stop after this many seconds")

    attach = registry.add(
        "attach", "connect this terminal to one of the daemon's (detach with Ctrl-])", "terminals:attach",
        epilog="Raw keys in, its screen out, resized with this window. Detach with Ctrl-] (see --detach-key);\n"
        "the remote terminal keeps running.",
    )  # fmt: skip
    attach.add_argument("terminal", help="ID, unique ID prefix or name")
    attach.add_argument("--detach-key", metavar="KEY", help="the key that detaches, e.g. ^] (the default) or ^Q")
    attach.add_argument("--duration", type=seconds, metavar="SECONDS", help="detach after this many seconds")
