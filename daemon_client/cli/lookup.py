"""Finding the agent a command names: an ID, a unique ID prefix or an exact title.

The daemon resolves the name (``fetch_agent_request``); runs on the main thread.
"""

from __future__ import annotations

from daemon_client.api.agents.handle import AgentHandle
from daemon_client.cli.exit_codes import CliError
from daemon_client.client import Client
from daemon_client.errors import RpcError


def find_agent(client: Client, name: str, timeout: float) -> AgentHandle:
    """The handle of the agent called ``name``; status 1 if the daemon knows none."""
    try:
        snapshot = client.agents.fetch(name, timeout=timeout)
    except RpcError as exc:  # the daemon reports an unknown or ambiguous name as an error
        raise CliError(f"no agent {name!r}: {exc.message}") from None
    if snapshot is None:
        raise CliError(f"no agent {name!r} (give an ID, a unique ID prefix or an exact title)")
    return client.agents.ref(snapshot)
