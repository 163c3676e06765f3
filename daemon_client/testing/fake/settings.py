"""The fake daemon's agent settings calls (``fake.settings``; protocol.md 12.4, transcript 15).

Handlers of ``list_commands_request``, ``set_agent_mode_request``, ``set_agent_model_request``,
``set_agent_thinking_request``, ``set_agent_feature_request``, ``update_agent_request``,
``clear_agent_attention`` and ``delete_agent_request`` (every host), ``agent.detach.request``
(hosts with ``features.agentDetach``; it removes the agent's ``paseo.parent-agent-id`` label)
and ``agent.fork_context.request`` (hosts with ``features.agentForkContext``; a
``boundaryCursor`` is read only with ``features.agentForkContextCursor``). Shaped like the 0.1.65 frames:

- ``set_*`` take exact agent UUIDs (``"requireAgent: agentId must be a UUID"``), answer
  ``{agentId, accepted, error}`` (newer hosts add ``notice``), and only then push the agent's
  upsert, even when nothing changed; a failure also pushes an ``activity_log`` error;
- IDs are not checked against the provider's catalogue; a provider not in
  :attr:`FakeAgentSettings.feature_providers` refuses features;
- ``update_agent_request`` pushes the title upsert, answers, then pushes the labels upsert;
  labels are merged into the existing ones;
- an agent in :attr:`FakeAgentSettings.unloaded` is stored but not loaded: settings and commands
  fail for it, ``update_agent_request`` still works;
- ``clear_agent_attention`` answers only a request with a ``requestId``; ``delete_agent_request``
  answers ``agent_deleted`` (also for an unknown agent), then removes the agent.

Handlers run on connection reader threads and never hold a lock while sending.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from daemon_client.protocol.agents import PARENT_AGENT_ID_LABEL
from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.requests import agents as agents_requests
from daemon_client.testing.fake.engine.handlers import iso_now

if TYPE_CHECKING:
    from daemon_client.testing.fake.engine.handlers import HandlerRegistry, RequestContext
    from daemon_client.testing.fake.ports import DaemonPort

__all__ = ["DEFAULT_COMMANDS", "FakeAgentSettings"]

DEFAULT_COMMANDS: Mapping[str, list[dict[str, Any]]] = {
    "claude": [
        {"name": "review", "description": "Review the current diff", "argumentHint": "[path]"},
        {"name": "compact", "description": "Compact the conversation", "argumentHint": ""},
    ]
}
"""Commands per provider; a provider without an entry "does not support listing commands"."""

_SETTERS = (
    agents_requests.SET_MODE,
    agents_requests.SET_MODEL,
    agents_requests.SET_THINKING,
    agents_requests.SET_FEATURE,
)
"""The four setters, one handler; each declaration requires ``agentId`` and its own field."""


def _is_uuid(value: object) -> bool:
    try:
        return isinstance(value, str) and str(uuid.UUID(value)) == value.lower()
    except ValueError:
        return False


class FakeAgentSettings:
    """``fake.settings``: see the module docstring."""

    def __init__(self, daemon: DaemonPort) -> None:
        self.daemon = daemon
        config = daemon.core.config
        self.host_kind: HostKind = config.host_kind
        self.features = config.effective_features
        self.commands: dict[str, list[dict[str, Any]]] = copy.deepcopy(dict(DEFAULT_COMMANDS))
        """Slash commands per provider (``list_commands_request``)."""
        self.feature_providers: set[str] = {"claude"}
        """Providers whose agents accept ``set_agent_feature_request``."""
        self.unloaded: set[str] = set()
        """Agents that are stored but not loaded."""
        self.notice: dict[str, Any] | None = None
        """The ``notice`` newer hosts add to settings replies (``None``: ``notice: null``)."""
        self.detached: list[str] = []
        """Agents detached with ``agent.detach.request``, in order."""

    def install(self, registry: HandlerRegistry) -> None:
        registry.serve_all(
            (
                (agents_requests.LIST_COMMANDS, self._handle_commands),
                *((spec, self._handle_setter) for spec in _SETTERS),
                (agents_requests.UPDATE, self._handle_update),
                (agents_requests.CLEAR_ATTENTION, self._handle_clear_attention),
                (agents_requests.DELETE, self._handle_delete),
                (agents_requests.DETACH, self._handle_detach),
                (agents_requests.FORK_CONTEXT, self._handle_fork_context),
            ),
            host_kind=self.host_kind,
            features=self.features,
        )

    # -- helpers -------------------------------------------------------------------------------

    def _answer(self, ctx: RequestContext, agent_id: object, error: str | None) -> None:
        payload: dict[str, Any] = {"agentId": agent_id, "accepted": error is None, "error": error}
        if self.host_kind is not HostKind.BROADCAST:
            payload["notice"] = copy.deepcopy(self.notice)
        if error is not None:
            ctx.send("activity_log", {"id": str(uuid.uuid4()), "timestamp": iso_now(), "type": "error",
                                      "content": error})  # fmt: skip
        ctx.reply(payload)

    def _loaded(self, agent_id: object) -> tuple[dict[str, Any] | None, str | None]:
        """The loaded agent of an exact ID, or why there is none."""
        if not _is_uuid(agent_id):
            return None, "requireAgent: agentId must be a UUID"
        agent = self.daemon.agents.get(str(agent_id))
        if agent is None or agent_id in self.unloaded:
            return None, f"Agent not found: {agent_id}"
        return agent, None

    # -- commands and setters ------------------------------------------------------------------

    def _handle_commands(self, ctx: RequestContext) -> None:
        agent_id = ctx.message["agentId"]
        agent = self.daemon.agents.get(agent_id) if isinstance(agent_id, str) else None
        draft = ctx.message.get("draftConfig")
        if agent is None or agent_id in self.unloaded:
            provider = draft.get("provider") if isinstance(draft, Mapping) else None
            if provider is None:
                self._commands_reply(ctx, agent_id, [], f"Agent not found: {agent_id}")
                return
            commands = self.commands.get(str(provider))
            error = None if commands is not None else f"Provider '{provider}' does not support listing commands"
            self._commands_reply(ctx, agent_id, commands or [], error)
            return
        commands = self.commands.get(str(agent.get("provider")))
        error = None if commands is not None else "Agent does not support listing commands"
        self._commands_reply(ctx, agent_id, commands or [], error)

    def _commands_reply(self, ctx: RequestContext, agent_id: object, commands: list[dict[str, Any]],
                        error: str | None) -> None:  # fmt: skip
        listed = copy.deepcopy(commands)
        if self.host_kind is HostKind.CAPABLE:
            for command in listed:
                command.setdefault("kind", "command")
        ctx.reply({"agentId": agent_id, "commands": listed, "error": error})

    def _handle_setter(self, ctx: RequestContext) -> None:
        message = ctx.message
        agent_id = message["agentId"]
        agent, error = self._loaded(agent_id)
        if agent is None:
            self._answer(ctx, agent_id, error)
            return
        fields = self._setting_fields(ctx.request_type, message, agent)
        if fields is None:
            self._answer(ctx, agent_id, "Agent session does not support setting features")
            return
        self._answer(ctx, agent_id, None)
        self.daemon.runs.upsert(str(agent_id), **fields)  # after the reply (15 L16-L18)

    def _setting_fields(
        self, request_type: str, message: Mapping[str, Any], agent: dict[str, Any]
    ) -> dict[str, Any] | None:
        runtime = dict(agent.get("runtimeInfo") or {})
        if request_type == "set_agent_mode_request":
            runtime["modeId"] = message["modeId"]
            return {"currentModeId": message["modeId"], "runtimeInfo": runtime}
        if request_type == "set_agent_model_request":
            model = message["modelId"] or ("ten-second-stream" if agent.get("provider") == "mock" else None)
            runtime["model"] = model
            return {"model": model, "runtimeInfo": runtime}
        if request_type == "set_agent_thinking_request":
            option = message["thinkingOptionId"] or None
            runtime["thinkingOptionId"] = option
            return {"thinkingOptionId": option, "effectiveThinkingOptionId": option, "runtimeInfo": runtime}
        if agent.get("provider") not in self.feature_providers:
            return None
        features = [dict(f) for f in agent.get("features") or [] if f.get("id") != message["featureId"]]
        features.append({"type": "toggle", "id": message["featureId"], "label": str(message["featureId"]),
                         "value": message.get("value")})  # fmt: skip
        return {"features": features}

    # -- update, attention, delete -------------------------------------------------------------

    def _handle_update(self, ctx: RequestContext) -> None:
        agent_id = ctx.message["agentId"]
        name, labels = ctx.message.get("name"), ctx.message.get("labels")
        title = name.strip() if isinstance(name, str) and name.strip() else None
        labels = labels if isinstance(labels, Mapping) and labels else None
        agent = self.daemon.agents.get(agent_id) if isinstance(agent_id, str) else None
        if agent is None:
            self._answer(ctx, agent_id, f"Agent not found: {agent_id}")
            return
        if title is None and labels is None:
            self._answer(ctx, agent_id, "Nothing to update (provide name and/or labels)")
            return
        if title is not None:
            self.daemon.runs.upsert(agent_id, title=title)
        self._answer(ctx, agent_id, None)
        if labels is not None:
            merged = {**(agent.get("labels") or {}), **labels}
            self.daemon.runs.upsert(agent_id, labels=merged)

    def _handle_clear_attention(self, ctx: RequestContext) -> None:
        requested = ctx.message["agentId"]
        ids = requested if isinstance(requested, list) else [requested]
        snapshots: list[dict[str, Any]] = []
        for agent_id in ids:
            agent = self.daemon.agents.get(agent_id) if isinstance(agent_id, str) else None
            if agent is None or agent_id in self.unloaded:
                continue
            if agent.get("requiresAttention"):
                agent = self.daemon.runs.upsert(agent_id, requiresAttention=False, attentionReason=None,
                                                attentionTimestamp=None) or agent  # fmt: skip
            snapshots.append(agent)
        if ctx.request_id is not None:
            ctx.reply({"agentId": requested, "agents": snapshots})

    def _handle_delete(self, ctx: RequestContext) -> None:
        agent_id = ctx.message["agentId"]
        if isinstance(agent_id, str) and self.daemon.agents.get(agent_id) is not None:
            self.daemon.runs.cancel(agent_id)
            ctx.reply({"agentId": agent_id}, type="agent_deleted")
            self.daemon.agents.remove(agent_id)
            return
        ctx.reply({"agentId": agent_id}, type="agent_deleted")  # the daemon deletes best-effort

    # -- newer hosts ---------------------------------------------------------------------------

    def _handle_detach(self, ctx: RequestContext) -> None:
        agent_id = ctx.message["agentId"]
        agent = self.daemon.agents.get(agent_id) if isinstance(agent_id, str) else None
        if agent is None:
            self._answer(ctx, agent_id, f"Agent not found: {agent_id}")
            return
        self.detached.append(str(agent_id))
        labels = dict(agent.get("labels") or {})
        if labels.pop(PARENT_AGENT_ID_LABEL, None) is not None:
            self.daemon.agents.upsert(str(agent_id), labels=labels)
        self._answer(ctx, agent_id, None)

    def _handle_fork_context(self, ctx: RequestContext) -> None:
        message = ctx.message
        agent_id = message["agentId"]
        agent = self.daemon.agents.get(agent_id) if isinstance(agent_id, str) else None
        base: dict[str, Any] = {"agentId": agent_id, "attachment": None, "itemCount": 0, "boundaryMessageId": None}
        if agent is None:
            ctx.reply({**base, "error": f"Agent not found: {agent_id}"})
            return
        rows = self.daemon.timeline.rows(str(agent_id))
        cursor = message.get("boundaryCursor") if self.features.get("agentForkContextCursor") else None
        if isinstance(cursor, Mapping) and isinstance(cursor.get("seq"), int):
            rows = [row for row in rows if row["seq"] <= cursor["seq"]]
        boundary = message.get("boundaryMessageId")
        if isinstance(boundary, str):
            cut = next((i for i, row in enumerate(rows) if row["item"].get("messageId") == boundary), None)
            rows = rows if cut is None else rows[: cut + 1]
        texts = [f"{row['item']['type']}: {row['item'].get('text', '')}" for row in rows
                 if row["item"].get("type") in ("user_message", "assistant_message")]  # fmt: skip
        attachment = {"type": "text", "mimeType": "text/plain", "title": f"Context of {agent.get('title') or agent_id}",
                      "text": "\n".join(texts), "contextKind": "transcript"} if texts else None  # fmt: skip
        payload = {**base, "attachment": attachment, "itemCount": len(texts),
                   "boundaryMessageId": boundary if isinstance(boundary, str) else None, "error": None}  # fmt: skip
        if self.features.get("agentForkContextCursor"):
            last = rows[-1] if rows else None
            payload["boundaryCursor"] = {"epoch": last["epoch"], "seq": last["seq"]} if last else None
        ctx.reply(payload)
