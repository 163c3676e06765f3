"""Creating workspaces, their titles, worktree calls and workspace-scoped agents (protocol.md 12.5).

Hosts with ``features.workspaceMultiplicity`` (Paseo 0.1.97, the release that allowed several
workspaces per directory, and workspace titles) get ``workspace.create.request`` and
``workspace.title.set.request``. Older hosts (0.1.65) get ``create_paseo_worktree_request``
for a worktree; a plain directory there can only be *opened* (``workspaces.open``), never
created afresh, so it raises ``UnsupportedByHost`` instead of silently reusing a workspace.
0.1.65 refuses to archive a worktree workspace with ``archive_workspace_request``: it is
archived with ``paseo_worktree_archive_request``. Everything runs on the caller's thread and
blocks with the request family's timeout.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from daemon_client.errors import ProtocolError, check_reply
from daemon_client.host_gates import require_feature
from daemon_client.protocol.agent_settings import reply_fields
from daemon_client.protocol.lenient import structure, structure_each
from daemon_client.protocol.models import ServerInfo
from daemon_client.protocol.workspaces import WorkspaceDescriptor
from daemon_client.protocol.worktrees import Worktree, WorktreeArchive, WorktreeInfo, create_message

if TYPE_CHECKING:
    from daemon_client.agent_create import AgentConfig
    from daemon_client.agent_handle import AgentHandle
    from daemon_client.agents import AgentsNamespace
    from daemon_client.runtime.context import ClientContext
    from daemon_client.workspaces import WorkspaceHandle

MULTIPLICITY = "workspaceMultiplicity"
MULTIPLICITY_VERSION = "0.1.97"
WORKTREE_REFUSAL = "Use worktree archive for Paseo worktrees"
"""What 0.1.65 answers ``archive_workspace_request`` for a worktree workspace (transcript 17 L19)."""


def newest_workspaces(info: ServerInfo | None) -> bool:
    """Whether the host has the newest workspace requests (create, titles, worktree scope)."""
    return info is not None and info.feature(MULTIPLICITY)


def create_workspace(
    context: ClientContext,
    cwd: str,
    worktree: Worktree | None,
    *,
    title: str | None,
    first_prompt: str | None,
    timeout: float | None,
) -> tuple[WorkspaceDescriptor, str | None]:
    """Create a workspace; its descriptor and the ID of its setup terminal (if any)."""
    if not isinstance(cwd, str) or not cwd.strip():
        raise ValueError("cwd must be a non-empty path")
    if worktree is not None and not isinstance(worktree, Worktree):
        raise TypeError(f"worktree must be a Worktree or None, not {type(worktree).__name__}")
    if title is not None and (not isinstance(title, str) or not title.strip()):
        raise ValueError("title must be a non-blank string or None")
    info = context.server_info
    newest = newest_workspaces(info)
    if not newest and (worktree is None or title is not None):
        what = "create a fresh workspace for a directory" if worktree is None else "give a new workspace a title"
        hint = " (client.workspaces.open(cwd) opens the directory's existing workspace)" if worktree is None else ""
        require_feature(info, MULTIPLICITY, what + hint, MULTIPLICITY_VERSION)
    message = create_message(cwd, worktree, title.strip() if title else None, newest=newest, first_prompt=first_prompt)
    payload = context.request(message, timeout=timeout)
    request_type = str(message["type"])
    check_reply(payload, request_type, required_field="workspace", missing="the daemon created no workspace")
    workspace = payload["workspace"]
    if not isinstance(workspace, Mapping):
        raise ProtocolError(f"{request_type} answered with an unreadable workspace: {workspace!r:.200}")
    setup = payload.get("setupTerminalId")
    return structure(dict(workspace), WorkspaceDescriptor), setup if isinstance(setup, str) else None


def set_title(context: ClientContext, workspace_id: str, title: str | None, timeout: float | None) -> str | None:
    """Set or clear (``None``) a workspace's user title; returns the title the daemon kept."""
    require_feature(context.server_info, MULTIPLICITY, "set workspace titles", MULTIPLICITY_VERSION)
    if title is not None and not isinstance(title, str):
        raise ValueError(f"title must be a string or None, not {type(title).__name__}")
    wire = (title.strip() or None) if title is not None else None
    message = {"type": "workspace.title.set.request", "workspaceId": workspace_id, "title": wire}
    payload = context.request(message, timeout=timeout)
    check_reply(payload, "workspace.title.set.request", accepted_field="accepted")
    kept = payload.get("title")
    return kept if isinstance(kept, str) else None


def list_worktrees(
    context: ClientContext, cwd: str | None, repo_root: str | None, timeout: float | None
) -> tuple[WorktreeInfo, ...]:
    """The Paseo worktrees of a repository (``paseo_worktree_list_request``)."""
    if cwd is None and repo_root is None:
        raise ValueError("give cwd= (any path in the repository) or repo_root=")
    message: dict[str, Any] = {"type": "paseo_worktree_list_request"}
    if cwd is not None:
        message["cwd"] = cwd
    if repo_root is not None:
        message["repoRoot"] = repo_root
    payload = check_reply(context.request(message, timeout=timeout), "paseo_worktree_list_request")
    worktrees = payload.get("worktrees")
    return structure_each(worktrees if isinstance(worktrees, list) else None, WorktreeInfo, "worktrees")


def archive_worktree(
    context: ClientContext,
    worktree_path: str | None,
    repo_root: str | None,
    branch_name: str | None,
    timeout: float | None,
) -> WorktreeArchive:
    """Archive a Paseo worktree: its agents are archived, its terminals killed, its directory
    removed (``paseo_worktree_archive_request``)."""
    if worktree_path is None and branch_name is None:
        raise ValueError("give worktree_path= or branch_name= (with repo_root=)")
    message: dict[str, Any] = {"type": "paseo_worktree_archive_request"}
    for field, value in (("worktreePath", worktree_path), ("repoRoot", repo_root), ("branchName", branch_name)):
        if value is not None:
            message[field] = value
    payload = context.request(message, timeout=timeout)
    check_reply(payload, "paseo_worktree_archive_request", accepted_field="success")
    return structure(reply_fields(payload), WorktreeArchive)


class WorkspaceAgents:
    """``workspace.agents``: agents created in one workspace."""

    def __init__(self, workspace: WorkspaceHandle, agents: Callable[[], AgentsNamespace]) -> None:
        self._workspace = workspace
        self._agents = agents

    def create(
        self,
        config: AgentConfig,
        *,
        prompt: str | None = None,
        title: str | None = None,
        labels: Mapping[str, str] | None = None,
        images: Sequence[Mapping[str, str]] | None = None,
        client_message_id: str | None = None,
        idempotency_key: str | None = None,
        timeout: float | None = None,
    ) -> AgentHandle:
        """``client.agents.create`` with the workspace's ID and directory (the workspace is read
        first when this handle has no snapshot; ``ValueError`` if it has no directory)."""
        snapshot = self._workspace.current() or self._workspace.refresh(timeout=timeout)
        directory = snapshot.directory if snapshot is not None else None
        if not directory:
            raise ValueError(f"workspace {self._workspace.id} has no available directory")
        return self._agents().create(
            config,
            cwd=directory,
            prompt=prompt,
            title=title,
            labels=labels,
            workspace_id=self._workspace.id,
            images=images,
            client_message_id=client_message_id,
            idempotency_key=idempotency_key,
            timeout=timeout,
        )
