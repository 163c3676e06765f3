"""Terminal output of the ``daemon-client`` command: tables, JSON, and the live views.

Everything here writes to a text stream given by the caller. Live views are fed from the
client's callback thread and draw under their own lock; on a terminal they redraw in
place with ANSI escapes, elsewhere they print one line per change.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

import attrs

from daemon_client.protocol.agents import AgentEntry, AgentSnapshot
from daemon_client.protocol.codec import unstructure
from daemon_client.protocol.timeline import (
    AssistantMessage,
    Replacement,
    SubscriptionError,
    SubscriptionRestored,
    TimelineEvent,
    TimelineUpdate,
    ToolCall,
    TurnCanceled,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
)
from daemon_client.protocol.workspaces import WorkspaceDescriptor

STATUS_MARKS = {"running": "▶", "idle": "·", "error": "✗", "initializing": "…", "closed": "■"}


def table(rows: Iterable[Iterable[str]], headers: Iterable[str]) -> str:
    """A plain left-aligned text table."""
    data = [list(headers), *[list(row) for row in rows]]
    widths = [max(len(row[i]) for row in data) for i in range(len(data[0]))]
    return "\n".join("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in data)


def agent_row(agent: AgentSnapshot) -> list[str]:
    mark = STATUS_MARKS.get(agent.status, "?")
    return [f"{mark} {agent.status}", agent.title or "(untitled)", agent.provider, agent.id]


def agents_table(entries: Iterable[AgentEntry]) -> str:
    return table((agent_row(e.agent) for e in entries), ["STATUS", "TITLE", "PROVIDER", "ID"])


def workspaces_table(workspaces: Iterable[WorkspaceDescriptor]) -> str:
    rows = ([w.status, w.name, w.directory, w.id] for w in workspaces)
    return table(rows, ["STATUS", "NAME", "DIRECTORY", "ID"])


def to_json(value: Any) -> str:
    """Models as the wire's camelCase JSON."""
    if attrs.has(type(value)):
        value = unstructure(value)
    elif isinstance(value, list | tuple):
        value = [unstructure(v) if attrs.has(type(v)) else v for v in value]
    return json.dumps(value, indent=2, sort_keys=True, default=str)


class MessagePrinter:
    """Prints a timeline as text: assistant chunks joined per message, turn marks, local events."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._in_message = False
        self._lock = threading.Lock()
        self.turns_completed = 0

    def __call__(self, update: TimelineUpdate) -> None:
        with self._lock:
            self._print(update)
            self._out.flush()

    def _line(self, text: str) -> None:
        if self._in_message:
            self._out.write("\n")
            self._in_message = False
        self._out.write(text + "\n")

    def _print(self, update: TimelineUpdate) -> None:
        event = update.event
        if isinstance(event, TimelineEvent):
            item = event.item
            if isinstance(item, AssistantMessage):
                self._out.write(item.text)
                self._in_message = True
            elif isinstance(item, ToolCall):
                if item.status != "running":
                    self._line(f"  [tool {item.name}: {item.status}]")
            elif item.type == "user_message":
                self._line(f"> {getattr(item, 'text', '')}")
        elif isinstance(event, TurnStarted):
            self._line("-- turn started")
        elif isinstance(event, TurnCompleted):
            self.turns_completed += 1
            self._line("-- turn completed")
        elif isinstance(event, TurnFailed):
            self._line(f"-- turn failed: {event.error}")
        elif isinstance(event, TurnCanceled):
            self._line(f"-- turn canceled: {event.reason}")
        elif isinstance(event, SubscriptionRestored):
            self._line(f"-- reconnected (subscription {update.subscription_id}); events while away were missed")
        elif isinstance(event, Replacement):
            self._line(f"-- history replaced (epoch {event.epoch})")
        elif isinstance(event, SubscriptionError):
            self._line(f"-- subscription ended: {event.error}")


class LiveAgents:
    """The agent table of the live views, fed from directory callbacks (callback thread).

    In line mode every status change is printed as it happens; in screen mode nothing is
    printed here and the caller redraws :meth:`render` on its own thread.
    """

    def __init__(self, out: TextIO, *, line_mode: bool) -> None:
        self._out = out
        self._line_mode = line_mode
        self._lock = threading.Lock()
        self._agents: dict[str, AgentSnapshot] = {}

    def snapshot(self, entries: Iterable[AgentEntry]) -> None:
        with self._lock:
            self._agents = {e.agent.id: e.agent for e in entries}
            text = self._table_locked()
        if self._line_mode:
            self._out.write(text + "\n")
            self._out.flush()

    def update(self, kind: str, agent_id: str, agent: AgentSnapshot | None) -> None:
        with self._lock:
            previous = self._agents.get(agent_id)
            if kind == "upsert" and agent is not None:
                self._agents[agent_id] = agent
                if previous is not None and previous.status == agent.status:
                    return
                change = f"{agent.title or agent_id}: {previous.status if previous else 'new'} -> {agent.status}"
            elif kind == "remove" and previous is not None:
                del self._agents[agent_id]
                change = f"{previous.title or agent_id}: removed"
            else:
                return
        if self._line_mode:
            self._out.write(change + "\n")
            self._out.flush()

    def _table_locked(self) -> str:
        return agents_table(AgentEntry(agent=a) for a in self._agents.values())

    def render(self) -> str:
        with self._lock:
            return self._table_locked()


class TextTail:
    """The last lines a :class:`MessagePrinter` wrote, for screen mode."""

    def __init__(self, lines: int = 12) -> None:
        self._lines = lines
        self._text = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            self._text = (self._text + text)[-20000:]
        return len(text)

    def flush(self) -> None:
        """Nothing to flush: the screen is redrawn by its owner."""

    def render(self) -> str:
        with self._lock:
            return "\n".join(self._text.splitlines()[-self._lines :])


def describe_features(features: Mapping[str, Any]) -> str:
    return ", ".join(sorted(name for name, on in features.items() if on is True)) or "none"
