"""attrs models of ``workspace.label.list.response``: the workspace label catalog (newer
daemons with ``features.workspaceLabels``).

A catalog entry is a label name and one of the daemon's palette colours; the reply may also
carry a ``sync`` cursor (generation, head sequence, removals) used by live catalog
subscriptions. Everything is read leniently: an entry without a name is skipped and reported,
unknown fields stay in ``extra_fields``, the whole reply in :attr:`WorkspaceLabelCatalog.raw`.
Pure data: no thread runs code here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import attrs

from daemon_client.protocol.lenient import structure_each, structure_optional

__all__ = ["WorkspaceLabel", "WorkspaceLabelCatalog", "WorkspaceLabelSync", "parse_label_catalog"]


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
