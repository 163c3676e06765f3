"""Reads of one agent that the namespace and the handles share (``fetch_agent_request``).

Runs on the caller's thread and blocks with the request family's timeout.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from daemon_client.protocol.agents import AgentSnapshot, ProjectPlacement
from daemon_client.protocol.codec import structure
from daemon_client.protocol.lenient import structure_optional
from daemon_client.protocol.requests import agents as agents_requests

if TYPE_CHECKING:
    from daemon_client.runtime.context import ClientContext


def fetch_agent(
    context: ClientContext, agent_id: str, timeout: float | None
) -> tuple[AgentSnapshot | None, ProjectPlacement | None]:
    """One agent by ID, unique ID prefix or exact title, with its project placement; ``None`` for
    an agent the daemon does not know (``fetch_agent_request``)."""
    payload = context.call(agents_requests.FETCH_AGENT, {"agentId": agent_id}, timeout)
    agent = payload.get("agent")
    project = payload.get("project")
    snapshot = structure(agent, AgentSnapshot) if isinstance(agent, Mapping) else None
    placement = structure_optional(project, ProjectPlacement, "project")
    return snapshot, placement
