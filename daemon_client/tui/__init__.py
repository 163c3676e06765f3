"""``daemon-client top``: a live dashboard of every agent of a fleet, on Textual (the ``tui`` extra).

* :mod:`~daemon_client.tui.app`: :class:`TopApp`, the application (keys, layout, actions);
* :mod:`~daemon_client.tui.source`: the fleet it follows and what its callbacks feed;
* :mod:`~daemon_client.tui.table`: the agent table, updated in place from a dirty set;
* :mod:`~daemon_client.tui.detail`: the selected agent's timeline, live, with history pages;
* :mod:`~daemon_client.tui.status`: the status line (hosts, latency, events/s, skips);
* :mod:`~daemon_client.tui.rows`, :mod:`~daemon_client.tui.feed`: the plain data behind them.

Everything runs on the application's asyncio loop (the main thread of ``daemon-client top``),
except the blocking client calls, which run on Textual thread workers. Importing this package
without Textual raises :class:`~daemon_client.errors.MissingExtra` naming the extra.
"""

from __future__ import annotations

from daemon_client.errors import MissingExtra

INSTALL = "pip install 'daemon-client[tui]'"
"""How to get what this package needs."""

try:
    import textual  # noqa: F401 - probed: the whole package is built on it
except ImportError as exc:  # pragma: no cover - exercised with textual hidden
    raise MissingExtra(f"daemon-client top needs the 'tui' extra (textual is missing): {INSTALL}") from exc

from daemon_client.tui.app import TopApp  # noqa: E402 - after the probe

__all__ = ["INSTALL", "TopApp"]
