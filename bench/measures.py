"""The benchmark measurements. Each starts its own loopback server (plain sockets writing
pre-encoded frames, never the bottleneck), measures the raw baseline and the client in
the same process run, and returns a :class:`Figure` with its target.
"""

from __future__ import annotations

import gc
import json
import statistics
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import attrs
import websocket

import daemon_client as dc
from bench.servers import LoopbackServer, reply, stream_frame
from bench.wire import text_frame


@attrs.frozen
class Figure:
    name: str
    value: float
    unit: str
    target: str
    ok: bool
    detail: dict[str, Any] = attrs.field(factory=dict)


def _timeline_server(count: int, *, agents: int = 1) -> LoopbackServer:
    """Acknowledges timeline subscriptions; on ``start`` blasts ``count`` frames spread
    over the first ``agents`` subscriptions (raw clients get untagged frames)."""
    subscriptions: dict[int, list[str]] = {}  # per connection
    blobs: dict[str, bytes] = {}

    def handler(sock: Any, buffer: bytearray, frame: dict[str, Any]) -> bool:
        if frame.get("type") == "start":
            blob = blobs.get("raw") or b"".join(stream_frame(i, None) for i in range(1, count + 1))
            blobs["raw"] = blob
            sock.sendall(blob)
            return True
        message = frame.get("message", {})
        mine = subscriptions.setdefault(id(sock), [])
        if message.get("type") == "agent.timeline.set_subscription.request":
            sid = f"sub-{len(mine)}"
            mine.append(sid)
            sock.sendall(reply(message, {"agentIds": message["agentIds"], "subscriptionId": sid},
                               "agent.timeline.set_subscription.response"))  # fmt: skip
        elif message.get("type") == "blast":
            targets = tuple(mine[:agents])
            key = ",".join(targets)
            if key not in blobs:  # encoded once, outside the measured runs' cost after the first
                blobs[key] = b"".join(
                    stream_frame(i, targets[i % len(targets)], f"agent-{i % len(targets)}") for i in range(1, count + 1)
                )
            sock.sendall(blobs[key])
        elif message.get("type") == "echo_request":
            sock.sendall(reply(message, {"ok": True}, "echo_response"))
        elif message.get("type") == "subscription.release.request":  # else close() waits for the answer
            sock.sendall(reply(message, {"subscriptionId": message["subscriptionId"]}, "subscription.release.response"))
        return True

    return LoopbackServer(handler)


def _raw_stream(url: str, count: int) -> float:
    ws = websocket.create_connection(url, skip_utf8_validation=True)
    try:
        ws.send('{"type":"hello"}')
        ws.recv()
        started = time.perf_counter()
        ws.send('{"type":"start"}')
        for _ in range(count):
            _, data = ws.recv_data()
            json.loads(data.decode("utf-8"))
        return count / (time.perf_counter() - started)
    finally:
        ws.close()


def _client_stream(url: str, count: int, agents: int) -> float:
    done = threading.Event()
    seen = [0]

    def handler(update: dc.TimelineUpdate) -> None:
        if update.type == "timeline":
            seen[0] += 1
            if seen[0] == count:
                done.set()

    with dc.connect(url, heartbeat=dc.Heartbeat(enabled=False)) as client:
        subs = [client.agents.ref(f"agent-{i}").timeline.subscribe(handler) for i in range(agents)]
        for sub in subs:
            sub.ready.result(30)
        started = time.perf_counter()
        client.request_async({"type": "blast"}, timeout=120)
        if not done.wait(300):
            raise RuntimeError(f"only {seen[0]} of {count} events arrived")
        return count / (time.perf_counter() - started)


def stream_throughput(count: int) -> Figure:
    server = _timeline_server(count)
    try:
        raw = statistics.median(_raw_stream(server.url, count) for _ in range(3))
        client = statistics.median(_client_stream(server.url, count, 1) for _ in range(3))
    finally:
        server.close()
    ratio = client / raw
    return Figure("stream throughput B/A", ratio, "x", ">= 1.0 (never < 0.6)", ratio >= 1.0,
                  {"raw_events_per_s": round(raw), "client_events_per_s": round(client), "events": count})  # fmt: skip


