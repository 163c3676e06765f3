"""Workspace titles (``workspace.title.set.request``, hosts with ``workspaceMultiplicity``).

Runs on the caller's thread and blocks with the request family's timeout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from daemon_client.errors import check_reply
from daemon_client.protocol.requests import workspaces as workspaces_requests

if TYPE_CHECKING:
    from daemon_client.runtime.context import ClientContext


def set_title(context: ClientContext, workspace_id: str, title: str | None, timeout: float | None) -> str | None:
    """Set or clear (``None``) a workspace's user title; returns the title the daemon kept."""
    context.check_host(workspaces_requests.SET_TITLE)
    if title is not None and not isinstance(title, str):
        raise ValueError(f"title must be a string or None, not {type(title).__name__}")
    wire = (title.strip() or None) if title is not None else None
    message = {"type": workspaces_requests.SET_TITLE.type, "workspaceId": workspace_id, "title": wire}
    payload = context.request(message, timeout=timeout)
    check_reply(payload, workspaces_requests.SET_TITLE.type, accepted_field="accepted")
    kept = payload.get("title")
    return kept if isinstance(kept, str) else None
