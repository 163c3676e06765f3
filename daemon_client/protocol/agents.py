"""attrs models of agents as the daemon describes them (protocol.md 4.2, 4.3, 5.1, 5.8).

Every field protocol.md lists is here; fields the model does not know, and values of a shape
a field cannot take, are kept in ``extra_fields`` (see :mod:`daemon_client.protocol.lenient`);
enumerations are plain strings, so new values never fail decoding.
Timestamps stay ISO-8601 strings as on the wire. Pure data: no thread runs code here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

PARENT_AGENT_ID_LABEL = "paseo.parent-agent-id"
"""The label in which newer daemons record the agent that started an agent (its
``callerAgentId`` at creation); detaching the agent removes it."""


@attrs.frozen
class FeatureOption:
    """One choice of a ``select`` agent feature, or a model's thinking option (same shape)."""

    id: str
    label: str = ""
    description: str | None = None
    is_default: bool | None = None
    metadata: Mapping[str, Any] | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class AgentFeature:
    """A provider feature of an agent: ``type`` is ``"toggle"`` (bool value) or ``"select"``."""

    type: str
    id: str
    label: str = ""
    description: str | None = None
    tooltip: str | None = None
    icon: str | None = None
    value: Any = None
    options: tuple[FeatureOption, ...] = ()
    desktop_trigger: Any = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class AgentMode:
    """A mode an agent can run in (``availableModes``)."""

    id: str
    label: str = ""
    description: str | None = None
    icon: str | None = None
    color_tier: str | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class AgentCapabilities:
    """What the agent's provider supports; booleans a newer daemon adds land in ``extra_fields``."""

    supports_streaming: bool = False
    supports_session_persistence: bool = False
    supports_dynamic_modes: bool = False
    supports_mcp_servers: bool = False
    supports_reasoning_stream: bool = False
    supports_tool_invocations: bool = False
    supports_session_listing: bool | None = None
    supports_rewind_conversation: bool | None = None
    supports_rewind_files: bool | None = None
    supports_rewind_both: bool | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class PermissionAction:
    """A button of a permission request."""

    id: str
    label: str = ""
    behavior: str = "allow"
    variant: str | None = None
    intent: str | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class PermissionRequest:
    """A pending permission request of an agent (protocol.md 5.8)."""

    id: str
    provider: str = ""
    name: str = ""
    kind: str = "other"
    title: str | None = None
    description: str | None = None
    input: Mapping[str, Any] | None = None
    detail: Mapping[str, Any] | None = None
    suggestions: tuple[Mapping[str, Any], ...] | None = None
    actions: tuple[PermissionAction, ...] | None = None
    metadata: Mapping[str, Any] | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class Persistence:
    """How the provider session of an agent is stored."""

    provider: str = ""
    session_id: str | None = None
    native_handle: Any = None
    metadata: Mapping[str, Any] | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class RuntimeInfo:
    """What the provider actually runs (model, mode, thinking option)."""

    provider: str = ""
    session_id: str | None = None
    model: str | None = None
    thinking_option_id: str | None = None
    mode_id: str | None = None
    extra: Mapping[str, Any] | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class AgentUsage:
    """Token and cost figures of the last turn (``lastUsage``, ``turn_completed.usage``)."""

    input_tokens: int | None = None
    cached_input_tokens: int | None = None
    output_tokens: int | None = None
    total_cost_usd: float | None = None
    context_window_max_tokens: int | None = None
    context_window_used_tokens: int | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class ActiveTurn:
    """The turn an agent is running (current daemons only)."""

    turn_id: str
    started_at: str | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class AgentSnapshot:
    """``AgentSnapshotPayload``: one agent as the daemon last described it (protocol.md 5.1).

    ``status`` is one of ``initializing``, ``idle``, ``running``, ``error``, ``closed`` on
    known daemons; other values are kept as they are.
    """

    id: str
    provider: str = ""
    cwd: str = ""
    status: str = ""
    model: str | None = None
    workspace_id: str | None = None
    title: str | None = None
    labels: Mapping[str, str] = attrs.field(factory=dict)
    created_at: str | None = None
    updated_at: str | None = None
    last_user_message_at: str | None = None
    features: tuple[AgentFeature, ...] | None = None
    thinking_option_id: str | None = None
    effective_thinking_option_id: str | None = None
    active_turn: ActiveTurn | None = None
    capabilities: AgentCapabilities | None = None
    current_mode_id: str | None = None
    available_modes: tuple[AgentMode, ...] = ()
    pending_permissions: tuple[PermissionRequest, ...] = ()
    persistence: Persistence | None = None
    runtime_info: RuntimeInfo | None = None
    last_usage: AgentUsage | None = None
    last_error: str | None = None
    requires_attention: bool | None = None
    attention_reason: str | None = None
    attention_timestamp: str | None = None
    archived_at: str | None = None
    provider_unavailable: bool | None = None
    internal: bool | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)

    @property
    def parent_agent_id(self) -> str | None:
        """The agent that started this one (its ``paseo.parent-agent-id`` label, trimmed);
        ``None`` for a top-level or detached agent, and on hosts without parentage."""
        parent = self.labels.get(PARENT_AGENT_ID_LABEL) if isinstance(self.labels, Mapping) else None
        return parent.strip() if isinstance(parent, str) and parent.strip() else None


@attrs.frozen
class Checkout:
    """Where an agent's directory sits in git (``ProjectPlacementPayload.checkout``)."""

    cwd: str
    is_git: bool = False
    is_paseo_owned_worktree: bool = False
    current_branch: str | None = None
    remote_url: str | None = None
    worktree_root: str | None = None
    main_repo_root: str | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class ProjectPlacement:
    """Which project and workspace an agent's directory belongs to."""

    project_key: str
    project_name: str = ""
    workspace_name: str | None = None
    checkout: Checkout | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class AgentEntry:
    """One row of an agent directory: the agent and its project placement."""

    agent: AgentSnapshot
    project: ProjectPlacement | None = None
    sync_seq: int | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)
