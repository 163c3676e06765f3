"""The argument parser of ``daemon-client``: subcommand registration and the shared options.

:class:`CliParser` records every option it is given (public: :attr:`CliParser.recorded`), so
that shell completion is generated from the parser itself and tests can check that every
option has help. :class:`Registry` adds one subcommand with the options every subcommand
shares (``-v``/``-q``, and the connection options for those that talk to a daemon) and the
exit-status table in its help. A subcommand names its function as ``"module:function"`` of
:mod:`daemon_client.cli.actions`, imported only when it runs. Built on the main thread
before anything runs.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from daemon_client.cli.argtypes import seconds
from daemon_client.cli.exit_codes import table_text

DEFAULT_RECONNECT_TIMEOUT = 60.0
AGENT_HELP = "agent ID, unique ID prefix or exact title"
_ActionT = TypeVar("_ActionT", bound=argparse.Action)


class CliParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that keeps a public list of its options and subcommands."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.recorded: list[argparse.Action] = []
        """Every option and positional added to this parser (directly or through a group)."""
        self.subcommands: dict[str, CliParser] = {}
        """Subcommand name → its parser."""
        self.subcommand_help: dict[str, str] = {}
        self._intermixing = False
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """A subcommand's options may come between its positionals (``send AGENT --json PROMPT``)."""
        if self.subcommands or self._intermixing:
            return super().parse_known_args(args, namespace)
        words = list(sys.argv[1:] if args is None else args)
        tail: list[str] | None = None
        if "--" in words:  # ``terminals new ... -- PROGRAM ARGS``: everything after it is the command
            cut = words.index("--")
            words, tail = words[:cut], words[cut + 1 :]
        self._intermixing = True
        try:
            parsed, extras = self.parse_known_intermixed_args(words, namespace)
        finally:
            self._intermixing = False
        if tail is not None:
            if not hasattr(parsed, "command") or not isinstance(parsed.command, list):
                extras = [*extras, "--", *tail]
            else:
                parsed.command = [*parsed.command, *tail]
        return parsed, extras

    def _add_action(self, action: _ActionT) -> _ActionT:
        added = super()._add_action(action)
        self.recorded.append(added)
        return added


def verbosity_args(parser: argparse.ArgumentParser, *, top_level: bool) -> None:
    """``-v``/``-q``; on subcommands they default to the top level's values."""
    group = parser.add_mutually_exclusive_group()
    default_v: Any = 0 if top_level else argparse.SUPPRESS
    default_q: Any = False if top_level else argparse.SUPPRESS
    group.add_argument(
        "-v", "--verbose", action="count", default=default_v,
        help="show the library's log records: -v warnings and info, -vv debug (frames)",
    )  # fmt: skip
    group.add_argument(
        "-q", "--quiet", action="store_true", default=default_q,
        help="print only results and the error line: no notes, no progress, no log records",
    )  # fmt: skip


def json_arg(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--json", action="store_true", help=f"print {what} as JSON")


def follow_args(parser: argparse.ArgumentParser, *, duration_help: str) -> None:
    """``--duration`` and the reconnect options of a command that keeps following a daemon."""
    parser.add_argument("--duration", type=seconds, metavar="SECONDS", help=duration_help)
    reconnect_args(parser)


def reconnect_args(parser: argparse.ArgumentParser) -> None:
    """``--no-reconnect`` and ``--reconnect-timeout``: what a lost connection does to a command."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--no-reconnect", action="store_true",
        help="exit with status 3 as soon as the connection drops (default: reconnect)",
    )  # fmt: skip
    group.add_argument(
        "--reconnect-timeout", type=seconds, default=DEFAULT_RECONNECT_TIMEOUT, metavar="SECONDS",
        help=f"exit with status 3 when the daemon stays unreachable this long (default {DEFAULT_RECONNECT_TIMEOUT:g})",
    )  # fmt: skip


Command = Callable[..., int]
ConnectionArgs = Callable[[argparse.ArgumentParser], None]
ACTIONS = "daemon_client.cli.actions"


def resolve(action: str) -> Command:
    """The function of ``"module:function"`` in :mod:`daemon_client.cli.actions`, imported now:
    parsing, ``--help`` and completion never import the client."""
    module, _, name = action.partition(":")
    function: Command = getattr(importlib.import_module(f"{ACTIONS}.{module}"), name)
    return function


class Registry:
    """Adds subcommands to the top-level parser."""

    def __init__(self, top: CliParser, connection_args: ConnectionArgs) -> None:
        self._top = top
        self._sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
        self._connection_args = connection_args

    def add_group(self, name: str, help_text: str) -> Registry:
        """A subcommand with subcommands of its own (``config get``); add them to the returned registry."""
        parser: CliParser = self._sub.add_parser(
            name, help=help_text, description=help_text[:1].upper() + help_text[1:] + ".", epilog=table_text()
        )
        self._top.subcommands[name] = parser
        self._top.subcommand_help[name] = help_text
        group = Registry.__new__(Registry)
        group._top = parser
        group._sub = parser.add_subparsers(dest=f"{name}_command", required=True, metavar="COMMAND")
        group._connection_args = self._connection_args
        return group

    def optional_group(self, parser: CliParser, name: str) -> Registry:
        """Subcommands of the command ``parser`` (``name``) that it also runs without one
        (``workspaces`` lists, ``workspaces create`` creates); add them to the returned registry.
        A subcommand's options come after its name."""
        group = Registry.__new__(Registry)
        group._top = parser
        group._sub = parser.add_subparsers(dest=f"{name}_command", required=False, metavar="COMMAND")
        group._connection_args = self._connection_args
        return group

    def add(self, name: str, help_text: str, action: str, *, connects: bool = True, epilog: str = "") -> CliParser:
        """A new subcommand running ``action`` (``"module:function"``, see :func:`resolve`) as
        ``function(args, ctx)``; returns its parser for its own options."""
        parser: CliParser = self._sub.add_parser(
            name, help=help_text, description=help_text[:1].upper() + help_text[1:] + ".",
            epilog=(epilog + "\n\n" if epilog else "") + table_text(),
        )  # fmt: skip
        if connects:
            self._connection_args(parser)
        verbosity_args(parser, top_level=False)
        parser.set_defaults(handler=action)
        self._top.subcommands[name] = parser
        self._top.subcommand_help[name] = help_text
        return parser
