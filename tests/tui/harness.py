"""Drive a ``TopApp`` with Textual's pilot against a fake daemon served on loopback.

``drive(fake, scenario)`` runs ``scenario(app, pilot)`` inside ``app.run_test()`` from a plain
``asyncio.run`` (no pytest plugin); :func:`until` waits, bounded, for a condition while the app
keeps running.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import daemon_client as dc
from daemon_client.testing import FakeDaemon
from daemon_client.tui import TopApp
from daemon_client.tui.rows import row_key

BOUND = 20.0
HOST = "local"
Scenario = Callable[[TopApp, Any], Awaitable[None]]
FAST = dc.ReconnectPolicy(base_delay=0.2, max_delay=0.5, retry_initial_connect=True)


async def until(pilot: Any, predicate: Callable[[], object], bound: float = BOUND) -> bool:
    """Let the app run until ``predicate()`` holds; False if it still does not after ``bound`` s."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if predicate():
            return True
        await pilot.pause(0.05)
    return bool(predicate())


def drive(fake: FakeDaemon, scenario: Scenario, **options: Any) -> None:
    url = fake.url

    async def main() -> None:
        app = TopApp([dc.Host(HOST, [url])], reconnect=FAST, **options)
        async with app.run_test(size=(160, 48)) as pilot:
            await scenario(app, pilot)
            await pilot.press("q")
        assert app.return_code == 0

    asyncio.run(main())


def cells(app: TopApp, agent_id: str) -> dict[str, str]:
    """The texts of an agent's row as the table shows it, by column key ({} if not shown)."""
    key = row_key(HOST, agent_id)
    if key not in app.table.shown_keys:
        return {}
    row = app.table.get_row(key)
    from daemon_client.tui.table import COLUMNS

    return {column: str(cell) for (column, _, _), cell in zip(COLUMNS, row, strict=True)}


async def select(app: TopApp, pilot: Any, agent_id: str) -> bool:
    """Move the table's cursor to the agent's row; True once the detail pane shows it."""
    key = row_key(HOST, agent_id)
    if not await until(pilot, lambda: key in app.table.shown_keys):
        return False
    app.table.move_cursor(row=app.table.get_row_index(key))
    return await until(pilot, lambda: app.detail.key == key)
