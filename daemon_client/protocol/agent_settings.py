"""attrs models of the replies of an agent's settings calls (protocol.md 12.4).

Slash commands (``list_commands_response``), the acknowledgement of ``set_agent_*``,
``update_agent_request`` and ``agent.detach.request`` (``accepted``, ``error``, and on newer
daemons a ``notice``), and the curated transcript of ``agent.fork_context.request``. Read
leniently (:mod:`daemon_client.protocol.lenient`): unknown fields stay in ``extra_fields``.
Pure data: no thread runs code here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from daemon_client.protocol.agents import AgentSnapshot
from daemon_client.protocol.timeline import TimelineCursor


@attrs.frozen
class AgentCommand:
    """A slash command or skill the agent's session loaded. ``kind`` (``"command"`` or
    ``"skill"``) is sent by newer daemons only."""

    name: str
    description: str = ""
    argument_hint: str = ""
    kind: str | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class SettingNotice:
    """A provider's remark on a settings change (newer daemons), e.g. "applies to the next turn".
    ``type`` is ``"info"``, ``"warning"`` or ``"error"``."""

    message: str
    type: str = "info"
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class SettingResult:
    """The acknowledgement of a settings change that the daemon accepted."""

    agent_id: str = ""
    accepted: bool = False
    notice: SettingNotice | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class ForkAttachment:
    """A text attachment ready to be given to a new agent (``agent.fork_context``)."""

    text: str
    type: str = "text"
    mime_type: str = "text/plain"
    title: str | None = None
    context_kind: str | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class ForkContext:
    """A curated transcript of an agent up to a boundary (``agent.fork_context.response``).

    ``attachment`` is ``None`` when there is nothing to fork; ``item_count`` counts the
    timeline items it holds.
    """

    agent_id: str = ""
    attachment: ForkAttachment | None = None
    item_count: int = 0
    boundary_message_id: str | None = None
    boundary_cursor: TimelineCursor | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class AttentionCleared:
    """``clear_agent_attention_response``: the loaded agents among those named, after clearing."""

    agents: tuple[AgentSnapshot, ...] = ()
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


REPLY_ENVELOPE = frozenset({"requestId", "error"})
"""Keys of a reply payload that belong to the request, not to the result (the error is checked
before the result is read)."""


def reply_fields(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A reply payload without its envelope keys, ready to be read as a result model."""
    return {key: value for key, value in payload.items() if key not in REPLY_ENVELOPE}
