"""``tail AGENT``: options and help (work: :mod:`daemon_client.cli.actions.tail`)."""

from __future__ import annotations

from daemon_client.cli.argtypes import count
from daemon_client.cli.parser import AGENT_HELP, Registry, follow_args, json_arg


def register(registry: Registry) -> None:
    parser = registry.add(
        "tail", "print an agent's timeline, then follow it live", "tail:run",
        epilog="examples:\n  daemon-client tail my-agent --history 20\n"
               "  daemon-client tail 3f2a --since 120 --no-follow\n"
               "  daemon-client tail laptop:my-agent     (the stored host laptop, see: daemon-client hosts)\n"
               "  daemon-client tail my-agent --json | jq -c 'select(.type == \"turn_completed\")'",
    )  # fmt: skip
    parser.add_argument("agent", help=AGENT_HELP + "; NAME:AGENT: the agent on the stored host NAME")
    start = parser.add_mutually_exclusive_group()
    start.add_argument("--history", type=count, metavar="N", help="first print the newest N history rows")
    start.add_argument("--since", type=count, metavar="SEQ", help="first print every history row after row SEQ")
    parser.add_argument(
        "--no-follow", action="store_true", help="print the history (default: all of it) and exit instead of following"
    )
    json_arg(parser, 'one JSON document per line (history rows carry "history": true)')
    follow_args(parser, duration_help="stop following after this many seconds")
