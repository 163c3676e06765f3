"""attrs models of workspaces and projects (protocol.md 4.8, 8.1, 9.3).

Unknown fields, and values of a shape a field cannot take, are kept in ``extra_fields``
(see :mod:`daemon_client.protocol.lenient`); enumerations are plain strings. Pure data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from daemon_client.protocol.agents import ProjectPlacement


@attrs.frozen
class DiffStat:
    additions: int = 0
    deletions: int = 0
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class WorkspaceScript:
    """A script or service of a workspace."""

    script_name: str
    type: str = "service"
    hostname: str | None = None
    port: int | None = None
    proxy_url: str | None = None
    local_proxy_url: str | None = None
    public_proxy_url: str | None = None
    lifecycle: str = "stopped"
    health: str | None = None
    exit_code: int | None = None
    terminal_id: str | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class AheadBehind:
    """Commits ahead of and behind the upstream; ``None`` when the daemon does not know."""

    ahead: int | None = None
    behind: int | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class GitRuntime:
    current_branch: str | None = None
    remote_url: str | None = None
    is_paseo_owned_worktree: bool | None = None
    is_dirty: bool | None = None
    ahead_behind: AheadBehind | None = None
    ahead_of_origin: int | None = None
    behind_of_origin: int | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class PullRequest:
    url: str = ""
    title: str = ""
    state: str = ""
    base_ref_name: str = ""
    head_ref_name: str = ""
    is_merged: bool = False
    number: int | None = None
    is_draft: bool | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class GithubRuntime:
    """Forge data of a workspace (GitHub, or another forge on current daemons)."""

    features_enabled: bool | None = None
    pull_request: PullRequest | None = None
    error: Mapping[str, Any] | None = None
    refreshed_at: str | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class WorkspaceDescriptor:
    """``WorkspaceDescriptorPayload`` (protocol.md 9.3).

    ``id`` is opaque: on 0.1.65 it is the directory's path, on current daemons it is not,
    and several workspaces may share a directory. ``status`` is one of ``needs_input``,
    ``failed``, ``running``, ``attention``, ``done`` on known daemons.
    """

    id: str
    project_id: str = ""
    project_display_name: str = ""
    project_root_path: str = ""
    project_custom_name: str | None = None
    project_custom_icon_revision: str | None = None
    workspace_directory: str | None = None
    worktree_slug: str | None = None
    project_kind: str = ""
    workspace_kind: str = ""
    name: str = ""
    title: str | None = None
    pinned_at: str | None = None
    labels: tuple[str, ...] | None = None
    internal: bool | None = None
    background: bool | None = None
    archiving_at: str | None = None
    status: str = ""
    status_entered_at: str | None = None
    activity_at: str | None = None
    diff_stat: DiffStat | None = None
    scripts: tuple[WorkspaceScript, ...] = ()
    git_runtime: GitRuntime | None = None
    github_runtime: GithubRuntime | None = None
    forge: str | None = None
    project: ProjectPlacement | None = None
    sync_seq: int | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)

    @property
    def directory(self) -> str:
        """The workspace's directory (``workspaceDirectory``, else the project root)."""
        return self.workspace_directory or self.project_root_path


@attrs.frozen
class WorkspaceProjectDescriptor:
    """A project as listed by ``project.list`` or in ``emptyProjects`` (protocol.md 8.1)."""

    project_id: str
    project_display_name: str = ""
    project_root_path: str = ""
    project_kind: str = ""
    project_key: str | None = None
    project_custom_name: str | None = None
    project_custom_icon_revision: str | None = None
    project_icon_revision: str | None = None
    sync_seq: int | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)
