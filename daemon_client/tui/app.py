"""``TopApp``: the dashboard's Textual application — layout, keys and the actions behind them.

Everything here runs on the application's asyncio loop thread (the thread that calls
``app.run()`` or ``run_test()``), which is also where the client's callbacks run (see
:mod:`daemon_client.tui.source`). Timers repaint: the table and the detail pane at most ten times
a second from what changed, the status line every second. Blocking client calls (answering a
permission, sending, cancelling, archiving, reading history or terminals) run on Textual thread
workers, which hand their outcome back to the loop without waiting. Attaching to a terminal
suspends the application and runs the ``attach`` view in the foreground, then resumes.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import App, SuspendNotSupported
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Input

from daemon_client.errors import DaemonClientError
from daemon_client.fleet import Fleet
from daemon_client.state import ConnectionState
from daemon_client.tui.detail import DetailPane
from daemon_client.tui.screens import ConfirmScreen
from daemon_client.tui.source import FleetFactory, FleetSource, describe
from daemon_client.tui.status import StatusLine
from daemon_client.tui.table import AgentTable

if TYPE_CHECKING:
    from daemon_client.api.agents.handle import AgentHandle
    from daemon_client.discovery.profiles import Host
    from daemon_client.protocol.timeline import TimelinePage
    from daemon_client.tui.rows import AgentRow

AttachRunner = Callable[[str, str], object]
"""``attach(host_label, terminal_id)``: the attach view, in the foreground (the app is suspended)."""
REPAINT = 0.1
PING_EVERY = 2.0
PAGE = 50
CALL_TIMEOUT = 15.0


class TopApp(App[int]):
    """The dashboard. ``hosts``: the hosts to follow (a :class:`~daemon_client.Fleet` is made of
    them, its callbacks on this app's loop); or ``make_fleet(executor)`` for a fleet made
    otherwise (tests). ``attach``: how to open a terminal (default: none, the status line says
    so); ``duration``: quit after that many seconds. ``fleet_options`` go to the fleet. The keys
    are listed in ``daemon-client top --help``."""

    TITLE = "daemon-client top"
    CSS = """
    #filter { dock: top; height: 3; }
    AgentTable { height: 1fr; }
    DetailPane { height: 1fr; border-top: solid $accent; }
    #detail-header { color: $text; }
    #prompt { dock: bottom; height: 3; display: none; }
    #prompt.shown { display: block; }
    StatusLine { dock: bottom; height: 2; background: $panel; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "quit"),
        Binding("slash", "focus_filter", "filter"),
        Binding("escape", "leave", "back", show=False),
        Binding("s", "sort", "sort"),
        Binding("S", "sort(True)", "reverse", show=False),
        Binding("a", "answer(True)", "allow"),
        Binding("d", "answer(False)", "deny"),
        Binding("p", "prompt", "prompt"),
        Binding("c", "cancel_turn", "cancel"),
        Binding("x", "archive", "archive"),
        Binding("t", "terminal", "terminal"),
        Binding("h,home", "older", "history"),
    ]

    def __init__(
        self,
        hosts: Sequence[Host] = (),
        *,
        make_fleet: FleetFactory | None = None,
        attach: AttachRunner | None = None,
        duration: float | None = None,
        open_timeout: float = 15.0,
        **fleet_options: Any,
    ) -> None:
        super().__init__()
        if make_fleet is None:
            listed = list(hosts)
            if not listed:
                raise ValueError("TopApp needs hosts or make_fleet")

            def make_fleet(executor: Any) -> Fleet:
                return Fleet(listed, callback_executor=executor, **fleet_options)

        self._attach_view = attach
        self._duration = duration
        self.source = FleetSource(make_fleet, self._rows_changed, self._host_changed, open_timeout=open_timeout)
        self.table = AgentTable(id="agents")
        self.detail = DetailPane(id="detail")
        self.status = StatusLine(id="status")
        self._closer: threading.Thread | None = None
        self._counted = (time.monotonic(), 0)

    def compose(self) -> Any:
        yield Input(placeholder="filter (/): words, status:running, host:NAME, label:KEY=VALUE", id="filter")
        yield self.table
        yield self.detail
        yield Input(placeholder="prompt for the selected agent (Enter sends, Escape drops)", id="prompt")
        yield self.status
        yield Footer()

    def on_mount(self) -> None:
        self.table.agents = self.source.rows
        self.status.notice = "connecting…"
        self.source.start()
        self.set_interval(REPAINT, self._repaint)
        self.set_interval(1.0, self._every_second)
        self.set_interval(PING_EVERY, self._ping)
        if self._duration is not None:
            self.set_timer(self._duration, self.action_quit)
        self.table.focus()

    async def on_unmount(self) -> None:
        await self.shutdown()

    async def shutdown(self) -> None:
        """Stop following and close the fleet, on a thread awaited without blocking the loop."""
        if self._closer is None:
            self.source.release()
            self._closer = threading.Thread(target=self.source.close, name="top-close", daemon=True)
            self._closer.start()
        deadline = time.monotonic() + 8.0
        while self._closer.is_alive() and time.monotonic() < deadline:
            await asyncio.sleep(0.02)

    async def action_quit(self) -> None:
        await self.shutdown()
        self.exit(0)

    # ------------------------------------------------------------------ fed by the source
    def _rows_changed(self, keys: set[str]) -> None:
        self.table.mark(keys)

    def _host_changed(self, label: str, state: ConnectionState, reason: str) -> None:
        host = self.status.host(label)
        host.note_state(state, reason)
        host.relay = state is ConnectionState.CONNECTED and self.source.relayed(label)
        if state is ConnectionState.CONNECTED and self.status.notice == "connecting…":
            self.status.notice = ""
        self.status.redraw()

    # ------------------------------------------------------------------ timers
    def _repaint(self) -> None:
        self.table.flush()
        key = self.table.selected_key
        if key != self.detail.key:
            self._select(key)
        self.detail.redraw(self.source.rows.get(key) if key else None, self.source.feeds.get(key) if key else None)

    def _every_second(self) -> None:
        now, events = time.monotonic(), self.source.events
        before, counted = self._counted
        self.status.events_per_second = (events - counted) / max(1e-3, now - before)
        self._counted = (now, events)
        for label, host in self.status.hosts.items():
            host.dropped = self.source.dropped(label)
        if self.source.open_error is not None:
            self.status.notice = f"cannot read the agents: {describe(self.source.open_error)}"
        shown, total = self.table.row_count, len(self.source.rows)
        filtered = f" of {total} (filter: {self.table.row_filter.text})" if self.table.row_filter.text else ""
        noun = "agent" if (total if filtered else shown) == 1 else "agents"
        self.status.extra = f"{shown}{filtered} {noun}, by {self.table.sort_name}"
        self.table.refresh_ages()
        self.status.redraw()

    def _ping(self) -> None:
        self.run_worker(self._ping_hosts(), group="ping", exclusive=True, exit_on_error=False)

    async def _ping_hosts(self) -> None:
        for label, latency in (await self.source.ping()).items():
            self.status.host(label).latency = latency

    # ------------------------------------------------------------------ selection and history
    def _select(self, key: str | None) -> None:
        self.detail.show(key)
        feed = self.source.feeds.get(key) if key else None
        if key is not None and feed is not None and not feed.history_read:
            feed.history_read = True
            self._read_page(key)

    def _read_page(self, key: str) -> None:
        handle, feed = self.source.handle(key), self.source.feeds.get(key)
        if handle is None or feed is None:
            return
        cursor = feed.oldest

        def read() -> TimelinePage:
            direction = "before" if cursor is not None else "tail"
            return handle.timeline.refetch(direction, cursor, PAGE, timeout=CALL_TIMEOUT)

        self._in_worker(read, lambda page: self._page_read(key, page), "")

    def _page_read(self, key: str, page: TimelinePage) -> None:
        feed = self.source.feeds.get(key)
        if feed is None:
            return
        added = feed.prepend(page)
        if key == self.detail.key:
            self.detail.older_shown(added)

    def on_detail_pane_reached_top(self, _message: DetailPane.ReachedTop) -> None:
        feed = self.source.feeds.get(self.detail.key) if self.detail.key else None
        if feed is not None and feed.has_older:
            self.action_older()

    def action_older(self) -> None:
        key = self.detail.key
        feed = self.source.feeds.get(key) if key else None
        if key is None or feed is None:
            return
        if not feed.has_older:
            self.status.say("no older history")
            return
        self._read_page(key)

    # ------------------------------------------------------------------ keys
    def action_focus_filter(self) -> None:
        self.query_one("#filter", Input).focus()

    def action_leave(self) -> None:
        prompt = self.query_one("#prompt", Input)
        prompt.remove_class("shown")
        prompt.value = ""
        self.table.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.table.set_filter(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            self.table.focus()
            return
        text = event.value.strip()
        self.action_leave()
        selected = self._selected()
        if selected is None or not text:
            return
        row, handle = selected
        self._in_worker(lambda: handle.send(text, timeout=CALL_TIMEOUT), lambda _: None, f"sent to {row.title}")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value is not None:
            self._select(str(event.row_key.value))

    def action_sort(self, reverse: bool = False) -> None:
        self.table.cycle_sort(reverse)
        self.status.say(f"sorted by {self.table.sort_name}")

    def _selected(self) -> tuple[AgentRow, AgentHandle] | None:
        key = self.table.selected_key
        row = self.source.rows.get(key) if key else None
        handle = self.source.handle(key) if key else None
        if row is None or handle is None:
            self.status.say("no agent selected")
            return None
        return row, handle

    def action_answer(self, allow: bool) -> None:
        selected = self._selected()
        if selected is None:
            return
        row, handle = selected
        pending = row.snapshot.pending_permissions if row.snapshot is not None else ()
        if not pending:
            self.status.say(f"{row.title} has no pending permission")
            return
        request = pending[0]
        what = f"{'allowed' if allow else 'denied'}: {request.title or request.name} ({row.title})"
        self._in_worker(lambda: handle.respond_to_permission(request.id, allow=allow), lambda _: None, what)

    def action_prompt(self) -> None:
        if self._selected() is None:
            return
        prompt = self.query_one("#prompt", Input)
        prompt.add_class("shown")
        prompt.focus()

    def action_cancel_turn(self) -> None:
        selected = self._selected()
        if selected is not None:
            row, handle = selected
            self._in_worker(lambda: handle.cancel(timeout=CALL_TIMEOUT), lambda _: None, f"canceled: {row.title}")

    def action_archive(self) -> None:
        selected = self._selected()
        if selected is None:
            return
        row, handle = selected

        def answered(yes: bool | None) -> None:
            if yes:
                self._in_worker(lambda: handle.archive(timeout=CALL_TIMEOUT), lambda _: None, f"archived: {row.title}")
            else:
                self.status.say("not archived")

        self.push_screen(ConfirmScreen(f"Archive {row.title} on {row.host}? Its run is interrupted."), answered)

    def action_terminal(self) -> None:
        selected = self._selected()
        if selected is None:
            return
        row, _ = selected
        cwd = row.snapshot.cwd if row.snapshot is not None else ""
        client = self.source.fleet[row.host] if self.source.fleet is not None else None
        if client is None or not cwd:
            self.status.say(f"{row.title} has no terminal")
            return

        def found(terminals: Any) -> None:
            if not terminals.terminals:
                self.status.say(f"{row.title} has no terminal (none runs in {cwd})")
            elif self._attach_view is None:
                self.status.say("attaching is not available here")
            else:
                self._run_attach(row.host, terminals.terminals[0].id)

        self._in_worker(lambda: client.terminals.list(cwd=cwd, timeout=CALL_TIMEOUT), found, "")

    def _run_attach(self, host: str, terminal_id: str) -> None:
        assert self._attach_view is not None
        if self.is_headless:  # nothing to hand over (tests): the view runs as it is
            self._attach_view(host, terminal_id)
        else:
            try:
                with self.suspend():  # the attach view owns the terminal until it detaches
                    self._attach_view(host, terminal_id)
            except SuspendNotSupported:
                self.status.say("this terminal cannot be handed over to the attach view (no suspend here)")
                return
        self.status.say(f"detached from terminal {terminal_id}")

    # ------------------------------------------------------------------ workers
    def _in_worker(self, call: Callable[[], Any], then: Callable[[Any], None], done: str) -> None:
        """Run ``call`` on a thread worker; on the loop, ``then(result)`` and the notice ``done``,
        or the error in the status line."""
        post = self.source.post

        def work() -> None:
            try:
                result = call()
            except (DaemonClientError, TimeoutError, KeyError) as exc:
                failure = f"failed: {describe(exc)}"
                post(lambda: self.status.say(failure))
                return

            def finish() -> None:
                then(result)
                if done:
                    self.status.say(done)

            post(finish)

        self.run_worker(work, thread=True, exit_on_error=False)
