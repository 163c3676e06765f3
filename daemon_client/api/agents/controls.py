"""``AgentControls``: the settings and lifecycle calls of an agent handle (protocol.md 12.4).

Slash commands, mode / model / thinking option / feature, title and labels, attention, delete,
and on newer daemons detach and fork-context. A base class of
:class:`~daemon_client.api.agents.handle.AgentHandle`: every method blocks the caller's thread with
the request family's timeout (one table: ``protocol/replies.py``) and may be called from
callbacks. Replies that report a failure (``accepted: false``, an ``error``) raise ``RpcError``
through :func:`~daemon_client.errors.check_reply`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from daemon_client.api.common.feature_gates import require_feature
from daemon_client.errors import check_reply
from daemon_client.protocol.agent_settings import (
    AgentCommand,
    AttentionCleared,
    ForkContext,
    SettingResult,
    reply_fields,
)
from daemon_client.protocol.agents import AgentSnapshot
from daemon_client.protocol.lenient import structure, structure_each
from daemon_client.protocol.requests import agents as agents_requests

if TYPE_CHECKING:
    from daemon_client.protocol.timeline import TimelineCursor
    from daemon_client.runtime.context import ClientContext

DETACH = agents_requests.DETACH.type
FORK_CONTEXT = agents_requests.FORK_CONTEXT.type


class AgentControls:
    """Settings and lifecycle calls of one agent (mixed into ``AgentHandle``).

    The ``set_*`` calls and ``update`` need the agent loaded in the daemon and its exact ID
    (0.1.65 refuses anything but a UUID). The daemon does not check IDs against the provider's
    catalogue (a thinking option the model lacks is accepted): validate against
    ``client.providers.list_models`` first when that matters. On success the daemon pushes an
    ``agent_update`` to directory observers; this handle's snapshot follows it there, or call
    ``refresh()``.
    """

    # provided by AgentHandle and its LocalHandle base
    id: str
    removed: bool
    _context: ClientContext
    note_snapshot: Callable[[AgentSnapshot], None]

    def commands(self, *, timeout: float | None = None) -> tuple[AgentCommand, ...]:
        """The slash commands and skills the agent's session loaded (``list_commands_request``,
        30 s). Raises ``RpcError`` when the daemon reports an error (the agent is not loaded, or
        its provider cannot list commands), where the TypeScript SDK returns the error text."""
        payload = self._context.call(agents_requests.LIST_COMMANDS, {"agentId": self.id}, timeout)
        commands = payload.get("commands")
        return structure_each(commands if isinstance(commands, list) else None, AgentCommand, "commands")

    def set_mode(self, mode_id: str, *, timeout: float | None = None) -> SettingResult:
        """Switch the agent's mode (``set_agent_mode_request``, 15 s; one of its
        ``available_modes``). ``accepted: false`` raises ``RpcError``."""
        _check_text(mode_id, "mode_id")
        return self._setting(agents_requests.SET_MODE.type, {"modeId": mode_id}, timeout)

    def set_model(self, model: str | None, *, timeout: float | None = None) -> SettingResult:
        """Switch the agent's model (``set_agent_model_request``, 15 s); ``None`` restores the
        provider's default model."""
        if model is not None:
            _check_text(model, "model")
        return self._setting(agents_requests.SET_MODEL.type, {"modelId": model}, timeout)

    def set_thinking(self, option_id: str | None, *, timeout: float | None = None) -> SettingResult:
        """Choose the model's thinking option (``set_agent_thinking_request``, 15 s); ``None``
        clears it. Not gated on ``features.agentThinkingUpdate``: 0.1.65 handles it too."""
        if option_id is not None:
            _check_text(option_id, "option_id")
        return self._setting(agents_requests.SET_THINKING.type, {"thinkingOptionId": option_id}, timeout)

    def set_feature(self, feature_id: str, value: Any, *, timeout: float | None = None) -> SettingResult:
        """Set a provider feature of the agent (one of its ``features``; ``value`` is any JSON
        value, a bool for toggles). A provider without feature support refuses (``RpcError``)."""
        _check_text(feature_id, "feature_id")
        return self._setting(agents_requests.SET_FEATURE.type, {"featureId": feature_id, "value": value}, timeout)

    def update(
        self, *, title: str | None = None, labels: Mapping[str, str] | None = None, timeout: float | None = None
    ) -> SettingResult:
        """Rename the agent and/or add labels (``update_agent_request``, 15 s).

        Labels are **merged** into the existing ones, as the daemon does: a key given here
        replaces that key's value, the others stay, and there is no way to delete a label.
        Works for stored agents that are not loaded too. ``ValueError`` before sending when
        neither is given or the title is blank (the daemon would ignore it).
        """
        message: dict[str, Any] = {}
        if title is not None:
            if not isinstance(title, str) or not title.strip():
                raise ValueError("title must be a non-blank string (the daemon ignores a blank one)")
            message["name"] = title.strip()
        if labels is not None:
            if not isinstance(labels, Mapping) or not all(
                isinstance(key, str) and isinstance(value, str) for key, value in labels.items()
            ):
                raise ValueError("labels must map strings to strings")
            if labels:
                message["labels"] = dict(labels)
        if not message:
            raise ValueError("nothing to update: give title= and/or non-empty labels=")
        return self._setting(agents_requests.UPDATE.type, message, timeout)

    def clear_attention(self, *, timeout: float | None = None) -> AgentSnapshot | None:
        """Clear the agent's attention flag (``clear_agent_attention``, 15 s); returns its
        snapshot, ``None`` when the agent is not loaded. The daemon sends no reply at all when
        it fails: that surfaces as ``RequestTimeout``."""
        payload = self._context.call(agents_requests.CLEAR_ATTENTION, {"agentId": self.id}, timeout)
        cleared = structure(reply_fields(payload), AttentionCleared)
        mine = next((agent for agent in cleared.agents if agent.id == self.id), None)
        if mine is not None:
            self.note_snapshot(mine)
        return mine

    def delete(self, *, timeout: float | None = None) -> None:
        """Delete the agent for good (``delete_agent_request``, 15 s): its runtime is closed and
        its stored record and timeline are removed. Unlike ``archive()`` this cannot be undone.
        The daemon deletes best-effort: an unknown agent is no error."""
        self._context.call(agents_requests.DELETE, {"agentId": self.id}, timeout)
        self.removed = True

    def detach(self, *, timeout: float | None = None) -> SettingResult:
        """Remove the agent's parent link, so archiving the former parent no longer archives it
        (``agent.detach.request``). Needs ``features.agentDetach`` (Paseo 0.1.98): older hosts
        have no parentage and raise ``UnsupportedByHost`` without sending."""
        self._context.check_host(agents_requests.DETACH)
        return self._setting(DETACH, {}, timeout)

    def fork_context(
        self,
        *,
        boundary_cursor: TimelineCursor | None = None,
        boundary_message_id: str | None = None,
        timeout: float | None = None,
    ) -> ForkContext:
        """A curated transcript of the agent, ready to give a new agent as a text attachment
        (``agent.fork_context.request``, 60 s), up to ``boundary_message_id`` or
        ``boundary_cursor`` (default: everything). Needs ``features.agentForkContext`` (Paseo
        0.1.102); a cursor needs ``features.agentForkContextCursor`` (0.1.108). Raises
        ``UnsupportedByHost`` without sending, ``RpcError`` when the daemon reports an error."""
        self._context.check_host(agents_requests.FORK_CONTEXT)
        message: dict[str, Any] = {"agentId": self.id}
        if boundary_cursor is not None:
            cursor = agents_requests.FORK_CONTEXT_CURSOR
            require_feature(self._context.server_info, cursor.flag, cursor.what, cursor.version)
            message["boundaryCursor"] = boundary_cursor.to_wire()
        if boundary_message_id is not None:
            _check_text(boundary_message_id, "boundary_message_id")
            message["boundaryMessageId"] = boundary_message_id
        payload = self._context.call(agents_requests.FORK_CONTEXT, message, timeout)
        return structure(reply_fields(payload), ForkContext)

    def _setting(self, request_type: str, fields: Mapping[str, Any], timeout: float | None) -> SettingResult:
        payload = self._context.request({"type": request_type, "agentId": self.id, **fields}, timeout=timeout)
        check_reply(payload, request_type, accepted_field="accepted", missing="the daemon did not accept the change")
        return structure(reply_fields(payload), SettingResult)


def _check_text(value: object, name: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-blank string, got {value!r}")
