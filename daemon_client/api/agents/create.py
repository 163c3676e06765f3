"""Creating agents (protocol.md 5.3): ``AgentConfig`` and the two wire paths.

Hosts with ``features.creationLifecycle`` get ``agent.create.request`` with an
idempotency key; others get ``create_agent_request`` answered by a ``status`` message. A parent
agent is sent as ``callerAgentId`` on either path (protocol.md 5.3, 12.5.4), to hosts with
parentage only (see :func:`parent_agent_id`). Runs on the caller's thread; validation happens
before anything is sent.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from daemon_client.api.common.feature_gates import require_feature
from daemon_client.errors import AgentCreateError, UnsupportedByHost
from daemon_client.protocol.agents import AgentSnapshot
from daemon_client.protocol.codec import structure
from daemon_client.protocol.models import ServerInfo
from daemon_client.protocol.requests import agents as agents_requests


@attrs.frozen
class AgentConfig:
    """What to run: ``provider="provider/model"`` (split before sending), or ``provider`` with
    ``model=``. A provider without a model is refused before anything is sent, as the
    TypeScript SDK does; the provider's default model is the one marked ``is_default`` in
    ``client.providers.snapshot()``."""

    provider: str
    model: str | None = None
    cwd: str | None = None
    mode_id: str | None = None
    thinking_option_id: str | None = None
    feature_values: Mapping[str, Any] | None = None
    system_prompt: str | None = None
    mcp_servers: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = attrs.field(factory=dict)
    """Further config fields sent as they are (camelCase wire names)."""

    def to_wire(self, cwd: str, title: str | None) -> dict[str, Any]:
        provider, slash, model = self.provider.partition("/")
        if not provider or (slash and not model) or not (model or self.model):
            raise ValueError(
                f'Expected config.provider in "provider/model" format (or a provider and model=...), '
                f"got provider={self.provider!r}, model={self.model!r}"
            )
        if model and self.model and model != self.model:
            raise ValueError(f"provider {self.provider!r} names model {model!r}, but model={self.model!r}")
        config: dict[str, Any] = {"provider": provider, "cwd": cwd, **dict(self.extra)}
        optional = {
            "model": self.model or model or None,
            "modeId": self.mode_id,
            "thinkingOptionId": self.thinking_option_id,
            "featureValues": dict(self.feature_values) if self.feature_values is not None else None,
            "systemPrompt": self.system_prompt,
            "mcpServers": dict(self.mcp_servers) if self.mcp_servers is not None else None,
            "title": title,
        }
        config.update({key: value for key, value in optional.items() if value is not None})
        return config


PARENTAGE_FLAG = "agentDetach"
"""The flag of hosts with parent links. No flag names ``callerAgentId`` itself, and the
TypeScript SDK sends it unconditionally; but a host that does not know the field drops it
without a word (0.1.65 has no parentage at all) and the agent is created without a parent.
Parent links and ``agent.detach.request``, which removes them, come together, so hosts
reporting ``features.agentDetach`` (Paseo 0.1.98) are the ones this client sends it to."""
PARENTAGE_VERSION = "0.1.98"


def parent_agent_id(parent: object, info: ServerInfo | None) -> str:
    """The ID of a parent given as an ID, an agent handle, snapshot or entry; ``ValueError``
    for an empty one, ``UnsupportedByHost`` on hosts without parentage (before sending)."""
    agent = getattr(parent, "agent", None)  # an AgentEntry
    candidate = parent if isinstance(parent, str) else getattr(agent if agent is not None else parent, "id", None)
    if not isinstance(candidate, str):
        raise ValueError(f"parent must be an agent ID or an agent handle, not {type(parent).__name__}")
    if not candidate.strip():
        raise ValueError("parent must be a non-empty agent ID")
    require_feature(info, PARENTAGE_FLAG, "create agents with a parent", PARENTAGE_VERSION)
    return candidate.strip()


def build_create_message(
    config: AgentConfig,
    info: ServerInfo | None,
    *,
    cwd: str | None,
    prompt: str | None,
    title: str | None,
    labels: Mapping[str, str] | None,
    workspace_id: str | None,
    images: Sequence[Mapping[str, str]] | None,
    client_message_id: str | None,
    idempotency_key: str | None,
    background: bool | None,
    parent: object = None,
) -> dict[str, Any]:
    """The create request for this host; ``ValueError``/``UnsupportedByHost`` before sending."""
    directory = cwd or config.cwd
    if not directory:
        raise ValueError("an agent needs a working directory: pass cwd=... or AgentConfig(cwd=...)")
    if title is not None:
        title = title.strip()
        if not 1 <= len(title) <= 200:
            raise ValueError("title must be 1 to 200 characters after trimming")
    if idempotency_key is not None and not 1 <= len(idempotency_key) <= 512:
        raise ValueError("idempotency_key must be 1 to 512 characters")
    lifecycle = info is not None and info.feature("creationLifecycle")
    if background is not None and not (info is not None and info.feature("backgroundWorkspaces")):
        raise UnsupportedByHost("Update the host to use background workspaces.")
    caller = parent_agent_id(parent, info) if parent is not None else None
    message: dict[str, Any] = {
        "type": agents_requests.CREATE.type if lifecycle else agents_requests.CREATE_LEGACY.type,
        "config": config.to_wire(directory, title),
    }
    if prompt and prompt.strip():
        message["initialPrompt"] = prompt.strip()
        message["clientMessageId"] = client_message_id or str(uuid.uuid4())
    if labels:
        message["labels"] = dict(labels)
    if workspace_id is not None:
        message["workspaceId"] = workspace_id
    if images:
        message["images"] = [dict(image) for image in images]
    if background is not None:
        message["background"] = background
    if caller is not None:
        message["callerAgentId"] = caller
    if lifecycle:
        message["idempotencyKey"] = idempotency_key or str(uuid.uuid4())
        message["subscribe"] = True
    elif idempotency_key is not None:
        if not _receipts_allowed(info, message):
            raise UnsupportedByHost(
                "Update the host to create agents idempotently (this daemon takes an idempotency key only with "
                "features.agentRequestReceipts and no prompt or image): retrying could create a second agent."
            )
        message["idempotencyKey"] = idempotency_key
    return message


def _receipts_allowed(info: ServerInfo | None, message: Mapping[str, Any]) -> bool:
    """Older hosts take an idempotency key only with ``agentRequestReceipts`` and no prompt or image."""
    return (
        info is not None
        and info.feature("agentRequestReceipts")
        and "initialPrompt" not in message
        and not (message.get("images"))
    )


def created_agent(message_type: str, payload: Mapping[str, Any]) -> AgentSnapshot:
    """The created agent from a create reply; ``AgentCreateError`` if creation failed."""
    request_id = payload.get("requestId")
    if message_type == agents_requests.CREATE.type:
        agent = payload.get("agent")
        if payload.get("error") or not isinstance(agent, Mapping):
            creation = payload.get("creation")
            code = creation.get("errorCode") if isinstance(creation, Mapping) else None
            raise AgentCreateError(
                str(payload.get("error") or "the daemon created no agent"),
                error_code=code if isinstance(code, str) else None,
                request_type=message_type,
                request_id=request_id,
            )
        return structure(agent, AgentSnapshot)
    if payload.get("status") != "agent_created" or not isinstance(payload.get("agent"), Mapping):
        code = payload.get("errorCode")
        raise AgentCreateError(
            str(payload.get("error") or "the daemon could not create the agent"),
            error_code=code if isinstance(code, str) else None,
            request_type=message_type,
            request_id=request_id,
        )
    return structure(payload["agent"], AgentSnapshot)
