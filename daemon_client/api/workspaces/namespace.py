"""``client.workspaces``: the workspace directory, its observations, and workspace handles.

Same threading as :mod:`daemon_client.api.agents.namespace`: methods block the caller's thread with a
timeout; handle state and listeners are updated on the callback thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from daemon_client.api.common.directory_namespace import DirectoryNamespace, HandleUpdate, SubscribeArg
from daemon_client.api.common.local_handle import LocalHandle
from daemon_client.api.terminals.namespace import WorkspaceTerminals
from daemon_client.api.workspaces.create import create_workspace, newest_workspaces
from daemon_client.api.workspaces.labels import LabelArg, set_label
from daemon_client.api.workspaces.titles import set_title
from daemon_client.api.workspaces.workspace_agents import WorkspaceAgents
from daemon_client.api.workspaces.worktrees import WORKTREE_REFUSAL, archive_worktree, list_worktrees
from daemon_client.errors import ProtocolError, check_reply, error_in_reply
from daemon_client.protocol.attachments import Attachment
from daemon_client.protocol.codec import structure
from daemon_client.protocol.directory import DirectoryMessage, Page, SortLike, sort_to_wire
from daemon_client.protocol.requests import workspaces as workspaces_requests
from daemon_client.protocol.workspace_directory import (
    WORKSPACE_SORT_KEYS,
    WorkspaceFilter,
    WorkspaceListResult,
    WorkspaceUpdate,
    parse_workspace_list,
    parse_workspace_update,
)
from daemon_client.protocol.workspace_labels import WorkspaceLabelAssignment, WorkspaceLabelCatalog
from daemon_client.protocol.workspaces import WorkspaceDescriptor
from daemon_client.protocol.worktrees import Worktree, WorktreeArchive, WorktreeCheckout, WorktreeInfo
from daemon_client.runtime.context import ClientContext
from daemon_client.subscriptions.directory import DirectoryFamily, DirectoryManager, DirectoryObservation

if TYPE_CHECKING:
    from daemon_client.api.agents.namespace import AgentsNamespace

if TYPE_CHECKING:
    from daemon_client.api.terminals.namespace import TerminalsNamespace

WorkspaceMessage = DirectoryMessage[WorkspaceUpdate]
WorkspaceObservation = DirectoryObservation[WorkspaceListResult]


def _apply(view: dict[str, WorkspaceDescriptor], message: WorkspaceMessage) -> None:
    update = message.payload
    if update.kind == "upsert" and update.workspace is not None:
        view[update.workspace_id] = update.workspace
    elif update.kind == "remove":
        view.pop(update.workspace_id, None)


WORKSPACES = DirectoryFamily[WorkspaceListResult, WorkspaceMessage, WorkspaceDescriptor](
    name="workspaces",
    update_type="workspace_update",
    parse_list=parse_workspace_list,
    parse_update=parse_workspace_update,
    entries=lambda result: result.entries,
    entry_key=lambda workspace: workspace.id,
    apply_update=_apply,
    with_entries=lambda base, entries, sid, obs: attrs.evolve(
        base, entries=entries, subscription_id=sid, subscription=obs
    ),
)


class WorkspaceHandle(LocalHandle[WorkspaceDescriptor]):
    """A local reference to one workspace (``client.workspaces.ref(id)``); fetches nothing.

    Use the workspace's ``id`` (never its path) for every later call: on current daemons
    several workspaces may share one directory.
    """

    def __init__(
        self, workspaces: WorkspacesNamespace, workspace_id: str, snapshot: WorkspaceDescriptor | None = None
    ) -> None:
        super().__init__(workspace_id, snapshot)
        self._workspaces = workspaces
        self.setup_terminal_id: str | None = None
        """The terminal running the workspace's setup commands, when ``create`` started one."""
        self.agents = WorkspaceAgents(self, workspaces._agents_namespace)
        """Agents in this workspace: ``workspace.agents.create(config, prompt=...)``."""

    @property
    def project_id(self) -> str | None:
        return self._snapshot.project_id if self._snapshot is not None else None

    @property
    def directory(self) -> str | None:
        return self._snapshot.directory if self._snapshot is not None else None

    @property
    def name(self) -> str | None:
        return self._snapshot.name if self._snapshot is not None else None

    @property
    def status(self) -> str | None:
        return self._snapshot.status if self._snapshot is not None else None

    def refresh(self, timeout: float | None = None) -> WorkspaceDescriptor | None:
        """Read this workspace from the daemon's directory; ``None`` if it is not listed."""
        found = self._workspaces.find(self.id, timeout=timeout)
        if found is not None:
            self.note_snapshot(found)
        return found

    def archive(self, timeout: float | None = None) -> str | None:
        """Archive this workspace; returns ``archivedAt`` (see ``client.workspaces.archive``)."""
        return self._workspaces.archive(self.id, timeout=timeout)

    def set_title(self, title: str | None, *, timeout: float | None = None) -> str | None:
        """Set the workspace's title, or clear it with ``None`` (the name then reverts to the
        branch or directory name); returns the title the daemon kept (15 s). Needs
        ``features.workspaceMultiplicity`` (Paseo 0.1.97): older hosts have no workspace titles
        and raise ``UnsupportedByHost``; ``accepted: false`` raises ``RpcError``."""
        return self._workspaces.set_title(self.id, title, timeout=timeout)

    def set_label(
        self, label: LabelArg, *, color: str | None = None, assigned: bool = True, timeout: float | None = None
    ) -> WorkspaceLabelAssignment:
        """Assign a label (a name, or a ``WorkspaceLabel`` of the catalog) to this workspace, or
        with ``assigned=False`` remove it; returns the label as the catalog has it and every
        label of the workspace afterwards (15 s), which ``current().labels`` then shows.

        A name new to the catalog is added with ``color`` (default: the palette's first,
        ``"violet"``); an existing label keeps its catalog colour. Observations of the
        directory receive the workspace's ``upsert``. Needs ``features.workspaceLabels``
        (Paseo 0.5.0; never on broadcast-only hosts): other hosts raise ``UnsupportedByHost``
        without sending; a refusal (unknown or archived workspace, a colour outside the
        palette) raises ``RpcError``."""
        result = self._workspaces.set_label(self.id, label, color=color, assigned=assigned, timeout=timeout)
        snapshot = self._snapshot
        if snapshot is not None:
            self.note_snapshot(attrs.evolve(snapshot, labels=result.labels))
        return result

    def remove_label(self, label: LabelArg, *, timeout: float | None = None) -> WorkspaceLabelAssignment:
        """Remove a label from this workspace (the catalog keeps it): ``set_label(label,
        assigned=False)``. Removing a label the workspace does not have changes nothing."""
        return self.set_label(label, assigned=False, timeout=timeout)

    @property
    def terminals(self) -> WorkspaceTerminals:
        """This workspace's terminals (``create``, ``list``, ``subscribe``); needs a host with
        ``features.workspaceTerminals``."""
        return self._workspaces.terminals_of(self)

    def __repr__(self) -> str:
        return f"<WorkspaceHandle {self.id} {self.status or 'unknown'}>"


