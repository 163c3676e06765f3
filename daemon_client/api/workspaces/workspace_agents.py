"""``workspace.agents``: agents created in one workspace, through ``client.agents``.

The workspace is passed as a narrow reference (its ID, its last snapshot, a refresh), so this
module needs nothing of the workspace namespace. Runs on the caller's thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from daemon_client.api.agents.create import AgentConfig
    from daemon_client.api.agents.handle import AgentHandle
    from daemon_client.api.agents.namespace import AgentsNamespace
    from daemon_client.protocol.agents import AgentEntry, AgentSnapshot
    from daemon_client.protocol.workspaces import WorkspaceDescriptor


class WorkspaceRef(Protocol):
    """What ``workspace.agents`` needs of its workspace."""

    @property
    def id(self) -> str: ...

    def current(self) -> WorkspaceDescriptor | None: ...

    def refresh(self, timeout: float | None = None) -> WorkspaceDescriptor | None: ...


class WorkspaceAgents:
    """``workspace.agents``: agents created in one workspace."""

    def __init__(self, workspace: WorkspaceRef, agents: Callable[[], AgentsNamespace]) -> None:
        self._workspace = workspace
        self._agents = agents

    def create(
        self,
        config: AgentConfig,
        *,
        prompt: str | None = None,
        title: str | None = None,
        labels: Mapping[str, str] | None = None,
        images: Sequence[Mapping[str, str]] | None = None,
        client_message_id: str | None = None,
        idempotency_key: str | None = None,
        parent: str | AgentHandle | AgentSnapshot | AgentEntry | None = None,
        timeout: float | None = None,
    ) -> AgentHandle:
        """``client.agents.create`` with the workspace's ID and directory (the workspace is read
        first when this handle has no snapshot; ``ValueError`` if it has no directory).
        ``parent`` as there: hosts without parentage raise ``UnsupportedByHost`` first."""
        caller = self._agents().parent_id(parent) if parent is not None else None  # refused before any read
        snapshot = self._workspace.current() or self._workspace.refresh(timeout=timeout)
        directory = snapshot.directory if snapshot is not None else None
        if not directory:
            raise ValueError(f"workspace {self._workspace.id} has no available directory")
        return self._agents().create(
            config,
            cwd=directory,
            prompt=prompt,
            title=title,
            labels=labels,
            workspace_id=self._workspace.id,
            images=images,
            client_message_id=client_message_id,
            idempotency_key=idempotency_key,
            parent=caller,
            timeout=timeout,
        )
