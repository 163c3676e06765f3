"""Live views of the command: the agent table fed from directory callbacks, and a screen buffer.

:class:`LiveAgents` is fed on the client's callback thread and keeps its table under its
own lock; it writes outside that lock. In line mode every status change is a line (text),
and with ``json_lines`` every snapshot and update is one JSON document per line; in screen
mode it writes nothing and the owner redraws :meth:`LiveAgents.render` on the main thread.
:class:`TextTail` keeps the last lines a timeline printer wrote, for the screen.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from daemon_client.cli.json_render import model_json
from daemon_client.cli.output import Writer, json_text
from daemon_client.cli.render import STATUS_MARKS, Marks, agents_table
from daemon_client.protocol.agents import AgentEntry, AgentSnapshot


class LiveAgents:
    """The agent table of ``agents --watch`` and ``demo`` (see the module docstring)."""

    def __init__(self, out: Writer, *, line_mode: bool, json_lines: bool = False, marks: Marks = STATUS_MARKS) -> None:
        self._out = out
        self._line_mode = line_mode
        self._json = json_lines
        self._marks = marks
        self._lock = threading.Lock()
        self._agents: dict[str, AgentSnapshot] = {}

    def snapshot(self, entries: Iterable[AgentEntry]) -> None:
        """Callback thread: the whole (filtered) directory, first and after every reconnect."""
        listed = list(entries)
        with self._lock:
            self._agents = {e.agent.id: e.agent for e in listed}
            text = self._table_locked()
        if self._json:
            self._out.write(json_text({"type": "snapshot", "agents": [model_json(e) for e in listed]}) + "\n")
        elif self._line_mode:
            self._out.write(text + "\n")

    def update(self, kind: str, agent_id: str, agent: AgentSnapshot | None) -> None:
        """Callback thread: one ``agent_update``."""
        with self._lock:
            previous = self._agents.get(agent_id)
            if kind == "upsert" and agent is not None:
                self._agents[agent_id] = agent
                same = previous is not None and previous.status == agent.status
                change = f"{agent.title or agent_id}: {previous.status if previous else 'new'} -> {agent.status}"
            elif kind == "remove":
                self._agents.pop(agent_id, None)
                same = previous is None
                change = f"{(previous.title if previous else None) or agent_id}: removed"
            else:
                return
        if self._json:
            document = {"type": kind, "agentId": agent_id, "agent": model_json(agent) if agent is not None else None}
            self._out.write(json_text(document) + "\n")
        elif self._line_mode and not same:
            self._out.write(change + "\n")

    def _table_locked(self) -> str:
        return agents_table((AgentEntry(agent=a) for a in self._agents.values()), self._marks)

    def render(self) -> str:
        with self._lock:
            return self._table_locked()


class TextTail:
    """The last lines a timeline printer wrote, for screen mode."""

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
