"""Run a command in one of the daemon's terminals and wait for its result with ``expect``.

Starts a terminal (on hosts with workspace terminals it could be ``workspace.terminals.create()``),
streams its output *before* typing, so nothing is missed, types the command followed by an
``echo`` of a marker with the exit status, and waits for that marker, like pexpect. The
embedded daemon's terminals run a scripted shell that knows ``echo``, ``seq``, ``sleep`` and a
few more; against a real daemon the command runs in your shell.

    python examples/terminal_expect.py
    python examples/terminal_expect.py --url ws://127.0.0.1:6767/ws --cwd "$PWD" "ls -la"
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import uuid

from _embedded import add_common_arguments, daemon

import daemon_client as dc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    parser.add_argument("command", nargs="?", default="seq 3")
    parser.add_argument("--cwd", default=os.getcwd(), help="absolute directory the terminal starts in")
    args = parser.parse_args(argv)
    marker = f"done-{uuid.uuid4().hex[:8]}"

    with daemon(args) as url, dc.Client(url, password=args.password) as client:
        terminal = client.terminals.create(cwd=args.cwd, name="example", size=(24, 100))
        print(f"terminal {terminal.id} started in {args.cwd}")
        try:
            with terminal.stream() as stream:
                # the status travels as "<marker> <status>": the echoed command line shows "$?" instead
                terminal.send_keys(f"{args.command}; echo {marker} $?", "Enter")
                found = stream.expect(rf"{marker} (\d+)\r?\n", timeout=args.duration or 30)
                output = found.string[: found.start()]
                lines = [line for line in output.splitlines() if line.strip()][1:]  # without the command line
                print("\n".join(re.sub(r".*\r", "", line) for line in lines))
                status = found.group(1)
                print(f"exit status: {status}")
                shown = [line for line in terminal.capture().lines if line]
                print(f"last line on the screen: {shown[-1]}")
        finally:
            terminal.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
