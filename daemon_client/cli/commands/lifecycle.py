"""``cancel``, ``archive`` and ``permissions``: act on an agent from the shell.

Each runs on the main thread and blocks at most ``--timeout`` per request. ``permissions``
lists what the agent waits for, or answers one request and waits for the daemon's
confirmation (through a timeline subscription, which current daemons need for it).
"""

from __future__ import annotations

import argparse

from daemon_client.cli.context import CommandContext
from daemon_client.cli.exit_codes import OK, CliError
from daemon_client.cli.json_render import model_json
from daemon_client.cli.lookup import AGENT_HELP, find_agent
from daemon_client.cli.parser import Registry, json_arg
from daemon_client.cli.render import permissions_table
from daemon_client.protocol.agents import PermissionRequest


def cancel(args: argparse.Namespace, ctx: CommandContext) -> int:
    client = ctx.connect()
    agent = find_agent(client, args.agent, ctx.timeout)
    snapshot = agent.cancel(timeout=ctx.timeout)
    if ctx.json:
        ctx.out.json_document({"agentId": agent.id, "agent": model_json(snapshot)})
    else:
        ctx.notes.note(f"agent {agent.id}: cancel requested (status now {snapshot.status if snapshot else 'unknown'})")
    return OK


def archive(args: argparse.Namespace, ctx: CommandContext) -> int:
    client = ctx.connect()
    agent = find_agent(client, args.agent, ctx.timeout)
    archived_at = agent.archive(timeout=ctx.timeout)
    if ctx.json:
        ctx.out.json_document({"agentId": agent.id, "archivedAt": archived_at})
    else:
        ctx.notes.note(f"agent {agent.id} archived{' at ' + archived_at if archived_at else ''}")
    return OK


def _chosen(agent_id: str, pending: tuple[PermissionRequest, ...], wanted: str | None) -> PermissionRequest:
    if not pending:
        raise CliError(f"agent {agent_id} waits for no permission")
    if wanted is None:
        if len(pending) > 1:
            ids = ", ".join(p.id for p in pending)
            raise CliError(f"agent {agent_id} waits for {len(pending)} permissions; name one of {ids}")
        return pending[0]
    for request in pending:
        if request.id == wanted:
            return request
    raise CliError(f"agent {agent_id} has no pending permission {wanted!r}")


def permissions(args: argparse.Namespace, ctx: CommandContext) -> int:
    client = ctx.connect()
    agent = find_agent(client, args.agent, ctx.timeout)
    snapshot = agent.current()
    pending = snapshot.pending_permissions if snapshot is not None else ()
    if args.action is None:
        if ctx.json:
            ctx.out.json_document(model_json(list(pending)))
        elif pending:
            ctx.out.line(permissions_table(pending))
        else:
            ctx.notes.note(f"agent {agent.id} waits for no permission")
        return OK
    request = _chosen(agent.id, pending, args.permission)
    allow = args.action == "approve"
    with agent.timeline.subscribe(lambda update: None) as subscription:
        subscription.ready.result(ctx.timeout)
        agent.respond_to_permission(request.id, allow=allow, message=args.message, wait=True, timeout=ctx.timeout)
    if ctx.json:
        behavior = "allow" if allow else "deny"
        ctx.out.json_document({"agentId": agent.id, "permissionId": request.id, "behavior": behavior})
    else:
        ctx.notes.note(f"agent {agent.id}: permission {request.id} {'approved' if allow else 'denied'}")
    return OK


def register(registry: Registry) -> None:
    parser = registry.add(
        "cancel", "cancel an agent's running turn", cancel, epilog="example:\n  daemon-client cancel my-agent"
    )
    parser.add_argument("agent", help=AGENT_HELP)
    json_arg(parser, "the agent after the cancel")
    parser = registry.add(
        "archive", "archive an agent (a running turn is interrupted)", archive,
        epilog="example:\n  daemon-client archive my-agent",
    )  # fmt: skip
    parser.add_argument("agent", help=AGENT_HELP)
    json_arg(parser, "the agent ID and archivedAt")
    parser = registry.add(
        "permissions", "list an agent's pending permission requests, or approve or deny one", permissions,
        epilog="examples:\n  daemon-client permissions my-agent\n  daemon-client permissions my-agent approve\n"
               "  daemon-client permissions my-agent deny perm-1a2b --message 'not on main'",
    )  # fmt: skip
    parser.add_argument("agent", help=AGENT_HELP)
    parser.add_argument("action", nargs="?", choices=("approve", "deny"), help="answer a request (default: list them)")
    parser.add_argument("permission", nargs="?", help="the permission's ID (needed only when several are pending)")
    parser.add_argument("--message", help="with deny: the reason given to the agent")
    json_arg(parser, "the pending requests, or the answer given")
