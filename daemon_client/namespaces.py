"""The client's namespaces (``agents``, ``workspaces``, ``providers``, ``projects``), built
on first use.

Building a namespace imports its modules, creates its observation managers and hooks them
into the connection; a client that never touches one pays nothing for it (importing
``daemon_client`` stays cheap). Built on whichever thread first asks, under a lock.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from daemon_client.agents import AgentsNamespace
    from daemon_client.client import Client
    from daemon_client.projects import ProjectsNamespace
    from daemon_client.providers import ProvidersNamespace
    from daemon_client.subscriptions.directory import DirectoryFamily, DirectoryManager
    from daemon_client.subscriptions.events import EventManager
    from daemon_client.subscriptions.timeline import TimelineManager
    from daemon_client.workspaces import WorkspacesNamespace


class Namespaces:
    """Lazily built namespaces and the managers behind them, for one client."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._lock = threading.RLock()
        self._built: dict[str, Any] = {}
        self._disposables: list[Any] = []

    def _get(self, name: str, build: Any) -> Any:
        with self._lock:
            value = self._built.get(name)
            if value is None:
                value = self._built[name] = build()
            return value

    def _membership_parts(self) -> dict[str, Any]:
        connection = self._client._connection
        return {
            "submit": connection.submit,
            "server_info": lambda: connection.server_info,
            "reset_transport": connection.reset_transport,
            "dispatcher": self._client._dispatcher,
        }

    def _directory(self, family: DirectoryFamily[Any, Any, Any]) -> DirectoryManager[Any, Any, Any]:
        from daemon_client.subscriptions.directory import DirectoryManager

        connection = self._client._connection
        manager: DirectoryManager[Any, Any, Any] = DirectoryManager(
            family,
            submit=connection.submit,
            host_kind=lambda: connection.host_kind,
            reset_transport=connection.reset_transport,
            dispatcher=self._client._dispatcher,
        )
        self._client._pushes.set_router(family.update_type, manager.route)
        connection.add_hooks(manager.restore, disconnect=manager.on_disconnect, close=manager.release_all_for_close)
        self._disposables.append(manager)
        return manager

    def timelines(self) -> TimelineManager:
        def build() -> TimelineManager:
            from daemon_client.subscriptions.timeline import TIMELINE, TimelineManager

            manager = TimelineManager(TIMELINE, **self._membership_parts())
            pushes = self._client._pushes
            pushes.set_router("agent_stream", manager.route_stream)
            pushes.set_router("agent.timeline.replacement", manager.route_replacement)
            self._hook(manager)
            return manager

        manager: TimelineManager = self._get("timelines", build)
        return manager

    def events(self) -> EventManager:
        def build() -> EventManager:
            from daemon_client.projects import EVENT as PROJECTS_EVENT
            from daemon_client.providers import EVENT as PROVIDERS_EVENT
            from daemon_client.subscriptions.events import EventManager

            manager = EventManager(**self._membership_parts())
            for event in (PROVIDERS_EVENT, PROJECTS_EVENT):
                self._client._pushes.set_router(event, manager.route_event)
            self._hook(manager)
            return manager

        manager: EventManager = self._get("events", build)
        return manager

    def _hook(self, manager: Any) -> None:
        self._client._connection.add_hooks(
            manager.restore, disconnect=manager.on_disconnect, close=manager.release_for_close
        )
        self._disposables.append(manager)

    def agents(self) -> AgentsNamespace:
        def build() -> AgentsNamespace:
            from daemon_client.agents import AGENTS, AgentsNamespace

            return AgentsNamespace(self._client, self._directory(AGENTS), self.timelines())

        namespace: AgentsNamespace = self._get("agents", build)
        return namespace

    def workspaces(self) -> WorkspacesNamespace:
        def build() -> WorkspacesNamespace:
            from daemon_client.workspaces import WORKSPACES, WorkspacesNamespace

            return WorkspacesNamespace(self._client, self._directory(WORKSPACES))

        namespace: WorkspacesNamespace = self._get("workspaces", build)
        return namespace

    def providers(self) -> ProvidersNamespace:
        def build() -> ProvidersNamespace:
            from daemon_client.providers import ProvidersNamespace

            return ProvidersNamespace(self._client, self.events())

        namespace: ProvidersNamespace = self._get("providers", build)
        return namespace

    def projects(self) -> ProjectsNamespace:
        def build() -> ProjectsNamespace:
            from daemon_client.projects import ProjectsNamespace

            return ProjectsNamespace(self._client, self.events())

        namespace: ProjectsNamespace = self._get("projects", build)
        return namespace

    def dispose(self) -> None:
        """After ``close()``: every manager built fails its pending work and detaches."""
        with self._lock:
            disposables = list(self._disposables)
        for manager in disposables:
            manager.dispose()