def routing_scale(count: int) -> Figure:
    server = _timeline_server(count, agents=1000)
    try:
        one = statistics.median(_client_stream(server.url, count, 1) for _ in range(2))
    finally:
        server.close()
    server = _timeline_server(count, agents=1000)
    try:
        many = statistics.median(_client_stream(server.url, count, 1000) for _ in range(2))
    finally:
        server.close()
    ratio = many / one
    return Figure("routing scale 1000/1 subscriptions", ratio, "x", ">= 0.9", ratio >= 0.9,
                  {"one_subscription_per_s": round(one), "thousand_subscriptions_per_s": round(many)})  # fmt: skip


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def request_latency(count: int) -> Figure:
    server = _timeline_server(0)
    try:
        ws = websocket.create_connection(server.url, skip_utf8_validation=True)
        ws.send('{"type":"hello"}')
        ws.recv()
        raw: list[float] = []
        for n in range(count):
            started = time.perf_counter()
            ws.send(json.dumps({"type": "session", "message": {"type": "echo_request", "requestId": f"r{n}"}}))
            json.loads(ws.recv())
            raw.append(time.perf_counter() - started)
        ws.close()
        client_samples: list[float] = []
        with dc.connect(server.url, heartbeat=dc.Heartbeat(enabled=False)) as client:
            for _ in range(count):
                started = time.perf_counter()
                client.request({"type": "echo_request"})
                client_samples.append(time.perf_counter() - started)
    finally:
        server.close()
    raw50, raw99 = _percentiles(raw)
    c50, c99 = _percentiles(client_samples)
    ok = c50 <= raw50 + 100e-6 and c99 <= 2 * raw99
    return Figure("request latency p50 overhead", (c50 - raw50) * 1e6, "us", "p50 <= raw + 100 us, p99 <= 2x raw", ok,
                  {"raw_p50_us": round(raw50 * 1e6, 1), "raw_p99_us": round(raw99 * 1e6, 1),
                   "client_p50_us": round(c50 * 1e6, 1), "client_p99_us": round(c99 * 1e6, 1)})  # fmt: skip


def memory_per_subscription(count: int) -> Figure:
    server = _timeline_server(0)
    try:
        with dc.connect(server.url, heartbeat=dc.Heartbeat(enabled=False)) as client:
            warm = [client.agents.ref(f"warm-{i}").timeline.subscribe(lambda u: None) for i in range(50)]
            for sub in warm:
                sub.ready.result(30)
            gc.collect()
            tracemalloc.start()
            before = tracemalloc.take_snapshot()
            timeline = client.agents.ref("agent-measured").timeline
            subs = [timeline.subscribe(lambda u: None) for _ in range(count)]
            for sub in subs:
                sub.ready.result(30)
            client.flush_callbacks()
            gc.collect()
            after = tracemalloc.take_snapshot()
            tracemalloc.stop()
            growth = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    finally:
        server.close()
    per = growth / count
    return Figure("memory per idle timeline subscription", per / 1024, "KiB", "<= 4 KiB", per <= 4096,
                  {"subscriptions": count, "bytes_total": growth})  # fmt: skip


def import_time() -> Figure:
    def median_time(code: str) -> float:
        samples = []
        for _ in range(7):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            samples.append(time.perf_counter() - started)
        return statistics.median(samples)

    base = median_time("pass")
    deps = median_time("import attrs, cattrs, websocket") - base
    ours = median_time("import daemon_client; daemon_client.Client") - base
    ratio = ours / deps
    return Figure("import time vs attrs+cattrs+websocket", ratio, "x", "<= 1.3", ratio <= 1.3,
                  {"deps_ms": round(deps * 1000, 1), "daemon_client_ms": round(ours * 1000, 1)})  # fmt: skip


def timed(fn: Callable[[], Figure]) -> Figure:
    started = time.perf_counter()
    figure = fn()
    return attrs.evolve(figure, detail={**figure.detail, "seconds": round(time.perf_counter() - started, 2)})


__all__ = ["Figure", "import_time", "memory_per_subscription", "request_latency", "routing_scale",
           "stream_throughput", "text_frame", "timed"]  # fmt: skip
