"""``client.workspaces``: the workspace directory, its observations, and workspace handles.

Same threading as :mod:`daemon_client.agents`: methods block the caller's thread with a
timeout; handle state and listeners are updated on the callback thread.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from daemon_client.directory_read import SubscribeArg, read_directory
from daemon_client.errors import RpcError
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
from daemon_client.subscriptions.directory import DirectoryFamily, DirectoryManager, DirectoryObservation

if TYPE_CHECKING:
    from daemon_client.client import Client

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
            self._seen(found)
        return found

    def archive(self, timeout: float | None = None) -> str | None:
        """Archive this workspace; returns ``archivedAt``."""
        return self._workspaces.archive(self.id, timeout=timeout)

    def __repr__(self) -> str:
        return f"<WorkspaceHandle {self.id} {self.status or 'unknown'}>"


class WorkspacesNamespace:
    """``client.workspaces``."""

    def __init__(
        self,
        client: Client,
        manager: DirectoryManager[WorkspaceListResult, WorkspaceMessage, WorkspaceDescriptor],
    ) -> None:
        self._client = client
        self._manager = manager
        self._handles: weakref.WeakValueDictionary[str, WorkspaceHandle] = weakref.WeakValueDictionary()
        self._handles_lock = threading.Lock()
        manager.add_listener(self._on_update)

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
        return read_directory(
            self._client,
            self._manager,
            message,
            page=page,
            include_background=include_background,
            subscribe=subscribe,
            subscription_id=subscription_id,
            timeout=timeout,
        )

    def subscribe(self, handler: Callable[[WorkspaceMessage], object]) -> Callable[[], None]:
        """A local listener for every ``workspace_update`` routed to this client's live workspace
        observations; it sends nothing and hears nothing while none is live."""
        return self._manager.add_listener(handler)

    def ref(self, workspace: str | WorkspaceDescriptor) -> WorkspaceHandle:
        """The handle of a workspace (one per ID and client); fetches nothing."""
        snapshot = workspace if isinstance(workspace, WorkspaceDescriptor) else None
        workspace_id = snapshot.id if snapshot is not None else str(workspace)
        with self._handles_lock:
            handle = self._handles.get(workspace_id)
            if handle is None:
                known = None if snapshot is not None else self._manager.find(workspace_id)
                handle = WorkspaceHandle(self, workspace_id, snapshot or known)
                self._handles[workspace_id] = handle
        if snapshot is not None and handle.current() is None:
            handle._seen(snapshot)
        return handle

    def open(self, cwd: str, *, timeout: float | None = None) -> WorkspaceHandle:
        """Open (look up or create) the workspace of a directory; raises ``RpcError`` if it fails."""
        payload = self._client.request({"type": "open_project_request", "cwd": cwd}, timeout=timeout)
        workspace = payload.get("workspace")
        if payload.get("error") or not isinstance(workspace, Mapping):
            code = payload.get("errorCode")
            raise RpcError(
                str(payload.get("error") or "the daemon opened no workspace"),
                code=code if isinstance(code, str) else None,
                request_type="open_project_request",
                request_id=payload.get("requestId"),
            )
        descriptor = structure(workspace, WorkspaceDescriptor)
        handle = self.ref(descriptor)
        handle._seen(descriptor)
        return handle

    def archive(self, workspace_id: str, *, timeout: float | None = None) -> str | None:
        """Archive a workspace by ID; returns ``archivedAt``; raises ``RpcError`` if it fails."""
        payload = self._client.request(
            {"type": "archive_workspace_request", "workspaceId": workspace_id}, timeout=timeout
        )
        if payload.get("error"):
            raise RpcError(
                str(payload["error"]), request_type="archive_workspace_request", request_id=payload.get("requestId")
            )
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

    def _on_update(self, message: WorkspaceMessage) -> None:
        update = message.payload
        handle = self._handles.get(update.workspace_id)
        if handle is None:
            return
        if update.kind == "upsert" and update.workspace is not None:
            handle._observe(update.workspace, message, self._manager.dispatcher.invoke)
        elif update.kind == "remove":
            handle._observe(None, message, self._manager.dispatcher.invoke)
