"""The dashboard's rows as plain data: one :class:`AgentRow` per agent, the filter and the sort.

Pure functions and values, no Textual: the application's loop thread builds rows from fleet
entries (:func:`row_from`), keeps them in a dict keyed by :func:`row_key`, and asks
:class:`RowFilter` which of them to show and :data:`SORTS` in which order.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from daemon_client.protocol.agents import AgentSnapshot

SEPARATOR = "\x1f"
"""Between the host and the agent ID in a row key (in neither)."""


def row_key(host: str, agent_id: str) -> str:
    return f"{host}{SEPARATOR}{agent_id}"


def split_key(key: str) -> tuple[str, str]:
    host, _, agent_id = key.partition(SEPARATOR)
    return host, agent_id


@attrs.define
class AgentRow:
    """What the table shows of one agent (mutable: updated in place by the loop thread)."""

    host: str
    agent_id: str
    title: str = ""
    model: str = ""
    """``provider/model`` (``provider`` alone when the model is not known)."""
    status: str = ""
    since: float = attrs.field(factory=time.monotonic)
    """When the status was first seen (monotonic seconds)."""
    permissions: int = 0
    last_line: str = ""
    """The last line of assistant text of the current (or last) turn."""
    labels: Mapping[str, str] = attrs.field(factory=dict)
    available: bool = True
    """False while its host is unreachable: the row is what was last known."""
    snapshot: AgentSnapshot | None = None

    @property
    def key(self) -> str:
        return row_key(self.host, self.agent_id)

    def labels_text(self) -> str:
        return ",".join(f"{k}={v}" for k, v in sorted(self.labels.items()) if not k.startswith("paseo."))

    def shown_status(self) -> str:
        return self.status if self.available else f"{self.status}?"


def model_text(agent: AgentSnapshot) -> str:
    model = agent.model or (agent.runtime_info.model if agent.runtime_info is not None else None)
    return f"{agent.provider}/{model}" if model else agent.provider


def apply_snapshot(row: AgentRow, agent: AgentSnapshot, available: bool, now: float | None = None) -> None:
    """Update ``row`` from ``agent`` (its ``since`` moves only when the status changes)."""
    if agent.status != row.status:
        row.since = time.monotonic() if now is None else now
    row.title = agent.title or agent.id
    row.model = model_text(agent)
    row.status = agent.status
    row.permissions = len(agent.pending_permissions)
    row.labels = dict(agent.labels) if isinstance(agent.labels, Mapping) else {}
    row.available = available
    row.snapshot = agent


def row_from(host: str, agent: AgentSnapshot, available: bool = True) -> AgentRow:
    row = AgentRow(host, agent.id)
    apply_snapshot(row, agent, available)
    return row


def age_text(seconds: float) -> str:
    """``12s``, ``4m``, ``3h``, ``2d``."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


PREFIXES = ("status", "host", "label")


@attrs.frozen
class RowFilter:
    """``text``: words that must all match; ``status:``, ``host:`` and ``label:`` words match
    that field only (``label:key`` or ``label:key=value``), the others any of title, host,
    label and status. Case-insensitive substrings."""

    text: str = ""

    def terms(self) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        for word in self.text.lower().split():
            field, colon, value = word.partition(":")
            if colon and field in PREFIXES:
                found.append((field, value))
            else:
                found.append(("", word))
        return found

    def matches(self, row: AgentRow) -> bool:
        labels = [f"{k}={v}".lower() for k, v in row.labels.items()]
        for field, value in self.terms():
            if field == "status":
                ok = value in row.status.lower()
            elif field == "host":
                ok = value in row.host.lower()
            elif field == "label":
                ok = any(value in label for label in labels)
            else:
                ok = (
                    value in row.title.lower()
                    or value in row.host.lower()
                    or value in row.status.lower()
                    or any(value in label for label in labels)
                )
            if not ok:
                return False
        return True


SortKey = Callable[[AgentRow], Any]
SORTS: tuple[tuple[str, SortKey], ...] = (
    ("host", lambda row: (row.host.lower(), row.title.lower())),
    ("title", lambda row: (row.title.lower(), row.host.lower())),
    ("status", lambda row: (row.status, row.since)),
    ("age", lambda row: -row.since),
    ("perms", lambda row: (-row.permissions, row.title.lower())),
)
"""The sort orders the ``s`` key cycles through: name and key."""
