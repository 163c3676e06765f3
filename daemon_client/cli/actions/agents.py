"""``agents``: list every agent (paging through the directory), or follow their statuses.

The listing pages through the whole directory on the main thread (``--limit N`` stops
early). ``--watch`` observes the directory: the first snapshot and every later one (after a
reconnect) are completed with the remaining pages inside the snapshot callback, on the
callback thread, so updates queued behind it are applied afterwards and in order.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from daemon_client.cli.context import CommandContext
from daemon_client.cli.exit_codes import OK, USAGE, CliError
from daemon_client.cli.json_render import model_json
from daemon_client.cli.render import agents_table, marks_for, unicode_marks_text
from daemon_client.errors import DaemonClientError
from daemon_client.protocol.directory import MAX_PAGE_LIMIT, AgentFilter, Page

if TYPE_CHECKING:
    from daemon_client.client import Client
    from daemon_client.protocol.agents import AgentEntry
    from daemon_client.protocol.directory import AgentListResult


def agent_filter(args: argparse.Namespace) -> AgentFilter | None:
    """The filter of ``--status``, ``--label`` and ``--archived`` (``None`` without them)."""
    labels = dict(args.label) if args.label else None
    if not (args.status or labels or args.archived):
        return None
    return AgentFilter(labels=labels, statuses=args.status or None, include_archived=args.archived or None)


def read_pages(
    client: Client, filter_: AgentFilter | None, limit: int | None, timeout: float, first: AgentListResult | None = None
) -> list[AgentEntry]:
    """Every agent (at most ``limit``), following the daemon's cursors from ``first`` if given."""
    entries: list[AgentEntry] = list(first.entries) if first is not None else []
    cursor = first.page_info.next_cursor if first is not None and first.page_info.has_more else None
    if first is not None and cursor is None:
        return entries[:limit] if limit is not None else entries
    seen: set[str] = set()
    while limit is None or len(entries) < limit:
        size = MAX_PAGE_LIMIT if limit is None else max(1, min(MAX_PAGE_LIMIT, limit - len(entries)))
        page = client.agents.list(filter=filter_, page=Page(limit=size, cursor=cursor), timeout=timeout)
        entries.extend(page.entries)
        cursor = page.page_info.next_cursor
        if not page.page_info.has_more or not cursor or cursor in seen or not page.entries:
            break
        seen.add(cursor)
    return entries[:limit] if limit is not None else entries


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    if args.duration is not None and not args.watch:
        raise CliError("--duration needs --watch", USAGE)
    if args.all_hosts:
        from daemon_client.cli.actions.all_hosts import list_all_hosts

        return list_all_hosts(args, ctx, agent_filter(args), read_pages)
    client = ctx.connect()
    filter_ = agent_filter(args)
    marks = marks_for(ctx.out.encodes(unicode_marks_text()))
    if not args.watch:
        entries = read_pages(client, filter_, args.limit, ctx.timeout)
        if ctx.json:
            ctx.out.json_document(model_json(entries))
        else:
            ctx.out.line(agents_table(entries, marks))
        return OK
    from daemon_client.cli.live import LiveAgents  # only --watch: a listing never imports the live view

    follow = ctx.follow()
    follow.watch(client)
    live = LiveAgents(ctx.out, line_mode=True, json_lines=ctx.json, marks=marks)

    def snapshot(result: AgentListResult) -> None:  # callback thread
        try:
            live.snapshot(read_pages(client, filter_, args.limit, ctx.timeout, first=result))
        except DaemonClientError as exc:
            live.snapshot(result.entries)
            ctx.notes.note(f"only the first page of agents is shown: {exc}")

    size = MAX_PAGE_LIMIT if args.limit is None else min(MAX_PAGE_LIMIT, args.limit)
    directory = client.agents.list(filter=filter_, page=Page(limit=size), subscribe=True, timeout=ctx.timeout)
    directory.subscription.subscribe(
        snapshot=snapshot,
        update=lambda msg: live.update(msg.payload.kind, msg.payload.agent_id, msg.payload.agent),
        error=lambda exc: follow.finish(CliError(f"the agent directory observation ended: {exc}")),
    )
    return follow.wait(args.duration)
