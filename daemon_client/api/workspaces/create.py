"""Creating workspaces (protocol.md 12.5), and which hosts have the newest workspace requests.

Hosts with ``features.workspaceMultiplicity`` (Paseo 0.1.97, the release that allowed several
workspaces per directory, and workspace titles) get ``workspace.create.request``. Older hosts
(0.1.65) get ``create_paseo_worktree_request`` for a worktree; a plain directory there can only
be *opened* (``workspaces.open``), never created afresh, so it raises ``UnsupportedByHost``
instead of silently reusing a workspace. A :class:`~daemon_client.protocol.worktrees.WorktreeCheckout` of
an existing branch or a GitHub pull request works on both; a change request of another forge
needs ``checkoutSource`` (newest hosts). The project ID of the directory is sent on newest hosts
when given or when a workspace this client already holds tells it. Runs on the caller's thread
and blocks with the request family's timeout.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from daemon_client.api.common.feature_gates import require_feature
from daemon_client.errors import ProtocolError, check_reply
from daemon_client.protocol.attachments import Attachment, attachments_to_wire
from daemon_client.protocol.lenient import structure
from daemon_client.protocol.models import ServerInfo
from daemon_client.protocol.workspaces import WorkspaceDescriptor
from daemon_client.protocol.worktrees import Worktree, WorktreeCheckout, create_message

if TYPE_CHECKING:
    from daemon_client.runtime.context import ClientContext

MULTIPLICITY = "workspaceMultiplicity"
MULTIPLICITY_VERSION = "0.1.97"
CHECKOUT_SOURCE_VERSION = "0.1.106"
"""The first Paseo version whose creation requests carry ``checkoutSource`` (any forge's change
request); 0.1.65 checks out GitHub pull requests only (``githubPrNumber``)."""
WORKTREE_REFUSAL = "Use worktree archive for Paseo worktrees"
"""What 0.1.65 answers ``archive_workspace_request`` for a worktree workspace (transcript 17 L19)."""


def newest_workspaces(info: ServerInfo | None) -> bool:
    """Whether the host has the newest workspace requests (create, titles, worktree scope)."""
    return info is not None and info.feature(MULTIPLICITY)


def _inside(path: str, root: str) -> bool:
    path, root = path.rstrip("/") or "/", root.rstrip("/") or "/"
    return path == root or path.startswith(root if root.endswith("/") else root + "/")


def known_project_id(known: Iterable[WorkspaceDescriptor], path: str, *, worktree: bool) -> str | None:
    """The project ID of ``path`` from workspaces this client already holds (no request): a
    workspace whose directory or project root is ``path``, or for a worktree, whose project
    root contains ``path`` (the innermost such root). ``None`` when none does, or when the
    matching workspaces name different projects."""
    found: dict[str, set[str]] = {}  # the matched root -> project IDs
    for workspace in known:
        if not workspace.project_id:
            continue
        if worktree:
            root = workspace.project_root_path
            if root and _inside(path, root):
                found.setdefault(root.rstrip("/"), set()).add(workspace.project_id)
            continue
        for place in (workspace.project_root_path, workspace.workspace_directory):
            if place and place.rstrip("/") == path.rstrip("/"):
                found.setdefault("", set()).add(workspace.project_id)
    if not found:
        return None
    projects = found[max(found, key=len)]
    return next(iter(projects)) if len(projects) == 1 else None


def _check_options(
    cwd: str, worktree: object, title: str | None, project_id: str | None, attachments: Sequence[Attachment] | None
) -> list[dict[str, Any]] | None:
    if not isinstance(cwd, str) or not cwd.strip():
        raise ValueError("cwd must be a non-empty path")
    if worktree is not None and not isinstance(worktree, (Worktree, WorktreeCheckout)):
        raise TypeError(f"worktree must be a Worktree, a WorktreeCheckout or None, not {type(worktree).__name__}")
    if title is not None and (not isinstance(title, str) or not title.strip()):
        raise ValueError("title must be a non-blank string or None")
    if project_id is not None and (not isinstance(project_id, str) or not project_id.strip()):
        raise ValueError("project_id must be a non-empty string or None")
    return attachments_to_wire(attachments) if attachments is not None else None


def create_workspace(
    context: ClientContext,
    cwd: str,
    worktree: Worktree | WorktreeCheckout | None,
    *,
    title: str | None,
    first_prompt: str | None,
    timeout: float | None,
    attachments: Sequence[Attachment] | None = None,
    project_id: str | None = None,
    known: Callable[[], Iterable[WorkspaceDescriptor]] | None = None,
) -> tuple[WorkspaceDescriptor, str | None]:
    """Create a workspace; its descriptor and the ID of its setup terminal (if any).

    ``project_id`` (newest hosts only) is sent as ``source.projectId``; without it, the ID of
    the project ``cwd`` belongs to is taken from the workspaces ``known()`` yields (what this
    client already holds), so no request is added."""
    wire_attachments = _check_options(cwd, worktree, title, project_id, attachments)
    info = context.server_info
    newest = newest_workspaces(info)
    if not newest and (worktree is None or title is not None):
        what = "create a fresh workspace for a directory" if worktree is None else "give a new workspace a title"
        hint = " (client.workspaces.open(cwd) opens the directory's existing workspace)" if worktree is None else ""
        require_feature(info, MULTIPLICITY, what + hint, MULTIPLICITY_VERSION)
    other_forge = isinstance(worktree, WorktreeCheckout) and worktree.number is not None and worktree.forge != "github"
    if not newest and other_forge:
        assert isinstance(worktree, WorktreeCheckout)
        require_feature(info, MULTIPLICITY, f"check out a {worktree.forge} change request", CHECKOUT_SOURCE_VERSION)
    if newest and project_id is None and known is not None:
        project_id = known_project_id(known(), cwd, worktree=worktree is not None)
    message = create_message(
        cwd, worktree, title.strip() if title else None, newest=newest, first_prompt=first_prompt,
        attachments=wire_attachments, project_id=project_id if newest else None,
    )  # fmt: skip
    payload = context.request(message, timeout=timeout)
    request_type = str(message["type"])
    check_reply(payload, request_type, required_field="workspace", missing="the daemon created no workspace")
    workspace = payload["workspace"]
    if not isinstance(workspace, Mapping):
        raise ProtocolError(f"{request_type} answered with an unreadable workspace: {workspace!r:.200}")
    setup = payload.get("setupTerminalId")
    return structure(dict(workspace), WorkspaceDescriptor), setup if isinstance(setup, str) else None
