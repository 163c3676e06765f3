"""The dashboard's screenshot in the docs (``docs/images/top.svg``), taken against the demo daemon.

Starts the demo's simulated daemon (a :class:`~daemon_client.testing.FakeDaemon` with a varied
:class:`~daemon_client.testing.simulation.Simulation`, quicker than the demo's so that every
state shows within seconds), runs ``TopApp`` headless with Textual's ``run_test``, waits until an
agent waits for a permission, one failed and one was canceled, selects the one waiting, and
saves the screen as SVG with Textual's ``save_screenshot``. Redo it after changing the look::

    python docs/_tooling/top_screenshot.py            # writes docs/images/top.svg
    python docs/_tooling/top_screenshot.py --out /tmp/top.svg

Needs the ``tui`` and ``demo`` extras. Runs an asyncio loop on the main thread; the fake
daemon's threads are stopped before it returns.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

import daemon_client as dc
from daemon_client.testing import FakeDaemon
from daemon_client.testing.simulation import Simulation
from daemon_client.tui import TopApp

OUT = Path(__file__).resolve().parents[1] / "images" / "top.svg"
SIZE = (150, 40)
BOUND = 60.0


async def _take(url: str, out: Path) -> None:
    app = TopApp([dc.Host("desktop", [url])])
    async with app.run_test(size=SIZE) as pilot:

        def statuses() -> set[str]:
            return {row.status for row in app.source.rows.values()}

        def seen(text: str) -> bool:
            return any(text in "\n".join(feed.lines) for feed in app.source.feeds.values())

        deadline = time.monotonic() + BOUND
        while time.monotonic() < deadline:
            waiting = [key for key, row in app.source.rows.items() if row.permissions]
            if waiting and "error" in statuses() and seen("-- turn canceled"):
                break
            await pilot.pause(0.2)
        else:
            raise SystemExit("the demo did not show every state in time")
        table: Any = app.table
        table.move_cursor(row=table.get_row_index(waiting[0]))
        await pilot.pause(1.5)  # the detail pane follows, then one more repaint
        app.save_screenshot(filename=out.name, path=str(out.parent))
        await pilot.press("q")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"the SVG to write (default {OUT})")
    args = parser.parse_args(argv)
    with FakeDaemon() as fake:
        simulation = Simulation(fake, varied=True, chunk_delay=0.02, pause=0.4, cancel_after=2.0, seed=7)
        url = fake.serve()
        with simulation:
            asyncio.run(_take(url, args.out))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
