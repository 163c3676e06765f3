"""Workspace requests (protocol.md 8, 12.5): the directory, opening and archiving, creation,
titles, Paseo worktrees, the label catalog and label assignments.

Declarations only (see :mod:`daemon_client.protocol.requests.spec`); read from any thread.
"""

from __future__ import annotations

from daemon_client.protocol.requests.spec import NEWER_HOSTS, FeatureGate, RequestSpec, TimeoutClass

_F = "workspaces"

FETCH_WORKSPACES = RequestSpec(
    "fetch_workspaces_request", _F, timeout=TimeoutClass.READ, api="client.workspaces.list()"
)
OPEN_PROJECT = RequestSpec(
    "open_project_request", _F, timeout=TimeoutClass.READ, required=("cwd",), api="client.workspaces.open()"
)
ARCHIVE = RequestSpec(
    "archive_workspace_request", _F, timeout=TimeoutClass.SLOW_READ, required=("workspaceId",),
    api="client.workspaces.archive()",
)  # fmt: skip
CREATE = RequestSpec(
    "workspace.create.request", _F, timeout=TimeoutClass.LONG_WORK, required=("source",),
    feature=FeatureGate("workspaceMultiplicity", "create workspaces", "0.1.97"), api="client.workspaces.create()",
)  # fmt: skip
"""0.1.65 answers ``unknown_schema`` (transcript 18 L5); hosts reporting ``workspaceMultiplicity`` have it."""
SET_TITLE = RequestSpec(
    "workspace.title.set.request", _F, timeout=TimeoutClass.READ, required=("workspaceId", "title"),
    feature=FeatureGate("workspaceMultiplicity", "set workspace titles", "0.1.97"), api="client.workspaces.set_title()",
)  # fmt: skip
CREATE_WORKTREE = RequestSpec(
    "create_paseo_worktree_request", _F, timeout=TimeoutClass.LONG_WORK, required=("cwd",),
    api="client.workspaces.create()",
)  # fmt: skip
ARCHIVE_WORKTREE = RequestSpec(
    "paseo_worktree_archive_request", _F, timeout=TimeoutClass.LONG_WORK, api="client.workspaces.archive_worktree()"
)
LIST_WORKTREES = RequestSpec(
    "paseo_worktree_list_request", _F, timeout=TimeoutClass.SLOW_READ, api="client.workspaces.worktrees()"
)
LIST_LABELS = RequestSpec(
    "workspace.label.list.request", _F, timeout=TimeoutClass.READ,
    parse="daemon_client.protocol.workspace_labels:parse_label_catalog",
    feature=FeatureGate("workspaceLabels", "list workspace labels", "0.5.0"),
    hosts=NEWER_HOSTS, api="client.workspaces.labels()",
)  # fmt: skip
SET_LABEL = RequestSpec(
    "workspace.label.assignment.set.request", _F, timeout=TimeoutClass.READ,
    required=("workspaceId", "label", "assigned"),
    parse="daemon_client.protocol.workspace_labels:parse_label_assignment",
    feature=FeatureGate("workspaceLabels", "assign workspace labels", "0.5.0"),
    hosts=NEWER_HOSTS, api="workspace.set_label() / remove_label()",
)  # fmt: skip

REQUESTS = (
    FETCH_WORKSPACES, OPEN_PROJECT, ARCHIVE, CREATE, SET_TITLE, CREATE_WORKTREE, ARCHIVE_WORKTREE, LIST_WORKTREES,
    LIST_LABELS, SET_LABEL,
)  # fmt: skip
