"""The live stream's parser: an ``agent_stream`` payload → ``TimelineUpdate``.

Nearly every frame of a stream has one shape, a chunk of assistant text or reasoning;
:func:`parse_stream_payload` reads it in one step and builds its three values with the
slot-setting constructors of :mod:`daemon_client.protocol.timeline`. Any other shape is read field
by field by :func:`~daemon_client.protocol.timeline.parse_stream_fields`. The value classes stay in
that module; this one holds none, so the compiled build compiles it (see
:mod:`daemon_client._compiled`). Runs on the callback thread (once per frame, for each handle that
reads it); nothing here changes after import.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from daemon_client.protocol.timeline import (
    TimelineUpdate,
    new_assistant_message,
    new_reasoning,
    new_timeline_event,
    new_timeline_update,
    parse_stream_fields,
)

__all__ = ["parse_stream_payload", "restamp"]


def parse_stream_payload(payload: Mapping[str, Any], subscription_id: str | None) -> TimelineUpdate:
    """An ``agent_stream`` payload → :class:`TimelineUpdate` (``subscription_id`` as routed)."""
    try:  # the shape of most frames of a stream, in one step: a chunk of assistant text or reasoning
        event = payload["event"]
        if event["type"] == "timeline" and "turnId" not in event:
            item = event["item"]
            kind = item["type"]
            if (kind == "assistant_message" and "messageId" not in item) or kind == "reasoning":
                text, provider, agent_id = item["text"], event["provider"], payload["agentId"]
                timestamp, seq, epoch = payload["timestamp"], payload["seq"], payload["epoch"]
                if (
                    type(text) is str
                    and type(provider) is str
                    and type(agent_id) is str
                    and type(timestamp) is str
                    and type(seq) is int
                    and type(epoch) is str
                ):
                    chunk = (
                        new_assistant_message(text, None, "assistant_message")
                        if kind == "assistant_message"
                        else new_reasoning(text, "reasoning")
                    )
                    timeline_event = new_timeline_event(chunk, provider, None, "timeline")
                    update: TimelineUpdate = new_timeline_update(
                        agent_id, timeline_event, subscription_id, timestamp, seq, epoch
                    )
                    return update
    except (KeyError, TypeError):  # a field missing, or not an object: read field by field
        pass
    return parse_stream_fields(payload, subscription_id)


def restamp(update: TimelineUpdate, subscription_id: str | None) -> TimelineUpdate:
    """``update`` as delivered under ``subscription_id`` (a frame parsed once for several
    handles of one agent); a copy as cheap as the stream's own constructor."""
    copy: TimelineUpdate = new_timeline_update(
        update.agent_id, update.event, subscription_id, update.timestamp, update.seq, update.epoch
    )
    return copy
