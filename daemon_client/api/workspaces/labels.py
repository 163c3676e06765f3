"""Assigning labels to workspaces and removing them (``workspace.label.assignment.set.request``,
hosts with ``features.workspaceLabels``).

Runs on the caller's thread and blocks with the request family's timeout; the host is checked
and the label validated before anything is sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from daemon_client.protocol.requests import workspaces as workspaces_requests
from daemon_client.protocol.workspace_labels import WORKSPACE_LABEL_COLORS, WorkspaceLabel, WorkspaceLabelAssignment

if TYPE_CHECKING:
    from daemon_client.runtime.context import ClientContext

LabelArg = str | WorkspaceLabel
"""A label by name, or a catalog entry (``client.workspaces.labels()``) with its colour."""


def label_definition(label: LabelArg, color: str | None) -> dict[str, str]:
    """The wire ``label`` (``{name, color}``): the name with its whitespace collapsed as the
    daemon does, and ``color`` (else the entry's, else the palette's first); ``ValueError``
    for an empty name or colour."""
    if isinstance(label, WorkspaceLabel):
        name, own = label.name, label.color
    elif isinstance(label, str):
        name, own = label, ""
    else:
        raise ValueError(f"label must be a name or a WorkspaceLabel, not {type(label).__name__}")
    name = " ".join(name.split())
    if not name:
        raise ValueError("a workspace label needs a non-empty name")
    chosen = color if color is not None else (own or WORKSPACE_LABEL_COLORS[0])
    if not isinstance(chosen, str) or not chosen.strip():
        raise ValueError(f"color must be a colour name such as {WORKSPACE_LABEL_COLORS[1]!r}, got {chosen!r}")
    return {"name": name, "color": chosen.strip()}


def set_label(
    context: ClientContext,
    workspace_id: str,
    label: LabelArg,
    *,
    assigned: bool,
    color: str | None,
    timeout: float | None,
) -> WorkspaceLabelAssignment:
    """Assign (``assigned=True``) or remove a label; the label as the catalog has it and the
    workspace's labels afterwards. ``UnsupportedByHost`` before sending on hosts without
    ``features.workspaceLabels``; a refusal is an ``RpcError``."""
    context.check_host(workspaces_requests.SET_LABEL)
    if not isinstance(workspace_id, str) or not workspace_id:
        raise ValueError("a workspace ID is needed")
    fields = {"workspaceId": workspace_id, "label": label_definition(label, color), "assigned": bool(assigned)}
    result: WorkspaceLabelAssignment = context.call(workspaces_requests.SET_LABEL, fields, timeout=timeout)
    return result
