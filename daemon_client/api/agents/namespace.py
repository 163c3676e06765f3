"""``client.agents``: the agent directory, its observations, and agent handles.

Methods run on the caller's thread and block with a timeout. Handle snapshots and
listeners are updated on the callback thread, from updates routed to this client's live
observations (see :mod:`daemon_client.subscriptions.directory`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from daemon_client.api.agents.create import AgentConfig, build_create_message, created_agent, parent_agent_id
from daemon_client.api.agents.reads import fetch_agent
from daemon_client.api.common.directory_namespace import DirectoryNamespace, HandleUpdate, SubscribeArg
from daemon_client.protocol.agents import AgentEntry, AgentSnapshot
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
from daemon_client.protocol.requests import agents as agents_requests
from daemon_client.runtime.context import ClientContext
from daemon_client.subscriptions.directory import DirectoryFamily, DirectoryManager, DirectoryObservation

if TYPE_CHECKING:  # handles (their controls and timelines) are imported with the first handle
    from daemon_client.api.agents.handle import AgentHandle
    from daemon_client.subscriptions.timeline import TimelineManager

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


class AgentsNamespace(DirectoryNamespace[AgentListResult, AgentMessage, AgentEntry, "AgentHandle"]):
    """``client.agents``. ``timelines`` returns the client's timeline manager, built when the
    first handle needs it (a listing never builds it)."""

    def __init__(
        self,
        context: ClientContext,
        manager: DirectoryManager[AgentListResult, AgentMessage, AgentEntry],
        timelines: Callable[[], TimelineManager],
    ) -> None:
        super().__init__(context, manager)
        self._timelines = timelines

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
        message: dict[str, Any] = {"type": agents_requests.FETCH_AGENTS.type}
        if scope is not None:
            message["scope"] = scope
        if filter is not None:
            message["filter"] = filter.to_wire()
        wire_sort = sort_to_wire(sort, AGENT_SORT_KEYS)
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
        parent: str | AgentHandle | AgentSnapshot | AgentEntry | None = None,
        timeout: float | None = None,
    ) -> AgentHandle:
        """Create an agent (and start its first turn when ``prompt`` is given).

        ``config=AgentConfig(provider="claude/sonnet", mode_id=...)``. Uses the lifecycle
        request with an idempotency key where the host supports it (a retry with the same
        ``idempotency_key`` after ``ConnectionLost`` cannot create a second agent), else the
        older request. Raises ``AgentCreateError`` (e.g. unknown or unavailable provider).

        ``parent`` (an agent ID or handle) names the agent that starts this one; it is sent as
        ``callerAgentId`` and the daemon records it as the new agent's
        ``paseo.parent-agent-id`` label (``AgentSnapshot.parent_agent_id``), so archiving the
        parent archives it too until it is detached. Hosts without parentage (no
        ``features.agentDetach``, Paseo 0.1.98; 0.1.65 has none) would drop the field and
        create an unparented agent: they raise ``UnsupportedByHost`` before sending.
        """
        message = build_create_message(
            config,
            self._context.server_info,
            cwd=cwd,
            prompt=prompt,
            title=title,
            labels=labels,
            workspace_id=workspace_id,
            images=images,
            client_message_id=client_message_id,
            idempotency_key=idempotency_key,
            background=background,
            parent=parent,
        )
        payload = self._context.request(message, timeout=timeout)
        snapshot = created_agent(message["type"], payload)
        handle = self.ref(snapshot)
        handle.note_snapshot(snapshot)
        return handle

    def parent_id(self, parent: str | AgentHandle | AgentSnapshot | AgentEntry) -> str:
        """The ``callerAgentId`` ``create(parent=...)`` sends for ``parent``; ``UnsupportedByHost``
        on hosts without parentage, ``ValueError`` for an empty one. Sends nothing."""
        return parent_agent_id(parent, self._context.server_info)

    def ref(self, agent: str | AgentSnapshot | AgentEntry) -> AgentHandle:
        """The handle of an agent (one per agent ID and client); fetches nothing."""
        snapshot = agent.agent if isinstance(agent, AgentEntry) else agent if isinstance(agent, AgentSnapshot) else None
        return self._ref(snapshot.id if snapshot is not None else str(agent), snapshot)

    def _new_handle(self, item_id: str, known: AgentEntry | None, snapshot: AgentSnapshot | None) -> AgentHandle:
        from daemon_client.api.agents.handle import AgentHandle

        handle = AgentHandle(self._context, self._timelines(), item_id, snapshot or (known.agent if known else None))
        if known is not None and known.project is not None:
            handle.note_project(known.project)
        return handle

    def fetch(self, agent_id: str, *, timeout: float | None = None) -> AgentSnapshot | None:
        """Read one agent by ID, unique ID prefix or exact title; ``None`` if unknown."""
        return fetch_agent(self._context, agent_id, timeout)[0]

    def _interpret(self, message: AgentMessage) -> HandleUpdate[AgentMessage] | None:
        update = message.payload
        if update.kind == "upsert" and update.agent is not None:
            return HandleUpdate(update.agent_id, update.agent, False, message)
        if update.kind == "remove":
            return HandleUpdate(update.agent_id, None, True, message)
        return None

    def _note_entry(self, handle: AgentHandle, entry: AgentEntry) -> None:
        handle.note_snapshot(entry.agent)
        if entry.project is not None:
            handle.note_project(entry.project)

    def _before_update(self, handle: AgentHandle, message: AgentMessage) -> None:
        if message.payload.project is not None:
            handle.note_project(message.payload.project)
