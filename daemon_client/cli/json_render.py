"""The JSON the command prints with ``--json``: models in the wire's camelCase shape.

Listings and results are one document; watching and tailing print one document per line
(:mod:`daemon_client.cli.output` writes them). Timeline lines share one shape for live
events and history rows: ``{"agentId", "type", "seq", "epoch", "timestamp", "event"}``
(history rows add ``"history": true`` and ``seqStart``). Pure functions.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import attrs

from daemon_client.protocol.codec import unstructure

if TYPE_CHECKING:
    from daemon_client.protocol.timeline import TimelineEntry, TimelineUpdate

_TIMELINE = "daemon_client.protocol.timeline"


def model_json(value: Any) -> Any:
    """An attrs model (or a list of them) as JSON-ready data; anything else unchanged."""
    # An unknown timeline item or event exists only once its module is imported: a listing of
    # agents never imports the timeline models for this check.
    timeline = sys.modules.get(_TIMELINE)
    if timeline is not None and isinstance(value, timeline.UnknownItem | timeline.UnknownEvent):
        return dict(value.raw) or {"type": value.type}
    if attrs.has(type(value)):
        return unstructure(value)
    if isinstance(value, list | tuple):
        return [model_json(item) for item in value]
    return value


def _without_none(fields: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}


def _event_json(update: TimelineUpdate) -> Any:
    from daemon_client.protocol.timeline import SubscriptionError, TimelineEvent

    event = update.event
    if isinstance(event, SubscriptionError):
        return {"type": event.type, "error": event.error}
    if isinstance(event, TimelineEvent):
        return _without_none(
            {"type": event.type, "item": model_json(event.item), "provider": event.provider, "turnId": event.turn_id}
        )
    return model_json(event)


def update_json(update: TimelineUpdate) -> dict[str, Any]:
    """One live timeline update (a stream event or a local one such as ``subscription_restored``)."""
    return _without_none(
        {
            "agentId": update.agent_id,
            "type": update.type,
            "seq": update.seq,
            "epoch": update.epoch,
            "timestamp": update.timestamp,
            "event": _event_json(update),
        }
    )


def entry_json(agent_id: str, epoch: str, entry: TimelineEntry) -> dict[str, Any]:
    """One history row, in the shape of a live ``timeline`` update."""
    event = {"type": "timeline", "item": model_json(entry.item), "provider": entry.provider, "turnId": entry.turn_id}
    return _without_none(
        {
            "agentId": agent_id,
            "type": "timeline",
            "history": True,
            "seq": entry.seq_end,
            "seqStart": entry.seq_start,
            "epoch": epoch,
            "timestamp": entry.timestamp,
            "event": _without_none(event),
        }
    )
