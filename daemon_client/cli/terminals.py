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
from typing import TextIO

from daemon_client.api.terminals.handle import TerminalHandle
from daemon_client.cli.output import Output
from daemon_client.cli.render import table, to_json
from daemon_client.client import Client
from daemon_client.errors import DaemonClientError
from daemon_client.protocol.terminals import TerminalState

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
                if isinstance(out, Output) and out.reader_gone():  # | head: nobody reads any more
                    break
            client.flush_callbacks()
        if ended.is_set():
            write(f"\n[terminal {handle.id} exited]\n")
    return 0
