"""Paseo worktree calls: list a repository's worktrees and archive one (protocol.md 12.5).

0.1.65 refuses to archive a worktree workspace with ``archive_workspace_request``: it is archived
with ``paseo_worktree_archive_request`` (``WORKTREE_REFUSAL`` is its answer). Runs on the
caller's thread and blocks with the request family's timeout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from daemon_client.errors import check_reply
from daemon_client.protocol.agent_settings import reply_fields
from daemon_client.protocol.lenient import structure, structure_each
from daemon_client.protocol.requests import workspaces as workspaces_requests
from daemon_client.protocol.worktrees import WorktreeArchive, WorktreeInfo

if TYPE_CHECKING:
    from daemon_client.runtime.context import ClientContext

WORKTREE_REFUSAL = "Use worktree archive for Paseo worktrees"
"""What 0.1.65 answers ``archive_workspace_request`` for a worktree workspace (transcript 17 L19)."""


def list_worktrees(
    context: ClientContext, cwd: str | None, repo_root: str | None, timeout: float | None
) -> tuple[WorktreeInfo, ...]:
    """The Paseo worktrees of a repository (``paseo_worktree_list_request``)."""
    if cwd is None and repo_root is None:
        raise ValueError("give cwd= (any path in the repository) or repo_root=")
    fields: dict[str, Any] = {}
    if cwd is not None:
        fields["cwd"] = cwd
    if repo_root is not None:
        fields["repoRoot"] = repo_root
    payload = context.call(workspaces_requests.LIST_WORKTREES, fields, timeout)
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
    message: dict[str, Any] = {"type": workspaces_requests.ARCHIVE_WORKTREE.type}
    for field, value in (("worktreePath", worktree_path), ("repoRoot", repo_root), ("branchName", branch_name)):
        if value is not None:
            message[field] = value
    payload = context.request(message, timeout=timeout)
    check_reply(payload, workspaces_requests.ARCHIVE_WORKTREE.type, accepted_field="success")
    return structure(reply_fields(payload), WorktreeArchive)
