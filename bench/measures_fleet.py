"""The fleet figure: one host's stream through a fleet of three against one client alone.

The fleet holds three hosts: the first streams, the second is connected and idle, the third is
down (nothing listens at its address; its client keeps retrying in the background). Its events
per second, divided by those of a plain client of the same server in the same run (the two
taking turns), must stay at 0.9 or more: following several hosts, one of them down, costs a
host's stream almost nothing. Runs on the bench's own threads.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import daemon_client as dc
from bench.measures import Figure, Rate, _client_run, _rate, _timeline_server, median_rates

FLEET_FIGURE = "fleet of 3 (one down) vs one client, per host"


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _fleet_run(urls: list[str], down: int, count: int) -> Rate:
    done = threading.Event()
    seen = [0]

    def handler(update: dc.TimelineUpdate) -> None:
        if update.type == "timeline":
            seen[0] += 1
            if seen[0] == count:
                done.set()

    hosts = [dc.Host("streaming", [urls[0]]), dc.Host("idle", [urls[1]]), dc.Host("down", [f"127.0.0.1:{down}"])]
    fleet = dc.Fleet(hosts, heartbeat=dc.Heartbeat(enabled=False), connect_timeout=5.0)
    try:
        connected = fleet.connect(10.0)
        if not isinstance(connected["streaming"], dc.ServerInfo):
            raise RuntimeError(f"the streaming host did not connect: {connected['streaming']!r}")
        client = fleet["streaming"]
        sub = client.agents.ref("agent-0").timeline.subscribe(handler)
        sub.ready.result(30)
        started, cpu_started = time.perf_counter(), time.process_time()
        client.request_async({"type": "blast"}, timeout=120)
        if not done.wait(300):
            raise RuntimeError(f"only {seen[0]} of {count} events arrived through the fleet")
        return _rate(count, started, cpu_started)
    finally:
        fleet.close()


def fleet_per_host(count: int) -> Figure:
    """See the module docstring."""
    streaming = _timeline_server(count, prepare=(1,))
    idle = _timeline_server(1)
    down = _closed_port()
    measures: tuple[Callable[[], Rate], ...] = (
        lambda: _client_run(streaming.url, count, 1),
        lambda: _fleet_run([streaming.url, idle.url], down, count),
    )
    try:
        alone, in_fleet = median_rates(3, *measures)
    finally:
        streaming.close()
        idle.close()
    ratio = in_fleet.per_s / alone.per_s
    return Figure(FLEET_FIGURE, ratio, "x", ">= 0.9", ratio >= 0.9,
                  {"fleet_events_per_s": round(in_fleet.per_s), "client_events_per_s": round(alone.per_s),
                   "fleet_cpu_us_per_event": round(in_fleet.cpu_us, 2),
                   "client_cpu_us_per_event": round(alone.cpu_us, 2), "events": count})  # fmt: skip
