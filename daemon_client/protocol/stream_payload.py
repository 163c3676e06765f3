"""The live stream's parser: an ``agent_stream`` payload → ``TimelineUpdate``.

Nearly every frame of a stream has one shape, a chunk of assistant text or reasoning;
:func:`parse_stream_payload` reads it in one step and builds its three values here, each as an
instance of its class's assignable subclass whose slots are assigned one by one, then made the
class's own (:mod:`daemon_client.protocol.assignable`). Any other shape is read field by field
by :func:`~daemon_client.protocol.timeline.parse_stream_fields`. The value classes stay in that
module; this one holds none, so the compiled build compiles it (see
:mod:`daemon_client._compiled`), the building of the values included. Runs on the callback
thread (once per frame, for each handle that reads it); nothing here changes after import.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from daemon_client.protocol.assignable import assignable
from daemon_client.protocol.timeline import (
    AssistantMessage,
    Reasoning,
    TimelineEvent,
    TimelineUpdate,
    parse_stream_fields,
)

__all__ = ["BUILT", "parse_stream_payload", "restamp"]


def _assignable(cls: type[Any]) -> Any:
    subclass = assignable(cls)
    if subclass is None:  # pragma: no cover - the four classes are plain frozen attrs classes
        raise TypeError(f"{cls.__name__} cannot be built by assigning its slots")
    return subclass


_NEW_MESSAGE: Final = _assignable(AssistantMessage)
_NEW_REASONING: Final = _assignable(Reasoning)
_NEW_EVENT: Final = _assignable(TimelineEvent)
_NEW_UPDATE: Final = _assignable(TimelineUpdate)

BUILT: Final[dict[type[Any], tuple[str, ...]]] = {
    AssistantMessage: ("text", "message_id", "type"),
    Reasoning: ("text", "type"),
    TimelineEvent: ("item", "provider", "turn_id", "type"),
    TimelineUpdate: ("agent_id", "event", "subscription_id", "timestamp", "seq", "epoch"),
}
"""The fields each builder below assigns (a test keeps them equal to the classes' fields, so a
class that gains a field must gain it here and below too)."""


def _assistant_chunk(text: str) -> AssistantMessage:
    chunk: Any = _NEW_MESSAGE()
    chunk.text = text
    chunk.message_id = None
    chunk.type = "assistant_message"
    chunk.__class__ = AssistantMessage
    built: AssistantMessage = chunk
    return built


def _reasoning_chunk(text: str) -> Reasoning:
    chunk: Any = _NEW_REASONING()
    chunk.text = text
    chunk.type = "reasoning"
    chunk.__class__ = Reasoning
    built: Reasoning = chunk
    return built


def _timeline_event(item: AssistantMessage | Reasoning, provider: str) -> TimelineEvent:
    event: Any = _NEW_EVENT()
    event.item = item
    event.provider = provider
    event.turn_id = None
    event.type = "timeline"
    event.__class__ = TimelineEvent
    built: TimelineEvent = event
    return built


def _update(  # noqa: PLR0917 - one per field, in the class's order
    agent_id: str, event: Any, subscription_id: str | None, timestamp: str | None, seq: int | None, epoch: str | None
) -> TimelineUpdate:
    update: Any = _NEW_UPDATE()
    update.agent_id = agent_id
    update.event = event
    update.subscription_id = subscription_id
    update.timestamp = timestamp
    update.seq = seq
    update.epoch = epoch
    update.__class__ = TimelineUpdate
    built: TimelineUpdate = update
    return built


def parse_stream_payload(payload: Mapping[str, Any], subscription_id: str | None) -> TimelineUpdate:
    """An ``agent_stream`` payload → :class:`TimelineUpdate` (``subscription_id`` as routed)."""
    if type(payload) is dict:  # decoded JSON: the shape of most frames of a stream, in one step
        event = payload.get("event")
        if type(event) is dict and event.get("type") == "timeline" and "turnId" not in event:
            item = event.get("item")
            if type(item) is dict:
                kind = item.get("type")
                if (kind == "assistant_message" and "messageId" not in item) or kind == "reasoning":
                    text, provider, agent_id = item.get("text"), event.get("provider"), payload.get("agentId")
                    timestamp, seq, epoch = payload.get("timestamp"), payload.get("seq"), payload.get("epoch")
                    if (
                        type(text) is str
                        and type(provider) is str
                        and type(agent_id) is str
                        and type(timestamp) is str
                        and type(seq) is int
                        and type(epoch) is str
                    ):
                        chunk = _assistant_chunk(text) if kind == "assistant_message" else _reasoning_chunk(text)
                        return _update(
                            agent_id, _timeline_event(chunk, provider), subscription_id, timestamp, seq, epoch
                        )
    return parse_stream_fields(payload, subscription_id)  # any other shape: field by field


def restamp(update: TimelineUpdate, subscription_id: str | None) -> TimelineUpdate:
    """``update`` as delivered under ``subscription_id`` (a frame parsed once for several
    handles of one agent); a copy as cheap as the stream's own constructor."""
    return _update(update.agent_id, update.event, subscription_id, update.timestamp, update.seq, update.epoch)
