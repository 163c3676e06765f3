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
from daemon_client.cli.lookup import find_agent
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
