"""Label assignments in the fake daemon (``fake.workspace_labels``): the handler of
``workspace.label.assignment.set.request`` on the hosts its declaration names (capable and
selective hosts with ``features.workspaceLabels``, which only capable fakes report by default);
elsewhere the type is unknown (``unknown_schema``).

A label is looked up in the catalog (:attr:`FakeWorktrees.labels`) by its name with whitespace
collapsed and case ignored: an existing label keeps its catalog name and colour, a new one is
added to the catalog when assigned. A colour outside the palette is refused as the daemon's
schema refuses it (``rpc_error`` ``invalid_message``), an unknown or archiving workspace with
``rpc_error`` ``handler_error``. The workspace's ``labels`` change in ``fake.workspaces``, so
observations of the directory get its ``workspace_update`` upsert before the reply. Runs on
connection reader threads; the catalog lock is never held while sending.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from daemon_client.protocol.requests import workspaces as workspace_requests
from daemon_client.protocol.workspace_labels import WORKSPACE_LABEL_COLORS

if TYPE_CHECKING:
    from daemon_client.testing.fake.engine.handlers import HandlerRegistry, RequestContext
    from daemon_client.testing.fake.ports import DaemonPort
    from daemon_client.testing.fake.workspace_create import FakeWorktrees

__all__ = ["FakeWorkspaceLabels"]


def _key(name: str) -> str:
    return " ".join(name.split()).lower()


class FakeWorkspaceLabels:
    """``fake.workspace_labels``: see the module docstring."""

    def __init__(self, daemon: DaemonPort, catalog: FakeWorktrees) -> None:
        self.daemon = daemon
        self.catalog = catalog
        self.assignments: list[dict[str, Any]] = []
        """Every assignment request handled, in order: ``{workspaceId, label, assigned}``."""

    def install(self, registry: HandlerRegistry) -> None:
        config = self.daemon.core.config
        registry.serve(
            workspace_requests.SET_LABEL, self._handle, host_kind=config.host_kind, features=config.effective_features
        )

    def _handle(self, ctx: RequestContext) -> None:
        message = ctx.message
        workspace_id, label, assigned = message["workspaceId"], message["label"], message["assigned"]
        name = label.get("name") if isinstance(label, Mapping) else None
        color = label.get("color") if isinstance(label, Mapping) else None
        if not isinstance(name, str) or color not in WORKSPACE_LABEL_COLORS or not isinstance(assigned, bool):
            ctx.rpc_error("Invalid workspace.label.assignment.set.request", "invalid_message")
            return
        workspace = self.daemon.workspaces.get(workspace_id) if isinstance(workspace_id, str) else None
        if workspace is None or workspace.get("archivingAt"):
            ctx.rpc_error("Workspace label target unavailable or access denied", "handler_error")
            return
        name = " ".join(name.split())
        with self.catalog.lock:
            known = next((entry for entry in self.catalog.labels if _key(str(entry.get("name"))) == _key(name)), None)
            if known is None and assigned:
                known = {"name": name, "color": color}
                self.catalog.labels.append(known)
            definition = (
                {"name": known["name"], "color": known.get("color")} if known else {"name": name, "color": color}
            )
        self.assignments.append({"workspaceId": workspace_id, "label": definition, "assigned": assigned})
        labels = [str(entry) for entry in workspace.get("labels") or [] if isinstance(entry, str)]
        present = any(_key(entry) == _key(definition["name"]) for entry in labels)
        if assigned:
            kept = labels if present else [*labels, definition["name"]]
        else:
            kept = [entry for entry in labels if _key(entry) != _key(definition["name"])]
        if kept != labels or "labels" not in workspace:
            self.daemon.workspaces.upsert(workspace_id, labels=kept)
        ctx.reply({"label": definition, "workspaceLabels": kept})
