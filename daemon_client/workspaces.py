"""``client.workspaces``: the workspace directory, its observations, and workspace handles.

Same threading as :mod:`daemon_client.agents`: methods block the caller's thread with a
timeout; handle state and listeners are updated on the callback thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from daemon_client.directory_namespace import DirectoryNamespace, HandleUpdate, SubscribeArg
from daemon_client.errors import ProtocolError, check_reply
from daemon_client.handles import LocalHandle
from daemon_client.protocol.codec import structure
from daemon_client.protocol.directory import (
    WORKSPACE_SORT_KEYS,
    DirectoryMessage,
    Page,
    SortLike,
    WorkspaceFilter,
    WorkspaceListResult,
    WorkspaceUpdate,
    parse_workspace_list,
    parse_workspace_update,
    sort_to_wire,
)
from daemon_client.protocol.workspaces import WorkspaceDescriptor
from daemon_client.runtime.context import ClientContext
from daemon_client.subscriptions.directory import DirectoryFamily, DirectoryManager, DirectoryObservation

if TYPE_CHECKING:
    from daemon_client.terminals import TerminalsNamespace, WorkspaceTerminals

WorkspaceMessage = DirectoryMessage[WorkspaceUpdate]
WorkspaceObservation = DirectoryObservation[WorkspaceListResult]


def _apply(view: dict[str, WorkspaceDescriptor], message: WorkspaceMessage) -> None:
    update = message.payload
    if update.kind == "upsert" and update.workspace is not None:
        view[update.workspace_id] = update.workspace
    elif update.kind == "remove":
        view.pop(update.workspace_id, None)


WORKSPACES = DirectoryFamily[WorkspaceListResult, WorkspaceMessage, WorkspaceDescriptor](
    name="workspaces",
    update_type="workspace_update",
    parse_list=parse_workspace_list,
    parse_update=parse_workspace_update,
    entries=lambda result: result.entries,
    entry_key=lambda workspace: workspace.id,
    apply_update=_apply,
    with_entries=lambda base, entries, sid, obs: attrs.evolve(
        base, entries=entries, subscription_id=sid, subscription=obs
    ),
)


class WorkspaceHandle(LocalHandle[WorkspaceDescriptor]):
    """A local reference to one workspace (``client.workspaces.ref(id)``); fetches nothing.

    Use the workspace's ``id`` (never its path) for every later call: on current daemons
    several workspaces may share one directory.
    """

    def __init__(
        self, workspaces: WorkspacesNamespace, workspace_id: str, snapshot: WorkspaceDescriptor | None = None
    ) -> None:
        super().__init__(workspace_id, snapshot)
        self._workspaces = workspaces

    @property
    def project_id(self) -> str | None:
        return self._snapshot.project_id if self._snapshot is not None else None

    @property
    def directory(self) -> str | None:
        return self._snapshot.directory if self._snapshot is not None else None

    @property
    def name(self) -> str | None:
        return self._snapshot.name if self._snapshot is not None else None

    @property
    def status(self) -> str | None:
        return self._snapshot.status if self._snapshot is not None else None

    def refresh(self, timeout: float | None = None) -> WorkspaceDescriptor | None:
        """Read this workspace from the daemon's directory; ``None`` if it is not listed."""
        found = self._workspaces.find(self.id, timeout=timeout)
        if found is not None:
            self.note_snapshot(found)
        return found

    def archive(self, timeout: float | None = None) -> str | None:
        """Archive this workspace; returns ``archivedAt``."""
        return self._workspaces.archive(self.id, timeout=timeout)

    @property
    def terminals(self) -> WorkspaceTerminals:
        """This workspace's terminals (``create``, ``list``, ``subscribe``); needs a host with
        ``features.workspaceTerminals``."""
        return self._workspaces.terminals_of(self)

    def __repr__(self) -> str:
        return f"<WorkspaceHandle {self.id} {self.status or 'unknown'}>"


