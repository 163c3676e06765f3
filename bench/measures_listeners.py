"""Ten local listeners on one observation against one: what the client controls of fan-out.

One agent directory observation (``client.agents.list(subscribe=True)``) on an owned-subscription
host, whose daemon sends each ``agent_update`` once, tagged with the observation's ID; the client
then calls one ``update`` callback, or ten registered on the same observation
(``observation.subscribe(update=...)`` ×10). The clock stops when every callback got every
update; the rate counts each update once. Target: ten deliver ≥ 0.8× the updates per second of
one (issue decision: ten *owned* subscriptions cost ten frames per event by the protocol, which
the fan-out figure reports). Runs on the bench's own threads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import daemon_client as dc
from bench.measures import Figure, Rate, _rate, median_rates
from bench.servers import LoopbackServer, reply
from bench.wire import text_frame

LISTENERS = 10
FIGURE = f"{LISTENERS} local listeners on one observation / 1"
_AGENT: dict[str, Any] = {
    "id": "3db4688e-f064-4a31-ac4f-4adea577f755", "provider": "mock", "cwd": "/home/dev/projects/demo",
    "model": "ten-second-stream", "createdAt": "2026-12-03T16:32:45.240Z", "updatedAt": "2026-12-03T16:32:45.240Z",
    "lastUserMessageAt": None, "status": "running", "capabilities": {"supportsStreaming": True},
    "currentModeId": None, "availableModes": [], "pendingPermissions": [], "title": "bench", "labels": {},
    "requiresAttention": False, "archivedAt": None,
}  # fmt: skip


def _directory_server(count: int) -> LoopbackServer:
    """Answers one subscribing ``fetch_agents_request`` (ID ``d-1``); on ``blast`` sends ``count``
    ``agent_update`` upserts of one agent tagged with it (encoded once, up front)."""

    def update(n: int) -> bytes:
        agent = {**_AGENT, "updatedAt": f"2026-12-03T16:{n % 60:02d}:00Z"}
        payload = {"kind": "upsert", "subscriptionId": "d-1", "agent": agent}
        return text_frame({"type": "session", "message": {"type": "agent_update", "payload": payload}})

    frames = b"".join(update(n) for n in range(count))

    def handler(sock: Any, buffer: bytearray, frame: dict[str, Any]) -> bool:
        message = frame.get("message", {})
        kind = message.get("type")
        if kind == "fetch_agents_request":
            page = {"nextCursor": None, "prevCursor": None, "hasMore": False}
            sock.sendall(reply(message, {"subscriptionId": "d-1", "entries": [], "pageInfo": page},
                               "fetch_agents_response"))  # fmt: skip
        elif kind == "blast":
            sock.sendall(frames)
        elif kind == "subscription.release.request":
            sock.sendall(reply(message, {"subscriptionId": message["subscriptionId"]}, "subscription.release.response"))
        return True

    return LoopbackServer(handler)


def _listeners_run(url: str, count: int, listeners: int) -> Rate:
    done = threading.Event()
    seen = [0] * listeners
    finished = [0]

    def make(index: int) -> Callable[[Any], None]:
        def update(_message: Any) -> None:
            seen[index] += 1
            if seen[index] == count:
                finished[0] += 1
                if finished[0] == listeners:
                    done.set()

        return update

    with dc.connect(url, heartbeat=dc.Heartbeat(enabled=False)) as client:
        observation = client.agents.list(subscribe=True).subscription
        assert observation is not None
        for index in range(listeners):
            observation.subscribe(update=make(index))
        client.flush_callbacks(30)
        started, cpu_started = time.perf_counter(), time.process_time()
        client.request_async({"type": "blast"}, timeout=120)
        if not done.wait(300):
            raise RuntimeError(f"only {sum(seen)} of {count * listeners} updates arrived")
        return _rate(count, started, cpu_started)


def local_listeners(count: int) -> Figure:
    """See the module docstring."""
    server = _directory_server(count)
    try:
        one, many = median_rates(
            3, lambda: _listeners_run(server.url, count, 1), lambda: _listeners_run(server.url, count, LISTENERS)
        )
    finally:
        server.close()
    ratio = many.per_s / one.per_s
    return Figure(FIGURE, ratio, "x", ">= 0.8", ratio >= 0.8,
                  {"one_listener_updates_per_s": round(one.per_s), "ten_listeners_updates_per_s": round(many.per_s),
                   "wire_frames_per_update": 1, "one_cpu_us_per_update": round(one.cpu_us, 2),
                   "ten_cpu_us_per_update": round(many.cpu_us, 2), "updates": count})  # fmt: skip
