"""``providers``, ``workspaces`` and ``projects``: list them, or follow their updates;
``workspaces create``; ``workspaces label``: assign a label to a workspace or remove it.

Listings run on the main thread with ``--timeout`` per request; ``--watch`` prints updates
from the callback thread (one JSON document per line with ``--json``) while the main thread
waits in :class:`~daemon_client.cli.follow.Follow`.
"""

from __future__ import annotations

import argparse
import os

from daemon_client.cli.context import CommandContext
from daemon_client.cli.exit_codes import OK, USAGE, CliError
from daemon_client.cli.json_render import model_json
from daemon_client.cli.render import providers_table, table, workspaces_table
from daemon_client.client import Client
from daemon_client.errors import DaemonClientError
from daemon_client.protocol.directory import MAX_PAGE_LIMIT, DirectoryMessage, Page
from daemon_client.protocol.projects import ProjectUpdate
from daemon_client.protocol.workspace_directory import WorkspaceListResult, WorkspaceUpdate
from daemon_client.protocol.workspaces import WorkspaceDescriptor
from daemon_client.protocol.worktrees import Worktree, WorktreeCheckout


def _watch_needed(args: argparse.Namespace) -> None:
    if args.duration is not None and not args.watch:
        raise CliError("--duration needs --watch", USAGE)


def providers(args: argparse.Namespace, ctx: CommandContext) -> int:
    client = ctx.connect()
    if args.wait is not None:
        snapshot = client.providers.wait_for_ready(timeout=args.wait)
    else:
        snapshot = client.providers.snapshot(timeout=ctx.timeout)
    if ctx.json:
        ctx.out.json_document(model_json(snapshot))
    else:
        ctx.out.line(providers_table(snapshot))
    return OK


def _workspace_line(update: WorkspaceUpdate) -> str:
    status = f" {update.workspace.status}" if update.workspace is not None else ""
    return f"{update.kind} {update.workspace_id}{status}"


def _all_workspaces(ctx: CommandContext, client: Client, first: WorkspaceListResult) -> list[WorkspaceDescriptor]:
    """``first`` and every later page."""
    entries, result, seen = list(first.entries), first, set()
    while result.page_info.has_more and result.page_info.next_cursor and result.page_info.next_cursor not in seen:
        seen.add(result.page_info.next_cursor)
        page = Page(limit=MAX_PAGE_LIMIT, cursor=result.page_info.next_cursor)
        result = client.workspaces.list(page=page, timeout=ctx.timeout)
        entries.extend(result.entries)
    return entries


def _print_workspaces(ctx: CommandContext, entries: list[WorkspaceDescriptor], *, watching: bool) -> None:
    if ctx.json and watching:
        ctx.out.json_line({"type": "snapshot", "workspaces": model_json(entries)})
    elif ctx.json:
        ctx.out.json_document(model_json(entries))
    else:
        ctx.out.line(workspaces_table(entries))


def workspaces(args: argparse.Namespace, ctx: CommandContext) -> int:
    _watch_needed(args)
    client = ctx.connect()
    first = client.workspaces.list(page=Page(limit=MAX_PAGE_LIMIT), subscribe=args.watch, timeout=ctx.timeout)
    if not args.watch:
        _print_workspaces(ctx, _all_workspaces(ctx, client, first), watching=False)
        return OK
    follow = ctx.follow()
    follow.watch(client)

    def snapshot(result: WorkspaceListResult) -> None:  # callback thread, first and after reconnects
        try:
            _print_workspaces(ctx, _all_workspaces(ctx, client, result), watching=True)
        except DaemonClientError as exc:
            _print_workspaces(ctx, list(result.entries), watching=True)
            ctx.notes.note(f"only the first page of workspaces is shown: {exc}")

    def update(message: DirectoryMessage[WorkspaceUpdate]) -> None:  # callback thread
        if ctx.json:
            ctx.out.json_line({"type": message.payload.kind, **model_json(message.payload)})
        else:
            ctx.out.line(_workspace_line(message.payload))

    first.subscription.subscribe(
        snapshot=snapshot,
        update=update,
        error=lambda exc: follow.finish(CliError(f"the workspace observation ended: {exc}")),
    )
    return follow.wait(args.duration)


