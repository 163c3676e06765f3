"""Benchmark measurements under load: memory over a long stream, a slow consumer, and
restoring many observations after a daemon restart."""

from __future__ import annotations

import gc
import threading
import time
from typing import Any

import daemon_client as dc
from bench.measures import Figure, _percentiles
from bench.servers import LoopbackServer, reply, stream_frame

BATCH = 50_000
QUEUE_POLICY = "in order, bounded by FlowControl (default 100,000 events or 256 MiB; docs/threading.md); never replies"


def _rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _stream_server(batch: int = BATCH) -> LoopbackServer:
    blob = b"".join(stream_frame(i, "sub-0") for i in range(1, batch + 1))

    def handler(sock: Any, buffer: bytearray, frame: dict[str, Any]) -> bool:
        message = frame.get("message", {})
        kind = message.get("type")
        if kind == "agent.timeline.set_subscription.request":
            sock.sendall(reply(message, {"agentIds": message["agentIds"], "subscriptionId": "sub-0"},
                               "agent.timeline.set_subscription.response"))  # fmt: skip
        elif kind == "blast":
            for _ in range(int(message.get("batches", 1))):
                sock.sendall(blob)
        elif kind == "echo_request":
            sock.sendall(reply(message, {"ok": True}, "echo_response"))
        return True

    return LoopbackServer(handler)


def _consume(client: dc.Client, batches: int, handler_delay: float = 0.0, batch: int = BATCH) -> threading.Event:
    done = threading.Event()
    seen = [0]
    total = batches * batch

    def handler(update: dc.TimelineUpdate) -> None:
        if handler_delay:
            time.sleep(handler_delay)
        seen[0] += 1
        if seen[0] == total:
            done.set()

    client.agents.ref("agent").timeline.subscribe(handler).ready.result(30)
    client.request_async({"type": "blast", "batches": batches}, timeout=600)
    return done


