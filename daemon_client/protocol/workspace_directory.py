"""The workspace directory's queries, results and update messages (protocol.md 4.2, 4.8):
``WorkspaceFilter``, ``WorkspaceListResult``, ``WorkspaceUpdate`` and their parsers. Paging,
sort and the message envelope are shared with the agent directory
(:mod:`daemon_client.protocol.directory`). Kept apart so that a listing of agents never creates
the workspace models. Pure data and functions, on whichever thread first needs the typed value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from daemon_client.protocol.directory import (
    DirectoryMessage,
    PageInfo,
    drop_none,
    entry_at,
    list_at,
    optional_at,
    page_info_of,
    seq_of,
    sync_of,
    text_at,
)
from daemon_client.protocol.lenient import structure_each, unknown_fields
from daemon_client.protocol.workspaces import WorkspaceDescriptor, WorkspaceProjectDescriptor

WORKSPACE_SORT_KEYS = frozenset({"status_priority", "activity_at", "name", "project_id"})


@attrs.frozen
class WorkspaceFilter:
    """Which workspaces a directory read or observation covers."""

    query: str | None = None
    project_id: str | None = None
    id_prefix: str | None = None
    include_internal: bool | None = None
    include_background: bool | None = None

    def to_wire(self) -> dict[str, Any]:
        return drop_none(
            {
                "query": self.query,
                "projectId": self.project_id,
                "idPrefix": self.id_prefix,
                "includeInternal": self.include_internal,
                "includeBackground": self.include_background,
            }
        )


@attrs.frozen
class WorkspaceListResult:
    """A page of the workspace directory; with ``subscribe`` also the live observation."""

    entries: tuple[WorkspaceDescriptor, ...]
    page_info: PageInfo = PageInfo()  # noqa: RUF009 - a frozen value, as in the agent directory
    empty_projects: tuple[WorkspaceProjectDescriptor, ...] = ()
    subscription_id: str | None = None
    subscription: Any = attrs.field(default=None, repr=False, eq=False)
    sync: Mapping[str, Any] | None = None


@attrs.frozen
class WorkspaceUpdate:
    """``workspace_update`` payload: ``kind`` is ``"upsert"`` (``workspace`` set) or ``"remove"``."""

    kind: str
    workspace_id: str
    workspace: WorkspaceDescriptor | None = None
    empty_project: WorkspaceProjectDescriptor | None = None
    removed_project_id: str | None = None
    subscription_id: str | None = None
    generation: Any = None
    seq: int | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


def parse_workspace_list(payload: Mapping[str, Any]) -> WorkspaceListResult:
    """``fetch_workspaces_response`` payload → :class:`WorkspaceListResult`."""
    return WorkspaceListResult(
        entries=structure_each(list_at(payload, "entries"), WorkspaceDescriptor, "entries"),
        page_info=page_info_of(payload),
        empty_projects=structure_each(list_at(payload, "emptyProjects"), WorkspaceProjectDescriptor, "emptyProjects"),
        sync=sync_of(payload),
    )


_WORKSPACE_UPDATE_KEYS = (
    "kind",
    "id",
    "workspace",
    "emptyProject",
    "removedProjectId",
    "subscriptionId",
    "generation",
    "seq",
)


def parse_workspace_update(payload: Mapping[str, Any]) -> DirectoryMessage[WorkspaceUpdate]:
    """``workspace_update`` payload → the typed message handed to ``update`` callbacks."""
    workspace = entry_at(payload, "workspace", WorkspaceDescriptor)
    workspace_id = workspace.id if workspace is not None else str(payload.get("id") or "")
    empty = payload.get("emptyProject")
    empty_project = optional_at(payload, "emptyProject", WorkspaceProjectDescriptor)
    extra = unknown_fields(payload, _WORKSPACE_UPDATE_KEYS)
    if empty_project is None and empty is not None:
        extra["emptyProject"] = empty
    update = WorkspaceUpdate(
        kind=str(payload.get("kind") or ""),
        workspace_id=workspace_id,
        workspace=workspace,
        empty_project=empty_project,
        removed_project_id=text_at(payload, "removedProjectId"),
        subscription_id=text_at(payload, "subscriptionId"),
        generation=payload.get("generation"),
        seq=seq_of(payload),
        extra_fields=extra,
    )
    return DirectoryMessage("workspace_update", update)
