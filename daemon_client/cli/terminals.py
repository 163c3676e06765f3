"""``daemon-client terminals``: ``ls``, ``new``, ``send``, ``capture``, ``kill`` and ``tail``
(the live output), and the lookup of a terminal by ID, ID prefix or name shared with ``attach``.

Commands run on the main thread; ``tail`` writes the output from the client's callback thread
under a lock. Errors print one line and exit non-zero (see :func:`daemon_client.cli.main.main`).
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from daemon_client.cli.render import table, to_json
from daemon_client.client import Client
from daemon_client.errors import DaemonClientError
from daemon_client.protocol.terminals import TerminalState
from daemon_client.terminal_handle import TerminalHandle

Connect = Callable[[argparse.Namespace], Client]
"""Makes the connected client of a command from its arguments."""
ConnectionArgs = Callable[[argparse.ArgumentParser], None]
"""Adds ``--host``/``--url``, ``--password`` and ``--timeout`` to a parser."""


def find_terminal(client: Client, wanted: str) -> TerminalHandle:
    """The terminal named by its ID, a unique ID prefix or its exact name."""
    listed = client.terminals.list().terminals
    exact = [t for t in listed if t.id == wanted]
    matches = exact or [t for t in listed if t.id.startswith(wanted)] or [t for t in listed if t.name == wanted]
    if len(matches) == 1:
        return client.terminals.ref(matches[0])
    if not matches:
        raise DaemonClientError(f"no terminal {wanted!r} (daemon-client terminals ls lists them)")
    raise DaemonClientError(f"{wanted!r} names {len(matches)} terminals: {', '.join(t.id for t in matches)}")


def parse_size(text: str) -> tuple[int, int]:
    """``ROWSxCOLS`` → ``(rows, cols)``."""
    rows, sep, cols = text.lower().partition("x")
    if not sep or not rows.isdigit() or not cols.isdigit() or int(rows) < 1 or int(cols) < 1:
        raise argparse.ArgumentTypeError(f"a size is ROWSxCOLS, e.g. 24x80, not {text!r}")
    return int(rows), int(cols)


def cmd_ls(args: argparse.Namespace, out: TextIO, connect: Connect) -> int:
    with connect(args) as client:
        listed = client.terminals.list(cwd=args.cwd, workspace_id=args.workspace)
        if args.json:
            out.write(to_json(list(listed.terminals)) + "\n")
            return 0
        rows = ([t.id, t.name, t.title or "", t.cwd or "", t.workspace_id or ""] for t in listed.terminals)
        out.write(table(rows, ["ID", "NAME", "TITLE", "CWD", "WORKSPACE"]) + "\n")
    return 0


def cmd_new(args: argparse.Namespace, out: TextIO, connect: Connect) -> int:
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    cwd = args.cwd if args.cwd is not None or args.workspace is not None else os.getcwd()
    with connect(args) as client:
        handle = client.terminals.create(
            workspace_id=args.workspace,
            cwd=cwd,
            name=args.name,
            command=command[0] if command else None,
            args=command[1:],
            size=args.size,
        )
        client.ping()  # a size applied by a resize (older daemons) is written before the connection closes
        out.write(handle.id + "\n")
    return 0


def cmd_send(args: argparse.Namespace, out: TextIO, connect: Connect) -> int:
    with connect(args) as client:
        handle = find_terminal(client, args.terminal)
        handle.send_keys(*args.keys)
        client.ping()  # the input is written before the connection closes
    return 0


def cmd_capture(args: argparse.Namespace, out: TextIO, connect: Connect) -> int:
    with connect(args) as client:
        captured = find_terminal(client, args.terminal).capture(args.start, args.end, strip_ansi=not args.ansi)
        for line in captured.lines:
            out.write(line + "\n")
    return 0


def cmd_kill(args: argparse.Namespace, out: TextIO, connect: Connect) -> int:
    with connect(args) as client:
        handle = find_terminal(client, args.terminal)
        handle.kill()
        out.write(f"killed {handle.id}\n")
    return 0


def cmd_tail(args: argparse.Namespace, out: TextIO, connect: Connect) -> int:
    lock = threading.Lock()
    ended = threading.Event()
    first_screen: list[TerminalState] = []

    def write(text: str) -> None:
        with lock:
            out.write(text)
            out.flush()

    def on_snapshot(state: TerminalState) -> None:
        if not first_screen:  # the screen as it is when tailing starts; afterwards only output
            first_screen.append(state)
            write(state.text() + "\n")

    with connect(args) as client:
        handle = find_terminal(client, args.terminal)
        with handle.stream(on_output=write, on_snapshot=on_snapshot, on_exit=ended.set):
            deadline = None if args.duration is None else time.monotonic() + args.duration
            while not ended.wait(0.1):
                if deadline is not None and time.monotonic() >= deadline:
                    break
            client.flush_callbacks()
        if ended.is_set():
            write(f"\n[terminal {handle.id} exited]\n")
    return 0


def add_terminal_commands(sub: Any, connection_args: ConnectionArgs, connect: Connect) -> None:
    """Register ``terminals`` (with its subcommands) on the command's subparsers ``sub``."""
    terminals = sub.add_parser("terminals", help="the daemon's terminals: ls, new, send, capture, kill, tail")
    actions = terminals.add_subparsers(dest="terminals_command", required=True)

    def action(name: str, help_text: str, func: Callable[[argparse.Namespace, TextIO, Connect], int]) -> Any:
        parser = actions.add_parser(name, help=help_text)
        connection_args(parser)
        parser.set_defaults(func=lambda args, out: func(args, out, connect))
        return parser

    ls = action("ls", "list terminals (all, or of one --cwd or --workspace)", cmd_ls)
    ls.add_argument("--cwd", help="only terminals started in this exact directory")
    ls.add_argument("--workspace", help="only terminals of this workspace (current daemons)")
    ls.add_argument("--json", action="store_true")
    new = action("new", "start a terminal and print its ID", cmd_new)
    new.add_argument("--cwd", help="absolute directory (default: this one, or the workspace's)")
    new.add_argument("--workspace", help="the owning workspace's ID (current daemons)")
    new.add_argument("--name")
    new.add_argument("--size", type=parse_size, help="ROWSxCOLS (default: the daemon's, 24x80)")
    new.add_argument("command", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS... (default: the user's shell)")
    send = action("send", "type into a terminal: text and key tokens (Enter, Tab, C-c, ...)", cmd_send)
    send.add_argument("terminal", help="ID, unique ID prefix or name")
    send.add_argument("keys", nargs="+", help='e.g. "ls -la" Enter')
    capture = action("capture", "print a terminal's scrollback and screen", cmd_capture)
    capture.add_argument("terminal", help="ID, unique ID prefix or name")
    capture.add_argument("--start", type=int, help="first line, 0-based; negative counts from the end")
    capture.add_argument("--end", type=int, help="last line (inclusive); negative counts from the end")
    capture.add_argument("--ansi", action="store_true", help="keep colours and other escape sequences")
    kill = action("kill", "kill a terminal", cmd_kill)
    kill.add_argument("terminal", help="ID, unique ID prefix or name")
    tail = action("tail", "print a terminal's screen, then its output as it comes", cmd_tail)
    tail.add_argument("terminal", help="ID, unique ID prefix or name")
    tail.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