def _creation(args: argparse.Namespace) -> Worktree | WorktreeCheckout | None:
    if args.base is not None and args.branch is None and not args.worktree:
        raise CliError("--base needs --branch or --worktree", USAGE)
    if args.checkout is not None:
        try:
            return WorktreeCheckout.parse(args.checkout)
        except ValueError as exc:
            raise CliError(f"--checkout: {exc}", USAGE) from exc
    if args.branch is not None or args.worktree:
        try:
            return Worktree(branch=args.branch, base=args.base)
        except ValueError as exc:
            raise CliError(str(exc), USAGE) from exc
    return None


def create_workspace(args: argparse.Namespace, ctx: CommandContext) -> int:
    """``workspaces create``: print the new workspace's ID and directory (``--json``: its descriptor)."""
    worktree = _creation(args)
    cwd = os.path.abspath(os.path.expanduser(args.cwd or os.getcwd()))
    client = ctx.connect()
    workspace = client.workspaces.create(
        cwd, worktree=worktree, title=args.title, first_prompt=args.prompt, project_id=args.project,
        timeout=ctx.timeout,
    )  # fmt: skip
    snapshot = workspace.current()
    if ctx.json:
        ctx.out.json_document(model_json(snapshot) if snapshot is not None else {"id": workspace.id})
    else:
        row = [workspace.id, workspace.name or "", workspace.directory or ""]
        ctx.out.line(table([row], ["ID", "NAME", "DIRECTORY"]))
    if workspace.setup_terminal_id:
        ctx.notes.note(f"setup runs in terminal {workspace.setup_terminal_id}")
    return OK


def workspace_label(args: argparse.Namespace, ctx: CommandContext) -> int:
    if args.remove and args.color is not None:
        raise CliError("--color applies to assigning a label, not to --remove", USAGE)
    workspaces = ctx.connect().workspaces
    if args.remove:
        result = workspaces.remove_label(args.workspace, args.label, timeout=ctx.timeout)
    else:
        result = workspaces.set_label(args.workspace, args.label, color=args.color, timeout=ctx.timeout)
    if ctx.json:
        ctx.out.json_document({"label": model_json(result.label), "labels": list(result.labels)})
    else:
        ctx.out.line(", ".join(result.labels) if result.labels else "(no labels)")
    return OK


def projects(args: argparse.Namespace, ctx: CommandContext) -> int:
    _watch_needed(args)
    client = ctx.connect()
    follow = ctx.follow()

    def update(change: ProjectUpdate) -> None:  # callback thread
        if ctx.json:
            ctx.out.json_line(model_json(change))
        else:
            ctx.out.line(f"{change.kind} {change.project_id}")

    if args.watch:
        follow.watch(client)
        subscription = client.projects.subscribe(
            update, on_error=lambda exc: follow.finish(CliError(f"the project subscription ended: {exc}"))
        )
        follow.wait_for(subscription.ready, ctx.timeout, "following the projects")
    listed = client.projects.list(timeout=ctx.timeout)
    if ctx.json:
        document = {"projects": model_json(listed.projects), "derived": listed.derived}
        if args.watch:
            ctx.out.json_line({"type": "snapshot", **document})
        else:
            ctx.out.json_document(document)
    else:
        rows = ([p.project_display_name, p.project_kind, p.project_root_path, p.project_id] for p in listed.projects)
        ctx.out.line(table(rows, ["PROJECT", "KIND", "ROOT", "ID"]))
        if listed.derived:
            ctx.notes.note("projects derived from workspaces: this daemon has no project list")
    return follow.wait(args.duration) if args.watch else OK