class WorkspacesNamespace(
    DirectoryNamespace[WorkspaceListResult, WorkspaceMessage, WorkspaceDescriptor, WorkspaceHandle]
):
    """``client.workspaces``."""

    def __init__(
        self,
        context: ClientContext,
        manager: DirectoryManager[WorkspaceListResult, WorkspaceMessage, WorkspaceDescriptor],
        terminals: Callable[[], TerminalsNamespace] | None = None,
    ) -> None:
        super().__init__(context, manager)
        self._terminals = terminals

    def terminals_of(self, workspace: WorkspaceHandle) -> WorkspaceTerminals:
        """The terminal calls of one workspace (``workspace.terminals``)."""
        from daemon_client.terminals import WorkspaceTerminals

        if self._terminals is None:
            raise RuntimeError("this workspaces namespace was built without terminals")
        return WorkspaceTerminals(self._terminals(), workspace)

    def list(
        self,
        filter: WorkspaceFilter | None = None,
        sort: Sequence[SortLike] | None = None,
        page: Page | None = None,
        subscribe: SubscribeArg = False,
        *,
        include_background: bool | None = None,
        timeout: float | None = None,
        subscription_id: None = None,
    ) -> WorkspaceListResult:
        """Read a page of the workspace directory; with ``subscribe=True`` also observe it.

        Same contract as ``client.agents.list``: on older daemons the single workspace slot
        is shared, so independent filtered observations need an updated daemon.
        """
        message: dict[str, Any] = {"type": "fetch_workspaces_request"}
        if filter is not None:
            message["filter"] = filter.to_wire()
        wire_sort = sort_to_wire(sort, WORKSPACE_SORT_KEYS)
        if wire_sort is not None:
            message["sort"] = wire_sort
        return self._read(
            message,
            page=page,
            include_background=include_background,
            subscribe=subscribe,
            subscription_id=subscription_id,
            timeout=timeout,
        )

    def ref(self, workspace: str | WorkspaceDescriptor) -> WorkspaceHandle:
        """The handle of a workspace (one per ID and client); fetches nothing."""
        snapshot = workspace if isinstance(workspace, WorkspaceDescriptor) else None
        return self._ref(snapshot.id if snapshot is not None else str(workspace), snapshot)

    def _new_handle(
        self, item_id: str, known: WorkspaceDescriptor | None, snapshot: WorkspaceDescriptor | None
    ) -> WorkspaceHandle:
        return WorkspaceHandle(self, item_id, snapshot or known)

    def open(self, cwd: str, *, timeout: float | None = None) -> WorkspaceHandle:
        """Open (look up or create) the workspace of a directory; raises ``RpcError`` if it fails."""
        payload = self._context.request({"type": "open_project_request", "cwd": cwd}, timeout=timeout)
        check_reply(
            payload, "open_project_request", required_field="workspace", missing="the daemon opened no workspace"
        )
        workspace = payload["workspace"]
        if not isinstance(workspace, Mapping):
            raise ProtocolError(f"open_project_request answered with an unreadable workspace: {workspace!r:.200}")
        descriptor = structure(workspace, WorkspaceDescriptor)
        handle = self.ref(descriptor)
        handle.note_snapshot(descriptor)
        return handle

    def archive(self, workspace_id: str, *, timeout: float | None = None) -> str | None:
        """Archive a workspace by ID; returns ``archivedAt``; raises ``RpcError`` if it fails."""
        payload = self._context.request(
            {"type": "archive_workspace_request", "workspaceId": workspace_id}, timeout=timeout
        )
        check_reply(payload, "archive_workspace_request")
        archived_at = payload.get("archivedAt")
        return archived_at if isinstance(archived_at, str) else None

    def find(self, workspace_id: str, *, timeout: float | None = None) -> WorkspaceDescriptor | None:
        """Look one workspace up by ID in the directory (pages through the matching entries)."""
        cursor: str | None = None
        while True:
            page = self.list(
                filter=WorkspaceFilter(query=workspace_id), page=Page(limit=200, cursor=cursor), timeout=timeout
            )
            for entry in page.entries:
                if entry.id == workspace_id:
                    return entry
            cursor = page.page_info.next_cursor
            if not page.page_info.has_more or not cursor:
                return None

    def _interpret(self, message: WorkspaceMessage) -> HandleUpdate[WorkspaceMessage] | None:
        update = message.payload
        if update.kind == "upsert" and update.workspace is not None:
            return HandleUpdate(update.workspace_id, update.workspace, False, message)
        if update.kind == "remove":
            return HandleUpdate(update.workspace_id, None, True, message)
        return None
