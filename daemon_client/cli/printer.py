"""Timelines as text or JSON lines: what ``tail``, ``demo`` and ``run --stream`` print.

A printer is called with :class:`~daemon_client.protocol.timeline.TimelineUpdate` values on
the client's callback thread (live events) or on the main thread (history rows, before live
events are let through), one call at a time under the printer's lock. Assistant chunks are
joined before they are encoded, so a character split between two chunks survives. Local
``error`` events are not printed: the follower decides what they mean.
"""

from __future__ import annotations

import threading

from daemon_client.cli.json_render import update_json
from daemon_client.cli.output import TextJoiner, Writer, json_text
from daemon_client.protocol.event_text import event_line
from daemon_client.protocol.timeline import (
    AssistantMessage,
    SubscriptionError,
    TimelineEvent,
    TimelineUpdate,
    ToolCall,
    TurnCompleted,
)


class MessagePrinter:
    """Prints a timeline as text: assistant chunks joined per message, turn marks, local events."""

    def __init__(self, out: Writer, *, assistant_only: bool = False) -> None:
        self._out = out
        self._assistant_only = assistant_only
        self._in_message = False
        self._joiner = TextJoiner()
        self._lock = threading.Lock()
        self.turns_completed = 0

    def __call__(self, update: TimelineUpdate) -> None:
        with self._lock:
            self._print(update)

    def end(self) -> None:
        """Finish an open message with its newline (the command is ending)."""
        with self._lock:
            self._close_message()

    def _close_message(self) -> None:
        if self._in_message:
            self._out.write(self._joiner.end() + "\n")
            self._in_message = False

    def _line(self, text: str) -> None:
        self._close_message()
        if not self._assistant_only:
            self._out.write(text + "\n")

    def _print(self, update: TimelineUpdate) -> None:
        event = update.event
        if isinstance(event, TimelineEvent):
            item = event.item
            if isinstance(item, AssistantMessage):
                self._out.write(self._joiner.feed(item.text))
                self._in_message = True
            elif isinstance(item, ToolCall):
                if item.status != "running":
                    self._line(f"  [tool {item.name}: {item.status}]")
            elif item.type == "user_message":
                self._line(f"> {getattr(item, 'text', '')}")
            elif item.type != "reasoning":
                self._close_message()
        else:
            line = event_line(event)
            if line is not None:
                if isinstance(event, TurnCompleted):
                    self.turns_completed += 1
                self._line(line)


class JsonLinesPrinter:
    """Prints every timeline update as one JSON document per line."""

    def __init__(self, out: Writer) -> None:
        self._out = out

    def __call__(self, update: TimelineUpdate) -> None:
        if isinstance(update.event, SubscriptionError):
            return
        self._out.write(json_text(update_json(update)) + "\n")

    def end(self) -> None:
        """Nothing is left open between lines."""
