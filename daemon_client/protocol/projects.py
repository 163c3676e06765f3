"""attrs models of the project list and its updates (protocol.md 8.1, 8.2). Pure data."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from daemon_client.errors import ProtocolError
from daemon_client.protocol.codec import structure
from daemon_client.protocol.lenient import structure_each, structure_optional, unknown_fields
from daemon_client.protocol.workspaces import WorkspaceProjectDescriptor


@attrs.frozen
class ProjectRemoval:
    id: str
    seq: int = 0
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class ProjectSync:
    """Where a project list stands: ``generation`` and the last change ``head_seq``."""

    generation: str | None = None
    head_seq: int | None = None
    mode: str = "snapshot"
    reason: str | None = None
    removals: tuple[ProjectRemoval, ...] = ()
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class ProjectList:
    """``projects.list()``. ``derived`` is True on hosts without a project list, where the
    projects were derived from the workspace directory (see ``ProjectsNamespace.list``)."""

    projects: tuple[WorkspaceProjectDescriptor, ...]
    sync: ProjectSync | None = None
    derived: bool = False


@attrs.frozen
class ProjectUpdate:
    """``project.update``: ``kind`` is ``"upsert"`` (``project`` set) or ``"remove"``."""

    kind: str
    project_id: str
    project: WorkspaceProjectDescriptor | None = None
    generation: str | None = None
    seq: int | None = None
    subscription_id: str | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


_UPDATE_KEYS = ("kind", "projectId", "project", "generation", "seq", "subscriptionId")


def _list(value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ProtocolError(f"projects is {type(value).__name__}, not a list")
    return value


def parse_list(payload: Mapping[str, Any]) -> ProjectList:
    return ProjectList(
        projects=structure_each(_list(payload.get("projects")), WorkspaceProjectDescriptor, "projects"),
        sync=structure_optional(payload.get("sync"), ProjectSync, "sync"),
    )


def parse_update(payload: Mapping[str, Any]) -> ProjectUpdate:
    raw = payload.get("project")
    project = structure(raw, WorkspaceProjectDescriptor) if isinstance(raw, Mapping) else None
    seq = payload.get("seq")
    generation = payload.get("generation")
    return ProjectUpdate(
        kind=str(payload.get("kind", "")),
        project_id=project.project_id if project is not None else str(payload.get("projectId", "")),
        project=project,
        generation=generation if isinstance(generation, str) else None,
        seq=seq if isinstance(seq, int) and not isinstance(seq, bool) else None,
        subscription_id=payload.get("subscriptionId") if isinstance(payload.get("subscriptionId"), str) else None,
        extra_fields=unknown_fields(payload, _UPDATE_KEYS),
    )
