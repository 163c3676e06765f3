"""``agents``: its options and help; the work is done by :mod:`daemon_client.cli.actions.agents`."""

from __future__ import annotations

from daemon_client.cli.argtypes import key_value, positive_count
from daemon_client.cli.parser import Registry, follow_args, json_arg


def register(registry: Registry) -> None:
    parser = registry.add(
        "agents", "list agents (every page; --watch: follow their statuses)", "agents:run",
        epilog="examples:\n  daemon-client agents --status running\n"
               "  daemon-client agents --json | jq -r '.[].agent.id'\n  daemon-client agents --watch --json",
    )  # fmt: skip
    parser.add_argument("--watch", action="store_true", help="keep running and print every status change")
    json_arg(parser, "the agents (with --watch: one JSON document per line)")
    parser.add_argument("--limit", type=positive_count, metavar="N", help="list at most N agents (default: all)")
    parser.add_argument(
        "--status", action="append", metavar="STATUS",
        help="only agents with this status (idle, running, error, initializing, closed); repeatable",
    )  # fmt: skip
    parser.add_argument(
        "--label", action="append", type=key_value, metavar="KEY=VALUE", help="only agents with this label; repeatable"
    )
    parser.add_argument("--archived", action="store_true", help="include archived agents")
    parser.add_argument(
        "--all-hosts", action="store_true",
        help="list the agents of every stored host (daemon-client hosts add), with a HOST column",
    )  # fmt: skip
    follow_args(parser, duration_help="with --watch: stop after this many seconds")
