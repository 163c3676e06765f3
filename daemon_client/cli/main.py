"""The ``daemon-client`` command (also ``python -m daemon_client``): parse, run, exit.

Builds the parser from the subcommand modules (:mod:`daemon_client.cli.commands`), owns the
connection options and the client they describe (``--host``/``--url``: an address, or a stored host's name, see
:mod:`daemon_client.cli.stored`; the password from
``--password-stdin``, ``--password-file``, ``PASEO_PASSWORD`` or, warned about, ``--password``:
see :mod:`daemon_client.cli.password`; ``--timeout``), configures logging and signals, runs the subcommand on
the main thread and turns its outcome into an exit status (:mod:`daemon_client.cli.exit_codes`):
errors are one line on standard error. Live output is fed from the client's callback thread.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from daemon_client import __version__
from daemon_client.cli.argtypes import seconds
from daemon_client.cli.commands import COMMANDS, modules
from daemon_client.cli.context import CommandContext
from daemon_client.cli.exit_codes import INTERRUPTED, TERMINATED, USAGE, CliError, Terminated, classify, table_text
from daemon_client.cli.logs import configured
from daemon_client.cli.notes import Notes
from daemon_client.cli.output import Output
from daemon_client.cli.parser import CliParser, Registry, resolve, verbosity_args
from daemon_client.cli.password import add_password_args
from daemon_client.cli.signals import handled

if TYPE_CHECKING:
    from daemon_client.client import Client

DEFAULT_TIMEOUT = 15.0
ENVIRONMENT = """environment:
  DAEMON_CLIENT_HOSTS  the host store (default ~/.config/daemon-client/hosts.toml; see hosts)
  PASEO_HOST      the daemon's address when --host is not given (any --host form)
  PASEO_LISTEN    the address the local daemon listens on (read when PASEO_HOST is unset)
  PASEO_HOME      where the daemon's pid file and config are looked for (default ~/.paseo)
  PASEO_PASSWORD  the daemon's password when --password is not given"""


def _connection_args(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--host",
        help="a stored host's name (see: daemon-client hosts), or a daemon address: host:port, PORT, /path.sock, "
        "unix:///path, tcp://host:port?ssl=true, "
        "ws://host:port/ws, or a pairing-offer link (https://app.paseo.sh/#offer=…, through the relay) "
        "(default: PASEO_HOST, PASEO_LISTEN, $PASEO_HOME/paseo.pid, config, localhost:6767)",
    )
    where.add_argument("--url", dest="host", help="the same as --host")
    add_password_args(parser, what="the daemon's password (default: PASEO_PASSWORD)")
    parser.add_argument(
        "--timeout", type=seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
        help=f"bound on connecting and on every request, in seconds (default {DEFAULT_TIMEOUT:g})",
    )  # fmt: skip


def _client(args: argparse.Namespace, reconnect: bool) -> Client:
    """The client of a command that talks to a daemon, built from the connection options."""
    from daemon_client.cli.stored import stored_host
    from daemon_client.client import Client  # here: parsing and --help never import the client
    from daemon_client.config import ReconnectPolicy

    host = stored_host(args.host)
    try:
        return Client(
            host if host is not None else args.host,
            password=args.password,
            connect_timeout=args.timeout,
            request_timeout=args.timeout,
            reconnect=ReconnectPolicy(enabled=reconnect),
            trace=getattr(args, "trace", None),
        )
    except ValueError as exc:
        raise CliError(f"bad daemon address: {exc}", USAGE) from None


def _remember(client: Client, notes: Notes) -> None:
    """After the first connection: a stored host's ``serverId``, once learned, is written back."""
    if client.host is not None:
        from daemon_client.cli.stored import remember_server_id

        remember_server_id(client, notes)


_TOP_FLAGS = frozenset({"-v", "-vv", "-vvv", "--verbose", "-q", "--quiet"})
_FULL_PARSER = frozenset({"-h", "--help", "--version", "completion"})  # they print the whole parser


def command_of(argv: Sequence[str]) -> str | None:
    """The top-level command ``argv`` runs, when only that command's parser is needed to parse
    it; ``None`` when the whole parser is: ``--help`` anywhere, ``--version``, ``completion``
    (it prints every command), no command, an unknown one, or a top-level option not known here
    (an abbreviation)."""
    if any(word in _FULL_PARSER for word in argv):
        return None
    words = iter(argv)
    for word in words:
        if word == "--trace":
            next(words, None)
        elif word.startswith("--trace=") or word in _TOP_FLAGS:
            continue
        else:
            return word if word in COMMANDS else None
    return None


def build_parser(command: str | None = None) -> CliParser:
    """The parser of every command, or of ``command`` alone (see :func:`command_of`): the same
    options, help and errors for that command, without importing and building the others."""
    parser = CliParser(
        prog="daemon-client",
        description="Talk to a Paseo daemon: list and follow agents, run prompts, answer permissions.",
        epilog=ENVIRONMENT + "\n\n" + table_text() + "\n\nSee docs/cli.md for examples and scripting recipes.",
    )
    parser.add_argument("--version", action="version", version=f"daemon-client {__version__}")
    parser.add_argument(
        "--trace", metavar="PATH", help="write every frame to PATH as JSONL, credentials redacted (see record-replay)"
    )
    verbosity_args(parser, top_level=True)
    registry = Registry(parser, _connection_args)
    for group in modules(command):
        group.register(registry)
    parser.set_defaults(top_parser=parser)
    return parser


def _execute(args: argparse.Namespace, ctx: CommandContext) -> int:
    failure: tuple[int, str] | None = None
    try:
        if hasattr(args, "password_file"):  # a command with password options: read the password once
            from daemon_client.cli.password import resolve_password
            from daemon_client.errors import DaemonClientError

            try:
                args.password = resolve_password(args)
            except DaemonClientError as exc:  # an empty or unreadable password source: a usage error
                raise CliError(str(exc), USAGE) from None
        return int(resolve(args.handler)(args, ctx))
    except KeyboardInterrupt as exc:
        return TERMINATED if isinstance(exc, Terminated) else INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - classify() re-raises what it does not know
        failure = classify(exc)
        return failure[0]
    finally:
        ctx.close()
        if failure is not None:  # after the close, so that the error line is the last one
            ctx.notes.error(failure[1])


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command; returns its exit status (``out`` replaces standard output, for tests)."""
    words = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(command_of(words)).parse_args(words)
    notes = Notes(sys.stderr, quiet=args.quiet)
    ctx = CommandContext(args, Output(out or sys.stdout), notes, _client, on_connect=_remember)
    with configured(notes, args.verbose, args.quiet), handled():
        try:
            return _execute(args, ctx)
        except KeyboardInterrupt as exc:  # a second Ctrl-C while closing
            return TERMINATED if isinstance(exc, Terminated) else INTERRUPTED
