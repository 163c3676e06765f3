"""The status line: each host's connection, its latency, events per second, flow-control skips, and the last notice.

:class:`HostStatus` values are changed by the application's loop thread (state changes from
``fleet.on_state_change``, latencies from ``ping`` replies awaited on the loop, skip counts
from ``client.stats()`` once a second); :class:`StatusLine` draws them when asked, on the
same thread.
"""

from __future__ import annotations

import re
import time
from typing import Any

import attrs
from rich.text import Text
from textual.widgets import Static

from daemon_client.state import ConnectionState

_RETRY = re.compile(r"reconnecting in ([0-9.]+) s")


@attrs.define
class HostStatus:
    """One host as the status line shows it."""

    label: str
    state: ConnectionState = ConnectionState.IDLE
    reason: str = ""
    retry_at: float | None = None
    """When the next attempt is due (monotonic), read from the state change's reason."""
    relay: bool = False
    latency: float | None = None
    """The last ``ping`` round trip, in seconds."""
    dropped: int = 0
    """Pushes flow control skipped so far (``client.stats().dropped``)."""

    def note_state(self, state: ConnectionState, reason: str) -> None:
        self.state, self.reason = state, reason
        match = _RETRY.search(reason)
        self.retry_at = time.monotonic() + float(match.group(1)) if match else None
        if state is not ConnectionState.CONNECTED:
            self.latency = None

    def text(self, now: float) -> str:
        if self.state is ConnectionState.CONNECTED:
            via = " via relay" if self.relay else ""
            latency = f" {self.latency * 1000:.0f} ms" if self.latency is not None else ""
            shown = f"{self.label}: connected{via}{latency}"
        elif self.state is ConnectionState.DISCONNECTED and self.retry_at is not None:
            shown = f"{self.label}: reconnecting (next try in {max(0.0, self.retry_at - now):.0f} s)"
        elif self.state is ConnectionState.DISCONNECTED:
            shown = f"{self.label}: disconnected"
        else:
            shown = f"{self.label}: {self.state.value}"
        if self.dropped:
            shown += f", {self.dropped} skipped"
        return shown


class StatusLine(Static):
    """See the module docstring."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.hosts: dict[str, HostStatus] = {}
        self.events_per_second = 0.0
        self.notice = ""
        self.extra = ""
        """Besides hosts and rates: the sort and filter in use."""
        self.plain = ""
        """What is shown (tests read it)."""

    def host(self, label: str) -> HostStatus:
        if label not in self.hosts:
            self.hosts[label] = HostStatus(label)
        return self.hosts[label]

    def say(self, notice: str) -> None:
        self.notice = notice
        self.redraw()

    def redraw(self) -> None:
        now = time.monotonic()
        hosts = " | ".join(status.text(now) for status in self.hosts.values()) or "no host"
        first = f"{hosts} | {self.events_per_second:.0f} events/s"
        if self.extra:
            first += f" | {self.extra}"
        plain = first + ("\n" + self.notice if self.notice else "\n")
        if plain != self.plain:
            self.plain = plain
            self.update(Text(plain))
