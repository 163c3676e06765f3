"""The detail pane: the selected agent's header and its timeline, as its feed holds it.

Runs on the application's loop thread. :meth:`DetailPane.show` switches to an agent;
:meth:`DetailPane.redraw` (the application's timer, at most 10 times a second) repaints only
when the agent's feed or row changed. History pages are read by the application on a worker
thread (asked for with a key, or by scrolling back to the top) and prepended to the feed; the
pane keeps the reader's place when they arrive.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static

from daemon_client.tui.feed import AgentFeed
from daemon_client.tui.rows import AgentRow

SHOWN = 400
"""Timeline entries drawn at once (the newest, plus the history pages read)."""


class DetailPane(VerticalScroll):
    """See the module docstring. Scrolling back to the top posts :class:`DetailPane.ReachedTop`
    (the application then reads an older page)."""

    class ReachedTop(Message):
        """The reader scrolled back to the top of the timeline."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.key: str | None = None
        self._header = Static(id="detail-header")
        self._body = Static(id="detail-body")
        self._drawn: tuple[int, str] | None = None
        self._plain = ""
        self.header_text = ""
        self._extra = 0
        """Entries shown beyond :data:`SHOWN` (history pages read)."""

    def compose(self) -> Any:
        yield self._header
        yield self._body

    def show(self, key: str | None) -> None:
        if key != self.key:
            self.key = key
            self._drawn = None
            self._extra = 0

    def older_shown(self, count: int) -> None:
        """A history page of ``count`` entries was prepended: keep them on screen."""
        self._extra += count

    @property
    def text(self) -> str:
        """What the body shows (tests read it)."""
        return self._plain

    def redraw(self, row: AgentRow | None, feed: AgentFeed | None) -> None:
        if row is None:
            if self._drawn != (-1, ""):
                self._header.update(Text("no agent selected", style="dim"))
                self._body.update("")
                self._plain = self.header_text = ""
                self._drawn = (-1, "")
            return
        perms = ""
        if row.snapshot is not None and row.snapshot.pending_permissions:
            request = row.snapshot.pending_permissions[0]
            perms = f"\npermission pending: {request.title or request.name} (a: allow, d: deny)"
        header = (
            f"{row.title}  [{row.host}]  {row.model}  {row.shown_status()}"
            f"{'  ' + row.labels_text() if row.labels_text() else ''}{perms}"
        )
        version = feed.version if feed is not None else 0
        state = (version, header)
        if state == self._drawn:
            return
        at_end = self.scroll_y >= self.max_scroll_y - 1
        self._drawn = state
        self._header.update(Text(header, style="bold"))
        lines = feed.lines if feed is not None else []
        limit = SHOWN + self._extra
        shown = lines[-limit:]
        more = ""
        if feed is not None and (len(lines) > limit or feed.has_older):
            more = "(h or Home: older history)\n"
        before = self.max_scroll_y
        self._plain = more + "\n".join(shown)
        self.header_text = header
        self._body.update(Text(self._plain))
        if at_end:
            self.call_after_refresh(self.scroll_end, animate=False)
        elif self.scroll_y <= 0 and self._extra:
            self.call_after_refresh(self._keep_place, before)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if old_value > 0 >= new_value and self.key is not None:
            self.post_message(self.ReachedTop())

    def _keep_place(self, before: float) -> None:
        self.scroll_to(y=max(0.0, self.max_scroll_y - before), animate=False)
