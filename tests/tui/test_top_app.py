"""The dashboard against a fake daemon, driven by Textual's pilot: rows appear and change in
place, the filter and the sort, permissions answered and turns canceled with keys, prompts,
archiving, history pages, a lost host in the status line, and a flood that never stops the keys."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

pytest.importorskip("textual")

import daemon_client as dc
from daemon_client.testing import FakeDaemon
from daemon_client.tui import TopApp
from daemon_client.tui.rows import row_key

from .harness import HOST, cells, drive, select, until


def test_rows_appear_and_change_in_place(fake: FakeDaemon) -> None:
    alpha = fake.agents.upsert(title="alpha", status="idle", labels={"team": "web"})["id"]
    beta = fake.agents.upsert(title="beta", status="idle")["id"]

    async def scenario(app: TopApp, pilot: Any) -> None:
        assert await until(pilot, lambda: app.table.row_count == 2)
        assert cells(app, alpha)["title"] == "alpha"
        assert cells(app, alpha)["labels"] == "team=web"
        assert cells(app, alpha)["status"].startswith("idle ")
        rebuilds = app.table.rebuilds
        fake.agents.upsert(beta, status="running", title="beta, renamed")
        assert await until(pilot, lambda: cells(app, beta).get("status", "").startswith("running "))
        assert cells(app, beta)["title"] == "beta, renamed"
        gamma = fake.agents.upsert(title="gamma")["id"]
        assert await until(pilot, lambda: "title" in cells(app, gamma))
        fake.agents.remove(alpha)
        assert await until(pilot, lambda: cells(app, alpha) == {})
        assert app.table.rebuilds == rebuilds  # changed cell by cell, never redrawn whole
        assert await until(pilot, lambda: f"{HOST}: connected" in app.status.plain)

    drive(fake, scenario)


def test_the_turn_streams_into_the_row_and_the_detail_pane(fake: FakeDaemon) -> None:
    agent = fake.agents.upsert(title="worker")["id"]

    async def scenario(app: TopApp, pilot: Any) -> None:
        assert await select(app, pilot, agent)
        fake.runs.send(agent, "What is the answer?")
        assert await until(pilot, lambda: cells(app, agent).get("last") == "The answer is 42.")
        assert await until(pilot, lambda: "-- turn completed" in app.detail.text)
        text = app.detail.text
        assert "> What is the answer?" in text
        assert "The answer is 42." in text
        assert "[tool read: completed]" in text

    drive(fake, scenario)


def test_the_filter_and_the_sort(fake: FakeDaemon) -> None:
    fake.agents.upsert(title="b-docs", status="idle", labels={"team": "docs"})
    running = fake.agents.upsert(title="a-build", status="running", labels={"team": "ci"})["id"]
    fake.agents.upsert(title="c-tests", status="error")

    async def scenario(app: TopApp, pilot: Any) -> None:
        assert await until(pilot, lambda: app.table.row_count == 3)
        await pilot.press("s")  # by title
        assert await until(pilot, lambda: [app.source.rows[k].title for k in app.table.shown_keys]
                           == ["a-build", "b-docs", "c-tests"])  # fmt: skip
        await pilot.press("S")  # reversed
        assert await until(pilot, lambda: [app.source.rows[k].title for k in app.table.shown_keys]
                           == ["c-tests", "b-docs", "a-build"])  # fmt: skip
        await pilot.press("slash", *"status:running")
        assert await until(pilot, lambda: app.table.shown_keys == [row_key(HOST, running)])
        await pilot.press("escape")
        assert await until(pilot, lambda: app.focused is app.table)  # keys are the table's again
        app.query_one("#filter").value = "label:team=docs"  # type: ignore[attr-defined]
        assert await until(pilot, lambda: [app.source.rows[k].title for k in app.table.shown_keys] == ["b-docs"])
        app.query_one("#filter").value = "TESTS"  # type: ignore[attr-defined]
        assert await until(pilot, lambda: [app.source.rows[k].title for k in app.table.shown_keys] == ["c-tests"])
        app.query_one("#filter").value = ""  # type: ignore[attr-defined]
        assert await until(pilot, lambda: app.table.row_count == 3)

    drive(fake, scenario)


def test_a_permission_is_allowed_with_a_key(fake: FakeDaemon) -> None:
    agent = fake.agents.upsert(title="pusher")["id"]

    async def scenario(app: TopApp, pilot: Any) -> None:
        assert await select(app, pilot, agent)
        fake.runs.send(agent, "ask permission to push")
        assert await until(pilot, lambda: cells(app, agent).get("perms") == "1")
        assert await until(pilot, lambda: "permission pending: Run git push" in app.detail.header_text)
        assert fake.runs.is_running(agent)  # the run waits for the answer
        await pilot.press("a")
        assert await until(pilot, lambda: not fake.runs.is_running(agent))
        assert await until(pilot, lambda: cells(app, agent).get("last") == "The answer is 42.")
        assert await until(pilot, lambda: cells(app, agent).get("perms") == "")
        assert "-- permission allow" in app.detail.text
        assert "allowed: Run git push" in app.status.plain

    drive(fake, scenario)


def test_a_permission_is_denied_with_a_key(fake: FakeDaemon) -> None:
    agent = fake.agents.upsert(title="pusher")["id"]

    async def scenario(app: TopApp, pilot: Any) -> None:
        assert await select(app, pilot, agent)
        fake.runs.send(agent, "ask permission to push")
        assert await until(pilot, lambda: cells(app, agent).get("perms") == "1")
        await pilot.press("d")
        assert await until(pilot, lambda: not fake.runs.is_running(agent))
        assert await until(pilot, lambda: "-- turn canceled: Permission denied" in app.detail.text)

    drive(fake, scenario)


def test_a_turn_is_canceled_with_a_key(fake: FakeDaemon) -> None:
    agent = fake.agents.upsert(title="slow")["id"]

    async def scenario(app: TopApp, pilot: Any) -> None:
        assert await select(app, pilot, agent)
        fake.runs.send(agent, "please hold")
        assert await until(pilot, lambda: cells(app, agent).get("status", "").startswith("running"))
        await pilot.press("c")
        assert await until(pilot, lambda: not fake.runs.is_running(agent))
        assert await until(pilot, lambda: "-- turn canceled" in app.detail.text)
        assert await until(pilot, lambda: cells(app, agent).get("status", "").startswith("idle"))

    drive(fake, scenario)


def test_a_prompt_is_sent_from_the_input(fake: FakeDaemon) -> None:
    agent = fake.agents.upsert(title="helper")["id"]

    async def scenario(app: TopApp, pilot: Any) -> None:
        assert await select(app, pilot, agent)
        await pilot.press("p", *"hello there", "enter")
        assert await until(pilot, lambda: "> hello there" in app.detail.text)
        assert await until(pilot, lambda: not fake.runs.is_running(agent))
        assert await until(pilot, lambda: cells(app, agent).get("last") == "The answer is 42.")

    drive(fake, scenario)


def test_archiving_asks_first(fake: FakeDaemon) -> None:
    agent = fake.agents.upsert(title="old")["id"]

    async def scenario(app: TopApp, pilot: Any) -> None:
        assert await select(app, pilot, agent)
        await pilot.press("x")
        assert await until(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
        await pilot.press("escape")
        assert await until(pilot, lambda: "not archived" in app.status.plain)
        assert fake.agents.get(agent)["archivedAt"] is None
        await pilot.press("x")
        assert await until(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
        await pilot.press("y")
        assert await until(pilot, lambda: fake.agents.get(agent)["archivedAt"] is not None)
        assert await until(pilot, lambda: "archived: old" in app.status.plain)

    drive(fake, scenario)


def test_an_agent_without_a_terminal_says_so(fake: FakeDaemon) -> None:
    agent = fake.agents.upsert(title="plain", cwd="/home/dev/projects/none")["id"]

    async def scenario(app: TopApp, pilot: Any) -> None:
        assert await select(app, pilot, agent)
        await pilot.press("t")
        assert await until(pilot, lambda: "plain has no terminal" in app.status.plain)

    drive(fake, scenario)


def test_an_agent_with_a_terminal_is_attached_while_the_app_is_suspended(fake: FakeDaemon) -> None:
    cwd = "/home/dev/projects/shell"
    agent = fake.agents.upsert(title="shell", cwd=cwd)["id"]
    terminal = fake.terminals.create(cwd=cwd)
    attached: list[tuple[str, str]] = []

    async def scenario(app: TopApp, pilot: Any) -> None:
        assert await select(app, pilot, agent)
        await pilot.press("t")
        assert await until(pilot, lambda: attached)
        assert await until(pilot, lambda: "detached from terminal" in app.status.plain)

    drive(fake, scenario, attach=lambda host, terminal_id: attached.append((host, terminal_id)))
    assert attached == [(HOST, terminal.id)]


def test_older_history_is_read_page_by_page(fake: FakeDaemon) -> None:
    agent = fake.agents.upsert(title="chatty")["id"]
    for n in range(120):
        fake.timeline.append(agent, {"type": "user_message", "text": f"row {n}"})

    async def scenario(app: TopApp, pilot: Any) -> None:
        assert await select(app, pilot, agent)
        assert await until(pilot, lambda: "> row 119" in app.detail.text)
        assert "> row 69\n" not in app.detail.text + "\n"  # one page: the newest 50
        await pilot.press("h")
        assert await until(pilot, lambda: "> row 20\n" in app.detail.text)
        app.detail.scroll_end(animate=False)
        assert await until(pilot, lambda: app.detail.scroll_y > 0)
        app.detail.scroll_home(animate=False)  # back at the top: the next page comes
        assert await until(pilot, lambda: "> row 0\n" in app.detail.text)
        await pilot.press("h")
        lines = [line for line in app.detail.text.splitlines() if line.startswith("> row ")]
        assert lines == [f"> row {n}" for n in range(120)]  # in order, none twice
        await pilot.press("h")
        assert await until(pilot, lambda: "no older history" in app.status.plain)

    drive(fake, scenario)


def test_a_lost_host_shows_in_the_status_line_until_it_is_back(fake: FakeDaemon) -> None:
    agent = fake.agents.upsert(title="survivor")["id"]

    async def scenario(app: TopApp, pilot: Any) -> None:
        key = row_key(HOST, agent)
        assert await until(pilot, lambda: f"{HOST}: connected" in app.status.plain and key in app.source.rows)
        fake.restart(downtime=1.5)
        assert await until(pilot, lambda: f"{HOST}: reconnecting" in app.status.plain or
                           f"{HOST}: connecting" in app.status.plain)  # fmt: skip
        assert await until(pilot, lambda: key in app.source.rows and app.source.rows[key].available is False)
        assert await until(pilot, lambda: f"{HOST}: connected" in app.status.plain)
        assert await until(pilot, lambda: key in app.source.rows and app.source.rows[key].available)
        assert await until(pilot, lambda: cells(app, agent)["status"].startswith("idle "))  # no "?" left

    drive(fake, scenario)


def test_a_flood_of_updates_never_stops_the_keys(fake: FakeDaemon) -> None:
    agents = [fake.agents.upsert(title=f"busy {n}")["id"] for n in range(5)]
    total = 50_000
    sent = [0]
    done = threading.Event()

    def flood() -> None:
        try:
            for n in range(total):
                fake.agents.upsert(agents[n % len(agents)], title=f"busy {n % len(agents)} #{n}")
                sent[0] = n + 1
        finally:
            done.set()

    async def scenario(app: TopApp, pilot: Any) -> None:
        assert await until(pilot, lambda: app.table.row_count == 5)
        flooder = threading.Thread(target=flood, name="test-flood")
        flooder.start()
        try:
            assert await until(pilot, lambda: sent[0] > 1000 or done.is_set())
            await pilot.press("slash", *"nothing-matches")
            assert await until(pilot, lambda: app.table.row_count == 0, bound=60)
            await pilot.press("escape", "s")
            assert await until(pilot, lambda: app.table.sort_name == "title", bound=60)
            app.query_one("#filter").value = ""  # type: ignore[attr-defined]
            assert await until(pilot, lambda: app.table.row_count == 5, bound=60)
        finally:
            assert done.wait(120)
            flooder.join(10)
        last = f"busy {(total - 1) % 5} #{total - 1}"  # the table catches up with the last one
        assert await until(pilot, lambda: last in [app.source.rows[k].title for k in app.table.shown_keys], 60)
        assert app.source.events >= 5

    drive(fake, scenario)


def test_skipped_updates_show_and_the_table_is_read_again_from_the_fresh_snapshot(fake: FakeDaemon) -> None:
    agent = fake.agents.upsert(title="hot")["id"]
    total = 2000

    def flood() -> None:
        for n in range(total):
            fake.agents.upsert(agent, title=f"hot #{n}")

    async def scenario(app: TopApp, pilot: Any) -> None:
        assert await until(pilot, lambda: cells(app, agent).get("title") == "hot")
        snapshots = app.source.snapshots
        flooder = threading.Thread(target=flood, name="test-flood")
        flooder.start()
        try:
            time.sleep(1.0)  # the loop is stuck on purpose: the client's callback queue overflows
        finally:
            flooder.join(60)
        assert await until(pilot, lambda: "skipped" in app.status.plain)  # the status line says so
        assert await until(pilot, lambda: cells(app, agent).get("title") == f"hot #{total - 1}")
        assert app.source.snapshots > snapshots  # the resync's snapshot replaced the rows

    drive(fake, scenario, flow_control=dc.FlowControl(max_events=50, max_bytes=None))
