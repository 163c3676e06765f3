"""The dashboard's plain parts: ages, the filter's words, the status line's host text, the
timeline feed (chunks joined, history before live rows without repeats), and how ``top`` runs
the app and the attach view."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

pytest.importorskip("textual")

import daemon_client as dc
from daemon_client.protocol.agents import AgentSnapshot, RuntimeInfo
from daemon_client.protocol.timeline import (
    AssistantMessage,
    TimelineCursor,
    TimelineEntry,
    TimelineEvent,
    TimelinePage,
    TimelineUpdate,
    TurnStarted,
    UserMessage,
)
from daemon_client.state import ConnectionState
from daemon_client.tui.feed import AgentFeed
from daemon_client.tui.rows import RowFilter, age_text, model_text, row_from
from daemon_client.tui.status import HostStatus


def test_ages() -> None:
    assert [age_text(s) for s in (-1, 0, 59, 60, 3599, 3600, 86399, 86400 * 3)] == [
        "0s", "0s", "59s", "1m", "59m", "1h", "23h", "3d",
    ]  # fmt: skip


def test_the_filter_words() -> None:
    row = row_from("laptop", AgentSnapshot("a1", provider="claude", status="running", title="Fix CI",
                                           labels={"team": "web"}))  # fmt: skip
    assert RowFilter("").matches(row)
    assert RowFilter("fix").matches(row)
    assert RowFilter("status:run host:lap label:team=web").matches(row)
    assert RowFilter("LAPTOP ci").matches(row)
    assert not RowFilter("status:idle").matches(row)
    assert not RowFilter("host:desktop").matches(row)
    assert not RowFilter("label:team=docs").matches(row)
    assert not RowFilter("fix nothing").matches(row)
    assert RowFilter("model:x").terms() == [("", "model:x")]  # not a field: a plain word


def test_the_model_column() -> None:
    assert model_text(AgentSnapshot("a", provider="claude", model="opus")) == "claude/opus"
    assert model_text(AgentSnapshot("a", provider="codex", runtime_info=RuntimeInfo(model="gpt"))) == "codex/gpt"
    assert model_text(AgentSnapshot("a", provider="mock")) == "mock"


def test_a_host_in_the_status_line() -> None:
    host = HostStatus("laptop")
    host.note_state(ConnectionState.CONNECTED, "")
    host.latency, host.relay, host.dropped = 0.0123, True, 7
    assert host.text(0.0) == "laptop: connected via relay 12 ms, 7 skipped"
    host.note_state(ConnectionState.DISCONNECTED, "connection lost; reconnecting in 3.00 s")
    assert host.latency is None
    assert host.retry_at is not None
    assert host.text(host.retry_at - 2.2) == "laptop: reconnecting (next try in 2 s), 7 skipped"
    host.note_state(ConnectionState.DISCONNECTED, "closed")
    assert host.text(0.0).startswith("laptop: disconnected")
    host.note_state(ConnectionState.CONNECTING, "")
    assert host.text(0.0).startswith("laptop: connecting")


def _live(seq: int, item: Any) -> TimelineUpdate:
    return TimelineUpdate("a", TimelineEvent(item), seq=seq, epoch="e1")


def test_the_feed_joins_chunks_and_puts_history_before_live_rows_once() -> None:
    feed = AgentFeed()
    assert feed.apply(TimelineUpdate("a", TurnStarted()))
    assert feed.apply(_live(5, AssistantMessage("first li")))
    assert feed.apply(_live(6, AssistantMessage("ne\nsecond line")))
    assert feed.lines == ["-- turn started", "first line\nsecond line"]
    assert feed.last_line == "second line"
    assert feed.oldest == TimelineCursor("e1", 5)
    page = TimelinePage(
        entries=(
            TimelineEntry(UserMessage("older"), seq_start=3, seq_end=3),
            TimelineEntry(AssistantMessage("an answer"), seq_start=4, seq_end=4),
            TimelineEntry(AssistantMessage("first line"), seq_start=5, seq_end=6),  # live has it
        ),
        epoch="e1",
        start_cursor=TimelineCursor("e1", 3),
        has_older=True,
    )
    assert feed.prepend(page) == 2
    assert feed.lines[:2] == ["> older", "an answer"]
    assert feed.oldest == TimelineCursor("e1", 3)
    assert feed.has_older


def test_dashboard_runs_the_app_with_the_fleet_options(monkeypatch: pytest.MonkeyPatch) -> None:
    from daemon_client.cli.actions import top
    from daemon_client.tui import TopApp

    made: list[dict[str, Any]] = []

    def run(self: TopApp, *args: Any, **kwargs: Any) -> None:
        made.append({"attach": self._attach_view, "duration": self._duration})

    monkeypatch.setattr(TopApp, "run", run)
    assert top.dashboard([dc.Host("laptop", ["127.0.0.1:7001"])], {"laptop": "laptop"}, duration=3.0) == 0
    [app] = made
    assert app["duration"] == 3.0
    assert callable(app["attach"])


def test_the_attach_view_is_the_attach_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from daemon_client.cli.actions import top

    ran: list[tuple[list[str], str | None]] = []

    def fake_run(command: list[str], *, env: dict[str, str], check: bool) -> subprocess.CompletedProcess[str]:
        ran.append((command, env.get("PASEO_PASSWORD")))
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(top.subprocess, "run", fake_run)
    assert top.attach_runner({"daemon": "127.0.0.1:7001"}, "s3cret")("daemon", "term-1") == 0
    assert ran == [([sys.executable, "-m", "daemon_client", "attach", "--host", "127.0.0.1:7001", "term-1"], "s3cret")]
