"""attrs models of ``workspace.label.list.response`` (the workspace label catalog) and of
``workspace.label.assignment.set.response`` (a label assigned to or removed from a workspace),
on newer daemons with ``features.workspaceLabels``.

A catalog entry is a label name and one of the daemon's palette colours
(:data:`WORKSPACE_LABEL_COLORS`); the reply may also carry a ``sync`` cursor (generation, head
sequence, removals) used by live catalog subscriptions. Everything is read leniently: an entry
without a name is skipped and reported, unknown fields stay in ``extra_fields``, the whole reply
in ``raw``. Pure data: no thread runs code here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import attrs

from daemon_client.protocol.lenient import structure_each, structure_optional

__all__ = [
    "WORKSPACE_LABEL_COLORS",
    "WorkspaceLabel",
    "WorkspaceLabelAssignment",
    "WorkspaceLabelCatalog",
    "WorkspaceLabelSync",
    "parse_label_assignment",
    "parse_label_catalog",
]

WORKSPACE_LABEL_COLORS: tuple[str, ...] = (
    "violet", "sky", "emerald", "orange", "pink", "indigo", "teal", "red", "amber", "blue",
)  # fmt: skip
"""The daemon's label palette, in its order. A label new to the catalog takes the colour given
when it is assigned (the first one, ``"violet"``, unless told otherwise); a label already in the
catalog keeps its own."""


@attrs.frozen
class WorkspaceLabel:
    """One label of the catalog: its name and colour (``"violet"``, ``"sky"``, ...)."""

    name: str
    color: str = ""
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class WorkspaceLabelSync:
    """Where the catalog stands: ``mode`` (``"snapshot"`` or ``"changes"``), its generation,
    the last sequence number and the labels removed since the cursor a client sent."""

    mode: str = ""
    generation: str | None = None
    head_seq: int | None = None
    removals: tuple[Any, ...] = ()
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class WorkspaceLabelCatalog:
    """The workspace label catalog; iterate it for its labels."""

    labels: tuple[WorkspaceLabel, ...] = ()
    sync: WorkspaceLabelSync | None = None
    raw: Mapping[str, Any] = attrs.field(factory=dict, repr=False, eq=False)

    def __iter__(self) -> Any:
        return iter(self.labels)

    def __len__(self) -> int:
        return len(self.labels)

    def names(self) -> tuple[str, ...]:
        """The label names, in catalog order."""
        return tuple(label.name for label in self.labels)


def parse_label_catalog(payload: Mapping[str, Any]) -> WorkspaceLabelCatalog:
    """A ``workspace.label.list.response`` payload → :class:`WorkspaceLabelCatalog`."""
    labels = payload.get("labels")
    return WorkspaceLabelCatalog(
        labels=structure_each(labels if isinstance(labels, list) else None, WorkspaceLabel, "labels"),
        sync=structure_optional(payload.get("sync"), WorkspaceLabelSync, "sync"),
        raw=copy.deepcopy(dict(payload)),
    )


@attrs.frozen
class WorkspaceLabelAssignment:
    """What a label assignment or removal left: the label as the catalog has it (an existing
    label keeps its catalog name and colour) and every label of the workspace afterwards."""

    label: WorkspaceLabel
    labels: tuple[str, ...] = ()
    raw: Mapping[str, Any] = attrs.field(factory=dict, repr=False, eq=False)


def parse_label_assignment(payload: Mapping[str, Any]) -> WorkspaceLabelAssignment:
    """A ``workspace.label.assignment.set.response`` payload → :class:`WorkspaceLabelAssignment`
    (an unreadable ``label`` reads as an empty name, names that are not strings are skipped)."""
    label = structure_optional(payload.get("label"), WorkspaceLabel, "label")
    names = payload.get("workspaceLabels")
    return WorkspaceLabelAssignment(
        label=label if label is not None else WorkspaceLabel(name=""),
        labels=tuple(name for name in names if isinstance(name, str)) if isinstance(names, list) else (),
        raw=copy.deepcopy(dict(payload)),
    )
