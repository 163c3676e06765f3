"""One line of text for the timeline events that every reader shows alike: a turn's start and end,
a reconnect, a history replaced. The command line's timeline printer and the dashboard's feed both
write these lines; items (messages, tool calls) and the events only one of them shows stay theirs.

Pure functions over the timeline models; run on whichever thread renders.
"""

from __future__ import annotations

from daemon_client.protocol.timeline import (
    LocalEvent,
    Replacement,
    StreamEvent,
    SubscriptionRestored,
    TurnCanceled,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
)

__all__ = ["event_line"]


def event_line(event: StreamEvent | LocalEvent) -> str | None:
    """The line of ``event``, or ``None`` when it is not one of these events."""
    if isinstance(event, TurnStarted):
        return "-- turn started"
    if isinstance(event, TurnCompleted):
        return "-- turn completed"
    if isinstance(event, TurnFailed):
        return f"-- turn failed: {event.error}"
    if isinstance(event, TurnCanceled):
        return f"-- turn canceled: {event.reason}"
    if isinstance(event, SubscriptionRestored):
        return "-- reconnected"
    if isinstance(event, Replacement):
        return f"-- history replaced (epoch {event.epoch})"
    return None
