"""One agent's timeline as lines of text: what the detail pane shows and the table's last line.

:class:`AgentFeed` is fed on the application's loop thread, by the agent's live timeline
subscription (:meth:`AgentFeed.apply`) and by history pages read on a worker thread and handed
back to the loop (:meth:`AgentFeed.prepend`). It keeps at most :data:`LIMIT` lines, joins the
chunks of an assistant message into one entry, and remembers the cursor of its oldest row so
that the next history page continues from there. Pure data: no Textual, no client calls.
"""

from __future__ import annotations

from typing import Any

from daemon_client.protocol.event_text import event_line
from daemon_client.protocol.timeline import (
    AssistantMessage,
    Lagged,
    PermissionRequested,
    PermissionResolved,
    TimelineCursor,
    TimelineEvent,
    TimelinePage,
    TimelineUpdate,
    ToolCall,
    TurnStarted,
    UserMessage,
)

LIMIT = 2000
"""Lines kept per agent (the oldest are dropped first)."""


def item_line(item: Any) -> str | None:
    """A history or live item as one entry (``None``: not shown)."""
    if isinstance(item, AssistantMessage):
        return item.text
    if isinstance(item, UserMessage):
        return f"> {item.text}"
    if isinstance(item, ToolCall):
        return f"  [tool {item.name}: {item.status}]"
    kind = getattr(item, "type", "")
    if kind == "error":
        return f"  [error: {getattr(item, 'message', '')}]"
    return None


class AgentFeed:
    """See the module docstring. ``version`` grows on every change (the pane redraws on it)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._open = False
        """The last entry is an assistant message still streaming."""
        self.turn_text = ""
        """The assistant text of the current (or last) turn."""
        self.version = 0
        self.first_seq: int | None = None
        self.epoch: str | None = None
        self.oldest: TimelineCursor | None = None
        """Where the next history page ends (before it); ``None`` until a row or page is seen."""
        self.has_older = True
        self.history_read = False
        """At least one history page was read."""

    @property
    def last_line(self) -> str:
        """The last non-empty line of the current turn's assistant text."""
        for line in reversed(self.turn_text.splitlines()):
            if line.strip():
                return line.strip()
        return ""

    def _add(self, text: str) -> None:
        self._open = False
        self.lines.append(text)
        if len(self.lines) > LIMIT:
            del self.lines[: len(self.lines) - LIMIT]
            self.has_older = True

    def apply(self, update: TimelineUpdate) -> bool:
        """One live update; True if something shown changed."""
        if update.seq is not None and self.first_seq is None:
            self.first_seq, self.epoch = update.seq, update.epoch
            if update.epoch is not None and self.oldest is None:
                self.oldest = TimelineCursor(update.epoch, update.seq)
        event = update.event
        if isinstance(event, TimelineEvent):
            item = event.item
            if isinstance(item, AssistantMessage):
                if self._open:
                    self.lines[-1] += item.text
                else:
                    self._add(item.text)
                    self._open = True
                self.turn_text += item.text
            elif isinstance(item, ToolCall) and item.status == "running":
                return False
            else:
                line = item_line(item)
                if line is None:
                    return False
                self._add(line)
        elif isinstance(event, PermissionRequested):
            self._add(f"?? permission requested: {event.request.title or event.request.name}")
        elif isinstance(event, PermissionResolved):
            self._add(f"-- permission {event.resolution.get('behavior', 'answered')}")
        elif isinstance(event, Lagged):
            self._add(f"-- {event.dropped} events skipped (the view lagged)")
        else:
            line = event_line(event)
            if line is None:
                return False
            if isinstance(event, TurnStarted):
                self.turn_text = ""
            self._add(line)
        self.version += 1
        return True

    def prepend(self, page: TimelinePage) -> int:
        """Put a history page before what is held; returns how many entries it added. Rows at
        or after the first live row are left out (the live subscription has them)."""
        added: list[str] = []
        for entry in page.entries:
            if self.first_seq is not None and page.epoch == self.epoch and entry.seq_end >= self.first_seq:
                continue
            line = item_line(entry.item)
            if line is not None:
                added.append(line)
        self.history_read = True
        self.has_older = page.has_older and page.start_cursor is not None
        if page.start_cursor is not None:
            self.oldest = page.start_cursor
        if self.epoch is None:
            self.epoch = page.epoch
        if added:
            self.lines[:0] = added
            if not self.turn_text:  # the table's last line before any live text arrived
                for entry in reversed(page.entries):
                    if isinstance(entry.item, AssistantMessage):
                        self.turn_text = entry.item.text
                        break
        self.version += 1
        return len(added)
