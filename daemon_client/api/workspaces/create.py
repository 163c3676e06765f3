"""Creating workspaces (protocol.md 12.5), and which hosts have the newest workspace requests.

Hosts with ``features.workspaceMultiplicity`` (Paseo 0.1.97, the release that allowed several
workspaces per directory, and workspace titles) get ``workspace.create.request``. Older hosts
(0.1.65) get ``create_paseo_worktree_request`` for a worktree; a plain directory there can only
be *opened* (``workspaces.open``), never created afresh, so it raises ``UnsupportedByHost``
instead of silently reusing a workspace. Runs on the caller's thread and blocks with the request
family's timeout.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from daemon_client.api.common.feature_gates import require_feature
from daemon_client.errors import ProtocolError, check_reply
from daemon_client.protocol.lenient import structure
from daemon_client.protocol.models import ServerInfo
from daemon_client.protocol.workspaces import WorkspaceDescriptor
from daemon_client.protocol.worktrees import Worktree, create_message

if TYPE_CHECKING:
    from daemon_client.runtime.context import ClientContext

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