class WorkspacesNamespace(
    DirectoryNamespace[WorkspaceListResult, WorkspaceMessage, WorkspaceDescriptor, WorkspaceHandle]
):
    """``client.workspaces``."""

    def __init__(
        self,
        context: ClientContext,
        manager: DirectoryManager[WorkspaceListResult, WorkspaceMessage, WorkspaceDescriptor],
        agents: Callable[[], AgentsNamespace] | None = None,
        terminals: Callable[[], TerminalsNamespace] | None = None,
    ) -> None:
        super().__init__(context, manager)
        self._agents = agents
        self._terminals = terminals

    def _agents_namespace(self) -> AgentsNamespace:
        """``client.agents``, for workspace-scoped agent creation (``workspace.agents``)."""
        if self._agents is None:
            raise RuntimeError("this workspaces namespace was built without client.agents")
        return self._agents()

    def terminals_of(self, workspace: WorkspaceHandle) -> WorkspaceTerminals:
        """The terminal calls of one workspace (``workspace.terminals``)."""
        if self._terminals is None:
            raise RuntimeError("this workspaces namespace was built without terminals")
        return WorkspaceTerminals(self._terminals(), workspace)

    def list(
        self,
        filter: WorkspaceFilter | None = None,
        sort: Sequence[SortLike] | None = None,
        page: Page | None = None,
        subscribe: SubscribeArg = False,
        *,
        include_background: bool | None = None,
        timeout: float | None = None,
        subscription_id: None = None,
    ) -> WorkspaceListResult:
        """Read a page of the workspace directory; with ``subscribe=True`` also observe it.

        Same contract as ``client.agents.list``: on older daemons the single workspace slot
        is shared, so independent filtered observations need an updated daemon.
        """
        message: dict[str, Any] = {"type": workspaces_requests.FETCH_WORKSPACES.type}
        if filter is not None:
            message["filter"] = filter.to_wire()
        wire_sort = sort_to_wire(sort, WORKSPACE_SORT_KEYS)
        if wire_sort is not None:
            message["sort"] = wire_sort
        return self._read(
            message,
            page=page,
            include_background=include_background,
            subscribe=subscribe,
            subscription_id=subscription_id,
            timeout=timeout,
        )

    def ref(self, workspace: str | WorkspaceDescriptor) -> WorkspaceHandle:
        """The handle of a workspace (one per ID and client); fetches nothing."""
        snapshot = workspace if isinstance(workspace, WorkspaceDescriptor) else None
        return self._ref(snapshot.id if snapshot is not None else str(workspace), snapshot)

    def _new_handle(
        self, item_id: str, known: WorkspaceDescriptor | None, snapshot: WorkspaceDescriptor | None
    ) -> WorkspaceHandle:
        return WorkspaceHandle(self, item_id, snapshot or known)

    def open(self, cwd: str, *, timeout: float | None = None) -> WorkspaceHandle:
        """Open (look up or create) the workspace of a directory; raises ``RpcError`` if it fails."""
        payload = self._context.request({"type": workspaces_requests.OPEN_PROJECT.type, "cwd": cwd}, timeout=timeout)
        check_reply(
            payload,
            workspaces_requests.OPEN_PROJECT.type,
            required_field="workspace",
            missing="the daemon opened no workspace",
        )
        workspace = payload["workspace"]
        if not isinstance(workspace, Mapping):
            raise ProtocolError(f"open_project_request answered with an unreadable workspace: {workspace!r:.200}")
        descriptor = structure(workspace, WorkspaceDescriptor)
        handle = self.ref(descriptor)
        handle.note_snapshot(descriptor)
        return handle

    def create(
        self,
        cwd: str,
        *,
        worktree: Worktree | WorktreeCheckout | None = None,
        title: str | None = None,
        first_prompt: str | None = None,
        attachments: Sequence[Attachment] | None = None,
        project_id: str | None = None,
        timeout: float | None = None,
    ) -> WorkspaceHandle:
        """Create a new workspace (unlike ``open``, never an existing one) backed by ``cwd``,
        or by a new Paseo-owned git worktree of the repository ``cwd`` is in: a new branch with
        ``worktree=dc.Worktree(branch=..., base=...)``, or a checkout of an existing branch or
        pull request with ``worktree=dc.WorktreeCheckout(branch=...)`` /
        ``dc.WorktreeCheckout(pull_request=42 or its URL)`` (120 s).

        Hosts with ``features.workspaceMultiplicity`` (Paseo 0.1.97) get
        ``workspace.create.request``. Older hosts (0.1.65) create worktrees with
        ``create_paseo_worktree_request``; they cannot create a fresh workspace for a plain
        directory, give one a title, or check out a change request of a forge other than
        GitHub, so those raise ``UnsupportedByHost`` before sending (``open(cwd)`` opens a
        directory's workspace there). ``first_prompt`` and ``attachments`` (uploaded files,
        images among them, texts, pull requests, issues: see
        :mod:`daemon_client.protocol.attachments`) are the first agent's context, which the
        daemon may use to name the worktree or branch. ``project_id`` is the project ``cwd``
        belongs to (newest hosts); when omitted it is taken, without a request, from the
        workspaces this client already holds (handles and live observations). The handle's
        ``setup_terminal_id`` names the terminal running the repository's setup commands, if
        any. Raises ``RpcError`` when the daemon reports an error (not a git repository, a
        branch that exists or does not, an unknown pull request ...).
        """
        descriptor, setup = create_workspace(
            self._context, cwd, worktree, title=title, first_prompt=first_prompt, timeout=timeout,
            attachments=attachments, project_id=project_id, known=self._known_workspaces,
        )  # fmt: skip
        handle = self.ref(descriptor)
        handle.note_snapshot(descriptor)
        handle.setup_terminal_id = setup
        return handle

    def _known_workspaces(self) -> tuple[WorkspaceDescriptor, ...]:
        """The workspaces this client holds without asking: its handles' snapshots and the
        entries of its live observations."""
        with self._handles_lock:
            handles = list(self._handles.values())
        known = tuple(snapshot for snapshot in (handle.current() for handle in handles) if snapshot is not None)
        return known + tuple(self._manager.entries())

    def labels(self, *, timeout: float | None = None) -> WorkspaceLabelCatalog:
        """The workspace label catalog: every label's name and colour
        (``workspace.label.list.request``, 15 s). Needs ``features.workspaceLabels`` (Paseo
        0.5.0; never on broadcast-only hosts): other hosts raise ``UnsupportedByHost`` without sending."""
        catalog: WorkspaceLabelCatalog = self._context.call(workspaces_requests.LIST_LABELS, timeout=timeout)
        return catalog

    def set_title(self, workspace_id: str, title: str | None, *, timeout: float | None = None) -> str | None:
        """Set (or with ``None`` clear) a workspace's title by ID; see ``WorkspaceHandle.set_title``."""
        return set_title(self._context, workspace_id, title, timeout)

    def set_label(
        self,
        workspace_id: str,
        label: LabelArg,
        *,
        color: str | None = None,
        assigned: bool = True,
        timeout: float | None = None,
    ) -> WorkspaceLabelAssignment:
        """Assign (or with ``assigned=False`` remove) a label of a workspace by ID; see
        ``WorkspaceHandle.set_label``."""
        return set_label(self._context, workspace_id, label, assigned=assigned, color=color, timeout=timeout)

    def remove_label(
        self, workspace_id: str, label: LabelArg, *, timeout: float | None = None
    ) -> WorkspaceLabelAssignment:
        """Remove a label from a workspace by ID; see ``WorkspaceHandle.remove_label``."""
        return set_label(self._context, workspace_id, label, assigned=False, color=None, timeout=timeout)

    def archive(self, workspace_id: str, *, timeout: float | None = None) -> str | None:
        """Archive a workspace by ID; returns ``archivedAt``; raises ``RpcError`` if it fails.

        On hosts without ``features.workspaceMultiplicity`` (0.1.65) a Paseo worktree workspace
        must be archived as a worktree: this is done with ``archive_worktree`` (its agents are
        archived and its directory removed) and ``None`` is returned.
        """
        legacy = not newest_workspaces(self._context.server_info)
        known = self.ref(workspace_id).current()
        if legacy and known is not None and known.workspace_kind == "worktree":
            self.archive_worktree(
                worktree_path=known.directory, repo_root=known.project_root_path or None, timeout=timeout
            )
            return None
        payload = self._context.request(
            {"type": workspaces_requests.ARCHIVE.type, "workspaceId": workspace_id}, timeout=timeout
        )
        error = error_in_reply(payload, workspaces_requests.ARCHIVE.type)
        if error is not None and legacy and error.message == WORKTREE_REFUSAL:
            self.archive_worktree(worktree_path=workspace_id, timeout=timeout)  # 0.1.65: the ID is the path
            return None
        if error is not None:
            raise error
        archived_at = payload.get("archivedAt")
        return archived_at if isinstance(archived_at, str) else None

    def worktrees(
        self, cwd: str | None = None, *, repo_root: str | None = None, timeout: float | None = None
    ) -> tuple[WorktreeInfo, ...]:
        """The Paseo worktrees of the repository ``cwd`` (any path in it) or ``repo_root`` is in
        (``paseo_worktree_list_request``, 30 s). The list may still show a worktree for a moment
        after it was archived."""
        return list_worktrees(self._context, cwd, repo_root, timeout)

    def archive_worktree(
        self,
        *,
        worktree_path: str | None = None,
        repo_root: str | None = None,
        branch_name: str | None = None,
        timeout: float | None = None,
    ) -> WorktreeArchive:
        """Archive a Paseo worktree by its path (or branch and repository): its agents are
        archived, its terminals killed and its directory removed (120 s). ``success: false`` or
        an error raises ``RpcError``."""
        return archive_worktree(self._context, worktree_path, repo_root, branch_name, timeout)

    def find(self, workspace_id: str, *, timeout: float | None = None) -> WorkspaceDescriptor | None:
        """Look one workspace up by ID in the directory (pages through the matching entries)."""
        cursor: str | None = None
        while True:
            page = self.list(
                filter=WorkspaceFilter(query=workspace_id), page=Page(limit=200, cursor=cursor), timeout=timeout
            )
            for entry in page.entries:
                if entry.id == workspace_id:
                    return entry
            cursor = page.page_info.next_cursor
            if not page.page_info.has_more or not cursor:
                return None

    def _note_entry(self, handle: WorkspaceHandle, entry: WorkspaceDescriptor) -> None:
        handle.note_snapshot(entry)

    def _interpret(self, message: WorkspaceMessage) -> HandleUpdate[WorkspaceMessage] | None:
        update = message.payload
        if update.kind == "upsert" and update.workspace is not None:
            return HandleUpdate(update.workspace_id, update.workspace, False, message)
        if update.kind == "remove":
            return HandleUpdate(update.workspace_id, None, True, message)
        return None
