"""``cancel``, ``archive``, ``permissions``: options and help.

What they do is in :mod:`daemon_client.cli.actions.lifecycle`.
"""

from __future__ import annotations

from daemon_client.cli.parser import AGENT_HELP, Registry, json_arg


def register(registry: Registry) -> None:
    parser = registry.add(
        "cancel",
        "cancel an agent's running turn",
        "lifecycle:cancel",
        epilog="example:\n  daemon-client cancel my-agent",
    )
    parser.add_argument("agent", help=AGENT_HELP)
    json_arg(parser, "the agent after the cancel")
    parser = registry.add(
        "archive", "archive an agent (a running turn is interrupted)", "lifecycle:archive",
        epilog="example:\n  daemon-client archive my-agent",
    )  # fmt: skip
    parser.add_argument("agent", help=AGENT_HELP)
    json_arg(parser, "the agent ID and archivedAt")
    parser = registry.add(
        "permissions", "list an agent's pending permission requests, or approve or deny one", "lifecycle:permissions",
        epilog="examples:\n  daemon-client permissions my-agent\n  daemon-client permissions my-agent approve\n"
               "  daemon-client permissions my-agent deny perm-1a2b --message 'not on main'",
    )  # fmt: skip
    parser.add_argument("agent", help=AGENT_HELP)
    parser.add_argument("action", nargs="?", choices=("approve", "deny"), help="answer a request (default: list them)")
    parser.add_argument("permission", nargs="?", help="the permission's ID (needed only when several are pending)")
    parser.add_argument("--message", help="with deny: the reason given to the agent")
    json_arg(parser, "the pending requests, or the answer given")
