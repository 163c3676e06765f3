"""Where the ``daemon-client`` command gets a password, keeping it out of the process list.

Sources, one per invocation: ``--password-stdin`` (one line from standard input, as ``docker
login`` reads it), ``--password-file PATH`` (its first line; a file other users can read is
warned about), ``PASEO_PASSWORD``, or ``--password VALUE``, which works but prints a one-line
warning: every local user can read a command line (``ps``, ``/proc``). When the daemon refuses
the credentials (close 4401) and standard input is a terminal, :func:`prompt_password` asks with
``getpass`` (no echo) instead of failing.

Runs on the CLI's main thread. Nothing here writes a password anywhere.
"""

from __future__ import annotations

import argparse
import getpass
import os
import stat
import sys
from typing import TextIO

from daemon_client.errors import DaemonClientError

PROMPTS = 3
"""How many times the CLI asks for a password after the daemon refused one."""

COMMAND_LINE_WARNING = (
    "daemon-client: warning: a password given with --password is visible to every local user in the "
    "process list; use --password-stdin, --password-file PATH or PASEO_PASSWORD instead"
)


def add_password_args(parser: argparse.ArgumentParser, *, what: str = "the daemon's password") -> None:
    """The mutually exclusive password options of one subcommand."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--password", default=None, metavar="VALUE", help=f"{what} (visible in the process list: prefer the others)"
    )
    group.add_argument("--password-stdin", action="store_true", help=f"read {what} from the first line of stdin")
    group.add_argument("--password-file", metavar="PATH", help=f"read {what} from the first line of PATH")


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0].removesuffix("\r")


def _read_file(path: str, err: TextIO) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise DaemonClientError(f"cannot read the password file {path}: {reason}") from None
    if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
        err.write(
            f"daemon-client: warning: the password file {path} can be read by other users "
            f"(mode {stat.S_IMODE(mode):04o}); chmod 600 it\n"
        )
    return _first_line(text)


def resolve_password(args: argparse.Namespace, *, stdin: TextIO | None = None, err: TextIO | None = None) -> str | None:
    """The password of this invocation, from the option used, else ``PASEO_PASSWORD``; ``None`` if none.

    Raises :class:`DaemonClientError` for an empty or unreadable source.
    """
    err = err or sys.stderr
    if getattr(args, "password_stdin", False):
        stream = stdin or sys.stdin
        password = _first_line(stream.readline())
        if not password:
            raise DaemonClientError("--password-stdin: no password on the first line of standard input")
        return password
    path = getattr(args, "password_file", None)
    if path is not None:
        password = _read_file(path, err)
        if not password:
            raise DaemonClientError(f"--password-file: the first line of {path} is empty")
        return password
    if getattr(args, "password", None) is not None:
        err.write(COMMAND_LINE_WARNING + "\n")
        return str(args.password)
    return os.environ.get("PASEO_PASSWORD") or None


def can_prompt(args: argparse.Namespace, stdin: TextIO | None = None) -> bool:
    """True when a refused password may be asked for: stdin is a terminal not used for the password."""
    stream = stdin or sys.stdin
    try:
        interactive = stream.isatty()
    except (AttributeError, ValueError):
        return False
    return interactive and not getattr(args, "password_stdin", False)


def prompt_password(url: str) -> str:
    """Ask for the password on the terminal, without echo (``getpass``)."""
    return getpass.getpass(f"Password for {url}: ")
