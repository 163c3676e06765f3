"""``client.agents``: the agent directory, its observations, and agent handles.

Methods run on the caller's thread and block with a timeout. Handle snapshots and
listeners are updated on the callback thread, from updates routed to this client's live
observations (see :mod:`daemon_client.observations`).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from daemon_client.agent_create import AgentConfig, build_create_message, created_agent
from daemon_client.agent_handle import AgentHandle
from daemon_client.directory_read import SubscribeArg, read_directory
from daemon_client.errors import RpcError
from daemon_client.observations import DirectoryFamily, DirectoryManager, DirectoryObservation
from daemon_client.protocol.agents import AgentEntry, AgentSnapshot, ProjectPlacement
from daemon_client.protocol.codec import structure
from daemon_client.protocol.directory import (
    AGENT_SORT_KEYS,
    AgentFilter,
    AgentListResult,
    AgentUpdate,
    DirectoryMessage,
    Page,
    SortLike,
    parse_agent_list,
    parse_agent_update,
    sort_to_wire,
)
from daemon_client.protocol.lenient import structure_optional
from daemon_client.timeline_routing import TimelineManager

if TYPE_CHECKING:
    from daemon_client.client import Client

AgentMessage = DirectoryMessage[AgentUpdate]
AgentObservation = DirectoryObservation[AgentListResult]


def _apply(view: dict[str, AgentEntry], message: AgentMessage) -> None:
    update = message.payload
    if update.kind == "upsert" and update.agent is not None:
        previous = view.get(update.agent_id)
        project = update.project or (previous.project if previous is not None else None)
        view[update.agent_id] = AgentEntry(agent=update.agent, project=project)
    elif update.kind == "remove":
        view.pop(update.agent_id, None)


AGENTS = DirectoryFamily[AgentListResult, AgentMessage, AgentEntry](
    name="agents",
    update_type="agent_update",
    parse_list=parse_agent_list,
    parse_update=parse_agent_update,
    entries=lambda result: result.entries,
    entry_key=lambda entry: entry.agent.id,
    apply_update=_apply,
    with_entries=lambda base, entries, sid, obs: attrs.evolve(
        base, entries=entries, subscription_id=sid, subscription=obs
    ),
)


class AgentsNamespace:
    """``client.agents``."""

    def __init__(
        self,
        client: Client,
        manager: DirectoryManager[AgentListResult, AgentMessage, AgentEntry],
        timelines: TimelineManager,
    ) -> None:
        self._client = client
        self._manager = manager
        self._timelines = timelines
        self._dispatcher = manager.dispatcher
        self._request = client.request
        self._send = client._connection.send_message
        self._watch = client._pushes.watch
        self._handles: weakref.WeakValueDictionary[str, AgentHandle] = weakref.WeakValueDictionary()
        self._handles_lock = threading.Lock()
        manager.add_listener(self._on_update)

    def list(
        self,
        scope: str | None = None,
        filter: AgentFilter | None = None,
        sort: Sequence[SortLike] | None = None,
        page: Page | None = None,
        subscribe: SubscribeArg = False,
        *,
        include_background: bool | None = None,
        timeout: float | None = None,
        subscription_id: None = None,
    ) -> AgentListResult:
        """Read a page of the agent directory; with ``subscribe=True`` also observe it.

        The returned result carries ``subscription`` (a :class:`DirectoryObservation`) and
        its ``subscription_id``. On capable (current) daemons every observation is
        independent with its own filter. On older daemons there is one server slot per
        client: a later subscribing ``list()`` replaces the filter of the earlier ones, and
        every live agent observation receives the updates of the latest filter —
        independent filtered views need an updated daemon. Raises ``ValueError`` before
        sending anything for invalid input, including any caller-supplied subscription ID.
        """
        message: dict[str, Any] = {"type": "fetch_agents_request"}
        if scope is not None:
            message["scope"] = scope
        if filter is not None:
            message["filter"] = filter.to_wire()
        wire_sort = sort_to_wire(sort, AGENT_SORT_KEYS)
        if wire_sort is not None:
            message["sort"] = wire_sort
        return read_directory(
            self._client,
            self._manager,
            message,
            page=page,
            include_background=include_background,
            subscribe=subscribe,
            subscription_id=subscription_id,
            timeout=timeout,
        )

    def create(
        self,
        config: AgentConfig,
        *,
        cwd: str | None = None,
        prompt: str | None = None,
        title: str | None = None,
        labels: Mapping[str, str] | None = None,
        workspace_id: str | None = None,
        images: Sequence[Mapping[str, str]] | None = None,
        client_message_id: str | None = None,
        idempotency_key: str | None = None,
        background: bool | None = None,
        timeout: float | None = None,
    ) -> AgentHandle:
        """Create an agent (and start its first turn when ``prompt`` is given).

        ``config=AgentConfig(provider="claude/sonnet", mode_id=...)``. Uses the lifecycle
        request with an idempotency key where the host supports it (a retry with the same
        ``idempotency_key`` after ``ConnectionLost`` cannot create a second agent), else the
        older request. Raises ``AgentCreateError`` (e.g. unknown or unavailable provider).
        """
        message = build_create_message(
            config,
            self._client.server_info,
            cwd=cwd,
            prompt=prompt,
            title=title,
            labels=labels,
            workspace_id=workspace_id,
            images=images,
            client_message_id=client_message_id,
            idempotency_key=idempotency_key,
            background=background,
        )
        payload = self._client.request(message, timeout=timeout)
        snapshot = created_agent(message["type"], payload)
        handle = self.ref(snapshot)
        handle._seen(snapshot)
        return handle

    def subscribe(self, handler: Callable[[AgentMessage], object]) -> Callable[[], None]:
        """A local listener for every ``agent_update`` routed to this client's live agent
        observations (once per message). It sends nothing and receives nothing while no
        observation is live; separate filtered views need the observations' own callbacks."""
        return self._manager.add_listener(handler)

    def ref(self, agent: str | AgentSnapshot | AgentEntry) -> AgentHandle:
        """The handle of an agent (one per agent ID and client); fetches nothing."""
        snapshot = agent.agent if isinstance(agent, AgentEntry) else agent if isinstance(agent, AgentSnapshot) else None
        agent_id = snapshot.id if snapshot is not None else str(agent)
        with self._handles_lock:
            handle = self._handles.get(agent_id)
            if handle is None:
                known = None if snapshot is not None else self._manager.find(agent_id)
                handle = AgentHandle(self, agent_id, snapshot or (known.agent if known is not None else None))
                if known is not None:
                    handle._project = known.project
                self._handles[agent_id] = handle
        if snapshot is not None and handle.current() is None:
            handle._seen(snapshot)
        return handle

    def fetch(self, agent_id: str, *, timeout: float | None = None) -> AgentSnapshot | None:
        """Read one agent by ID, unique ID prefix or exact title; ``None`` if unknown."""
        return self.fetch_with_project(agent_id, timeout=timeout)[0]

    def fetch_with_project(
        self, agent_id: str, *, timeout: float | None = None
    ) -> tuple[AgentSnapshot | None, ProjectPlacement | None]:
        payload = self._client.request({"type": "fetch_agent_request", "agentId": agent_id}, timeout=timeout)
        error = payload.get("error")
        if error:
            raise RpcError(str(error), request_type="fetch_agent_request", request_id=payload.get("requestId"))
        agent = payload.get("agent")
        project = payload.get("project")
        snapshot = structure(agent, AgentSnapshot) if isinstance(agent, Mapping) else None
        placement = structure_optional(project, ProjectPlacement, "project")
        return snapshot, placement

    def _on_update(self, message: AgentMessage) -> None:
        update = message.payload
        handle = self._handles.get(update.agent_id)
        if handle is None:
            return
        if update.project is not None:
            handle._project = update.project
        if update.kind == "upsert" and update.agent is not None:
            handle._observe(update.agent, message, self._manager.dispatcher.invoke)
        elif update.kind == "remove":
            handle._observe(None, message, self._manager.dispatcher.invoke)
