"""The client's namespaces (``agents``, ``workspaces``, ``providers``, ``projects``, ``config``,
``terminals``), built on first use, and the subscription managers behind them.

Part of the composition root: it wires each manager to the connection (one
:class:`~daemon_client.subscriptions.lifecycle.SubscriptionLink`, its push routes, its
lifecycle hooks) and hands each namespace the :class:`~daemon_client.runtime.context.ClientContext`.
A client that never touches a namespace pays nothing for it (importing ``daemon_client``
stays cheap). Built on whichever thread first asks, under ``_lock``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from daemon_client.runtime.connection import Connection
from daemon_client.runtime.context import ClientContext
from daemon_client.runtime.pushes import PushHandler, PushRegistry

if TYPE_CHECKING:
    from daemon_client.api.agents.namespace import AgentsNamespace
    from daemon_client.api.daemon_config import ConfigNamespace
    from daemon_client.api.projects import ProjectsNamespace
    from daemon_client.api.providers.namespace import ProvidersNamespace
    from daemon_client.api.terminals.namespace import TerminalsNamespace
    from daemon_client.api.workspaces.namespace import WorkspacesNamespace
    from daemon_client.protocol.workspaces import WorkspaceDescriptor
    from daemon_client.subscriptions.directory import DirectoryFamily, DirectoryManager
    from daemon_client.subscriptions.events import EventManager
    from daemon_client.subscriptions.flow import ClientStats, FlowPolicy
    from daemon_client.subscriptions.lifecycle import LifecycleHooks, SubscriptionLink
    from daemon_client.subscriptions.timeline import TimelineManager

T = TypeVar("T")


class Namespaces:
    """Lazily built namespaces and the managers behind them, for one client."""

    def __init__(self, context: ClientContext, connection: Connection, pushes: PushRegistry) -> None:
        self._context = context
        self._connection = connection
        self._pushes = pushes
        self._lock = threading.RLock()  # guards _built and _managers; builders run under it
        self._built: dict[str, Any] = {}
        self._managers: list[LifecycleHooks] = []
        self._flow: FlowPolicy | None = None  # built with the first link, under _lock

    def flow(self) -> FlowPolicy:
        """The client's one flow-control policy, shared by every subscription manager."""
        with self._lock:
            if self._flow is None:
                from daemon_client.subscriptions.flow import FlowPolicy

                self._flow = FlowPolicy(self._context.dispatcher)
            return self._flow

    def stats(self) -> ClientStats:
        """The callback backlog and the flow-control counters of every observation."""
        return self.flow().stats()

    def _get(self, name: str, build: Callable[[], T]) -> T:
        with self._lock:
            value = self._built.get(name)
            if value is None:
                value = self._built[name] = build()
            return value

    def _link(self) -> SubscriptionLink:
        from daemon_client.subscriptions.lifecycle import SubscriptionLink

        connection = self._connection
        return SubscriptionLink(
            submit=connection.submit,
            server_info=lambda: connection.server_info,
            host_kind=lambda: connection.host_kind,
            reset_transport=connection.reset_transport,
            dispatcher=self._context.dispatcher,
            flow=self.flow(),
        )

    def _attach(self, manager: LifecycleHooks, routes: dict[str, PushHandler]) -> None:
        """Route the manager's pushes to it and register its lifecycle hooks."""
        for message_type, router in routes.items():
            self._pushes.set_router(message_type, router)
        self._connection.add_hooks(manager.restore, disconnect=manager.on_disconnect, close=manager.release_for_close)
        self._managers.append(manager)

    def _directory(self, family: DirectoryFamily[Any, Any, Any]) -> DirectoryManager[Any, Any, Any]:
        from daemon_client.subscriptions.directory import DirectoryManager

        manager: DirectoryManager[Any, Any, Any] = DirectoryManager(family, self._link())
        self._attach(manager, {family.update_type: manager.route})
        return manager

    def timelines(self) -> TimelineManager:
        def build() -> TimelineManager:
            from daemon_client.subscriptions.timeline import TIMELINE, TimelineManager

            manager = TimelineManager(TIMELINE, self._link())
            self._attach(
                manager,
                {"agent_stream": manager.route, "agent.timeline.replacement": manager.route_replacement},
            )
            return manager

        return self._get("timelines", build)

    def events(self) -> EventManager:
        def build() -> EventManager:
            from daemon_client.api.projects import EVENT as PROJECTS_EVENT
            from daemon_client.api.providers.namespace import EVENT as PROVIDERS_EVENT
            from daemon_client.subscriptions.events import EventManager

            manager = EventManager(self._link())
            self._attach(manager, dict.fromkeys((PROVIDERS_EVENT, PROJECTS_EVENT), manager.route_event))
            return manager

        return self._get("events", build)

    def agents(self) -> AgentsNamespace:
        def build() -> AgentsNamespace:
            from daemon_client.api.agents.namespace import AGENTS, AgentsNamespace

            return AgentsNamespace(self._context, self._directory(AGENTS), self.timelines)

        return self._get("agents", build)

    def workspaces(self) -> WorkspacesNamespace:
        def build() -> WorkspacesNamespace:
            from daemon_client.api.workspaces.namespace import WORKSPACES, WorkspacesNamespace

            return WorkspacesNamespace(self._context, self._directory(WORKSPACES), self.agents, self.terminals)

        return self._get("workspaces", build)

    def providers(self) -> ProvidersNamespace:
        def build() -> ProvidersNamespace:
            from daemon_client.api.providers.namespace import ProvidersNamespace

            return ProvidersNamespace(self._context, self.events())

        return self._get("providers", build)

    def projects(self) -> ProjectsNamespace:
        def build() -> ProjectsNamespace:
            from daemon_client.api.projects import ProjectsNamespace

            return ProjectsNamespace(self._context, self.events(), self.workspaces)

        return self._get("projects", build)

    def config(self) -> ConfigNamespace:
        def build() -> ConfigNamespace:
            from daemon_client.api.daemon_config import ConfigNamespace
            from daemon_client.protocol.config import parse_config
            from daemon_client.subscriptions.config import ConfigManager

            manager = ConfigManager(self._link(), parse_config)
            # daemon_config_changed is a ``status`` push: the manager looks only at that status
            self._attach(manager, {"status": manager.route})
            return ConfigNamespace(self._context, manager)

        return self._get("config", build)

    def terminals(self) -> TerminalsNamespace:
        def build() -> TerminalsNamespace:
            from daemon_client.api.terminals.namespace import TerminalsNamespace
            from daemon_client.subscriptions.terminal_directory import UPDATE_TYPE, TerminalDirectoryManager
            from daemon_client.subscriptions.terminal_streams import EXIT_PUSH, TerminalStreamManager

            send = self._connection.send_message
            streams = TerminalStreamManager(self._link(), send)
            self._attach(streams, {EXIT_PUSH: streams.route_exit})
            self._connection.set_binary_router(streams.route_binary)
            directory = TerminalDirectoryManager(self._link(), send)
            self._attach(directory, {UPDATE_TYPE: directory.route})
            return TerminalsNamespace(self._context, streams, directory, self._find_workspace)

        return self._get("terminals", build)

    def _find_workspace(self, workspace_id: str, timeout: float | None) -> WorkspaceDescriptor | None:
        return self.workspaces().find(workspace_id, timeout=timeout)

    def dispose(self) -> None:
        """After ``close()``: every manager built fails its pending work and detaches."""
        with self._lock:
            managers = list(self._managers)
        for manager in managers:
            manager.dispose()