def rss_growth(events: int) -> Figure:
    server = _stream_server()
    try:
        with dc.connect(server.url, heartbeat=dc.Heartbeat(enabled=False)) as client:
            if not _consume(client, 2).wait(300):  # warm-up
                raise RuntimeError("warm-up stream incomplete")
            gc.collect()
            before = _rss_bytes()
            if not _consume(client, max(1, events // BATCH)).wait(900):
                raise RuntimeError("stream incomplete")
            client.flush_callbacks(30)
            gc.collect()
            growth = _rss_bytes() - before
    finally:
        server.close()
    return Figure("RSS growth over a long stream", growth / 2**20, "MiB", "<= 5 MiB", growth <= 5 * 2**20,
                  {"events": max(1, events // BATCH) * BATCH})  # fmt: skip


def slow_consumer(events: int) -> Figure:
    """A handler sleeping 1 ms per event while ``events`` queue; requests meanwhile."""
    server = _stream_server(events)
    latencies: list[float] = []
    try:
        with dc.connect(server.url, heartbeat=dc.Heartbeat(enabled=False)) as client:
            gc.collect()
            before = _rss_bytes()
            done = _consume(client, 1, handler_delay=0.001, batch=events)
            time.sleep(0.5)  # let the backlog build
            queued = client._dispatcher.pending
            peak = _rss_bytes() - before
            while (not done.is_set() or len(latencies) < 5) and len(latencies) < 200:
                started = time.perf_counter()
                client.request({"type": "echo_request"})
                latencies.append(time.perf_counter() - started)
                time.sleep(0.01)
            done.wait(events * 0.005 + 30)  # let the backlog drain before closing
    finally:
        server.close()
    p50, p99 = _percentiles(latencies)
    return Figure("requests beside a slow consumer, p50", p50 * 1000, "ms", "< 5 ms", p50 < 0.005,
                  {"p99_ms": round(p99 * 1000, 2), "backlog_events": queued, "events": events,
                   "backlog_rss_mib": round(peak / 2**20, 1), "queue_policy": QUEUE_POLICY})  # fmt: skip


def flow_controlled_consumer(events: int, max_events: int) -> Figure:
    """A handler sleeping 1 ms per event under an ``events`` stream with ``FlowControl(max_events)``:
    RSS growth, requests meanwhile, and exact accounting (rows received + ``lagged`` ranges)."""
    server = _stream_server(events)
    latencies: list[float] = []
    state = {"received": 0, "dropped": 0, "next": 1, "gapless": True, "lagged": 0}
    done = threading.Event()

    def handler(update: dc.TimelineUpdate) -> None:
        event = update.event
        if isinstance(event, dc.Lagged):
            state["dropped"] += event.dropped
            state["lagged"] += 1
            state["gapless"] &= (
                event.first_seq == state["next"] and event.dropped == (event.last_seq or 0) - state["next"] + 1
            )
            state["next"] = (event.last_seq or 0) + 1
        elif update.seq is not None:  # a row (the close's error event is not one)
            time.sleep(0.001)
            state["received"] += 1
            state["gapless"] &= update.seq == state["next"]
            state["next"] += 1
        if state["received"] + state["dropped"] == events:
            done.set()

    flow = dc.FlowControl(max_events=max_events)
    try:
        with dc.connect(server.url, heartbeat=dc.Heartbeat(enabled=False), flow_control=flow) as client:
            gc.collect()
            before = _rss_bytes()
            client.agents.ref("agent").timeline.subscribe(handler).ready.result(30)
            client.request_async({"type": "blast", "batches": 1}, timeout=600)
            peak = 0
            while (not done.is_set() or len(latencies) < 5) and len(latencies) < 400:
                started = time.perf_counter()
                client.request({"type": "echo_request"})
                latencies.append(time.perf_counter() - started)
                peak = max(peak, _rss_bytes() - before)
                time.sleep(0.01)
            done.wait(max_events * 0.005 + 60)
    finally:
        server.close()
    p50, p99 = _percentiles(latencies)
    exact = bool(state["gapless"]) and state["received"] + state["dropped"] == events
    growth_ok = peak <= 30 * 2**20
    return Figure("flow control beside a slow consumer, RSS growth", peak / 2**20, "MiB",
                  "<= 30 MiB, p50 < 5 ms, exact", growth_ok and p50 < 0.005 and exact,
                  {"events": events, "max_events": max_events, "p50_ms": round(p50 * 1000, 2),
                   "p99_ms": round(p99 * 1000, 2), "received": state["received"], "dropped": state["dropped"],
                   "lagged_events": state["lagged"], "accounting_exact": exact})  # fmt: skip


def _restore_server(observations: int) -> LoopbackServer:
    counter = [0]

    def handler(sock: Any, buffer: bytearray, frame: dict[str, Any]) -> bool:
        message = frame.get("message", {})
        kind = message.get("type")
        counter[0] += 1
        if kind == "agent.timeline.set_subscription.request":
            sock.sendall(reply(message, {"agentIds": message["agentIds"], "subscriptionId": f"t-{counter[0]}"},
                               "agent.timeline.set_subscription.response"))  # fmt: skip
        elif kind == "fetch_agents_request":
            sock.sendall(reply(message, {"subscriptionId": f"d-{counter[0]}", "entries": [],
                                         "pageInfo": {"nextCursor": None, "prevCursor": None, "hasMore": False}},
                               "fetch_agents_response"))  # fmt: skip
        elif kind == "subscription.release.request":
            sock.sendall(reply(message, {"subscriptionId": message["subscriptionId"]}, "subscription.release.response"))
        return True

    return LoopbackServer(handler)


def reconnect_restore(observations: int) -> Figure:
    delay = 0.2
    server = _restore_server(observations)
    restored = threading.Semaphore(0)
    try:
        with dc.connect(server.url, heartbeat=dc.Heartbeat(enabled=False),
                        reconnect=dc.ReconnectPolicy(base_delay=delay, jitter=0.0)) as client:  # fmt: skip
            for i in range(observations):
                sub = client.agents.ref(f"agent-{i}").timeline.subscribe(
                    lambda u: restored.release() if u.type == "subscription_restored" else None
                )
                sub.ready.result(30)
                directory = client.agents.list(subscribe=True).subscription
                directory.subscribe(snapshot=lambda s: restored.release())
            client.flush_callbacks(30)
            for _ in range(observations):  # the first snapshots
                restored.acquire(timeout=30)
            accepting_at = server.restart(0.05)
            for _ in range(2 * observations):
                if not restored.acquire(timeout=30):
                    raise RuntimeError("not every observation was restored")
            elapsed = time.perf_counter() - accepting_at
    finally:
        server.close()
    target = f"<= backoff {delay} s + 0.5 s"
    return Figure("restore after a daemon restart", elapsed, "s", target, elapsed <= delay + 0.5,
                  {"timeline_subscriptions": observations, "directory_observations": observations})  # fmt: skip
