"""The benchmark measurements. Each starts its own loopback server (plain sockets writing
pre-encoded frames, never the bottleneck), measures the raw baseline and the client in
the same process run, and returns a :class:`Figure` with its target.
"""

from __future__ import annotations

import compileall
import gc
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

import attrs
import websocket

import daemon_client as dc
from bench.builds import running_build
from bench.servers import LoopbackServer, reply, stream_frame
from bench.wire import SERVER_INFO, text_frame
from daemon_client.transport.frames import FrameReader
from daemon_client.transport.handshake_policy import parse_target
from daemon_client.transport.upgrade import open_websocket
from daemon_client.transport.websocket import _frame

loads: Callable[[bytes], Any]
try:
    import orjson

    loads = orjson.loads
except ImportError:  # pragma: no cover - without the fast extra the bare loop uses json, as the client does
    loads = json.loads

STREAM_FIGURE = "stream throughput client/raw, client/bare"
IMPORT_FIGURE = "import time vs its dependencies"


@attrs.frozen
class Figure:
    name: str
    value: float
    unit: str
    target: str
    ok: bool | None
    """Whether the target holds; ``None`` for a figure reported without a target of its own."""
    detail: dict[str, Any] = attrs.field(factory=dict)


class Rate(NamedTuple):
    per_s: float
    """Events (or bytes) per second."""
    cpu_us: float
    """Process CPU time per event in µs (every thread of the process, the in-process server's too)."""


def _timeline_server(
    count: int,
    *,
    agents: int = 1,
    per_subscription: bool = False,
    server_info: bytes = SERVER_INFO,
    prepare: Iterable[int] = (),
    prepare_raw: bool = False,
    encoded: dict[str, bytes] | None = None,
) -> LoopbackServer:
    """Acknowledges timeline subscriptions; on ``start`` blasts ``count`` frames spread
    over the first ``agents`` subscriptions (raw clients get untagged frames). With
    ``per_subscription`` every event of ``agent-0`` goes once to each subscription the
    connection holds, as an owned-subscription daemon sends it (``count`` x subscriptions frames),
    or once, untagged, when it holds none (a broadcast host, ``server_info`` without features).

    Frames are encoded once per set of subscriptions and kept; ``prepare`` names the numbers of
    subscriptions clients will hold, whose frames are encoded at once, outside any measured run
    (and the raw clients' with ``prepare_raw``); others are encoded by the first run needing them.
    ``encoded``: frames encoded beforehand, by the same keys (see :mod:`bench.instructions`)."""
    subscriptions: dict[int, list[str]] = {}  # per connection
    blobs: dict[str, bytes] = dict(encoded or {})  # by subscription IDs joined with ",", or "raw"

    def blob(mine: list[str]) -> bytes:
        targets = tuple(mine if per_subscription else mine[:agents])
        key = ",".join(targets)
        if key in blobs:
            return blobs[key]
        if per_subscription:
            sids: list[str | None] = [*mine] or [None]
            encoded = b"".join(stream_frame(i, sid, "agent-0") for i in range(1, count + 1) for sid in sids)
        else:
            encoded = b"".join(
                stream_frame(i, targets[i % len(targets)], f"agent-{i % len(targets)}") for i in range(1, count + 1)
            )
        blobs[key] = encoded
        return encoded

    def handler(sock: Any, buffer: bytearray, frame: dict[str, Any]) -> bool:
        if frame.get("type") == "start":
            blob_raw = blobs.get("raw") or b"".join(stream_frame(i, None) for i in range(1, count + 1))
            blobs["raw"] = blob_raw
            sock.sendall(blob_raw)
            return True
        message = frame.get("message", {})
        mine = subscriptions.setdefault(id(sock), [])
        if message.get("type") == "agent.timeline.set_subscription.request":
            sid = f"sub-{len(mine)}"
            mine.append(sid)
            sock.sendall(reply(message, {"agentIds": message["agentIds"], "subscriptionId": sid},
                               "agent.timeline.set_subscription.response"))  # fmt: skip
        elif message.get("type") == "blast":
            sock.sendall(blob(mine))
        elif message.get("type") == "echo_request":
            sock.sendall(reply(message, {"ok": True}, "echo_response"))
        elif message.get("type") == "subscription.release.request":  # else close() waits for the answer
            sock.sendall(reply(message, {"subscriptionId": message["subscriptionId"]}, "subscription.release.response"))
        return True

    for held in prepare:
        if held or per_subscription:
            blob([f"sub-{n}" for n in range(held)])
    if prepare_raw:
        blobs["raw"] = b"".join(stream_frame(i, None) for i in range(1, count + 1))
    return LoopbackServer(handler, server_info)


def _bare_socket(url: str) -> tuple[socket.socket, FrameReader]:
    """The client's own upgrade and frame reader, nothing else: a blocking socket (as the
    client's reader thread uses it) and a :class:`FrameReader` over it."""
    up = open_websocket(parse_target(url), unix_path=None, timeout=10, headers={}, subprotocols=(),
                        ssl_context=None, adopt=lambda s: None, limits=None)  # fmt: skip
    up.sock.settimeout(None)
    return up.sock, FrameReader(up.sock, None, initial=up.rest, refuse_masked=True)


def _bare_hello(url: str) -> tuple[socket.socket, FrameReader]:
    sock, reader = _bare_socket(url)
    sock.sendall(_frame('{"type":"hello"}', 1))
    reader.next_message()  # server_info
    return sock, reader


def _rate(count: int, started: float, cpu_started: float) -> Rate:
    """``count`` events since ``started``: (events per second, process CPU µs per event)."""
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    return Rate(count / elapsed, cpu / count * 1e6)


def _bare_stream(url: str, count: int) -> Rate:
    """daemon_client's own FrameReader + orjson on one thread: no typing, no dispatch."""
    sock, reader = _bare_hello(url)
    try:
        started, cpu_started = time.perf_counter(), time.process_time()
        sock.sendall(_frame('{"type":"start"}', 1))
        for _ in range(count):
            _, data = reader.next_message()
            loads(data)
        return _rate(count, started, cpu_started)
    finally:
        sock.close()


def _raw_stream(url: str, count: int) -> Rate:
    ws = websocket.create_connection(url, skip_utf8_validation=True)
    try:
        ws.send('{"type":"hello"}')
        ws.recv()
        started, cpu_started = time.perf_counter(), time.process_time()
        ws.send('{"type":"start"}')
        for _ in range(count):
            _, data = ws.recv_data()
            json.loads(data.decode("utf-8"))
        return _rate(count, started, cpu_started)
    finally:
        ws.close()


def _client_run(url: str, count: int, agents: int, handlers: int = 1, *, pinned: bool = False) -> Rate:
    """``count`` timeline events through the client: spread over ``agents`` subscriptions (one
    per agent), or to ``handlers`` subscriptions of one agent, each of which must see all
    ``count`` (the server then sends each event once per subscription, as an owned host does).
    The clock stops when the last handler got its last event. ``pinned``: the client's threads
    run on one CPU, the last the process may use (``Client(thread_cpu=...)``)."""
    done = threading.Event()
    seen = [0] * handlers
    finished = [0]

    def make(index: int) -> Callable[[dc.TimelineUpdate], None]:
        def handler(update: dc.TimelineUpdate) -> None:
            if update.type == "timeline":
                seen[index] += 1
                if seen[index] == count:
                    finished[0] += 1
                    if finished[0] == handlers:
                        done.set()

        return handler

    cpu = max(os.sched_getaffinity(0)) if pinned else None
    with dc.connect(url, heartbeat=dc.Heartbeat(enabled=False), thread_cpu=cpu) as client:
        if handlers > 1:
            timeline = client.agents.ref("agent-0").timeline
            subs = [timeline.subscribe(make(i)) for i in range(handlers)]
        else:
            shared = make(0)
            subs = [client.agents.ref(f"agent-{i}").timeline.subscribe(shared) for i in range(agents)]
        for sub in subs:
            sub.ready.result(30)
        started, cpu_started = time.perf_counter(), time.process_time()
        client.request_async({"type": "blast"}, timeout=120)
        if not done.wait(300):
            raise RuntimeError(f"only {sum(seen)} of {count * handlers} events arrived")
        return _rate(count, started, cpu_started)


def _client_stream(url: str, count: int, agents: int) -> float:
    return _client_run(url, count, agents).per_s


def median_rate(runs: int, measure: Callable[[], Rate]) -> Rate:
    """Medians, separately, of the rate and of the CPU per event over ``runs`` runs."""
    return median_rates(runs, measure)[0]


def median_rates(runs: int, *measures: Callable[[], Rate]) -> list[Rate]:
    """:func:`median_rate` of each measure, the measures taking turns (one run of each, ``runs``
    times) so that a change of the machine's load affects them alike."""
    rates: list[list[Rate]] = [[] for _ in measures]
    for _ in range(runs):
        for samples, measure in zip(rates, measures, strict=True):
            samples.append(measure())
    return [Rate(statistics.median(r.per_s for r in rs), statistics.median(r.cpu_us for r in rs)) for rs in rates]


def stream_throughput(count: int) -> Figure:
    """The client's stream against the raw and bare loops. For comparison (detail only), the
    client again with its threads pinned to one CPU, where the GIL's hand-offs between the
    reader and the callback thread stay on one core's caches (Linux only)."""
    server = _timeline_server(count, prepare=(1,), prepare_raw=True)
    can_pin = hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) > 1
    try:
        raw, bare, client, pinned = median_rates(
            3,
            lambda: _raw_stream(server.url, count),
            lambda: _bare_stream(server.url, count),
            lambda: _client_run(server.url, count, 1),
            lambda: _client_run(server.url, count, 1, pinned=True) if can_pin else Rate(0.0, 0.0),
        )
    finally:
        server.close()
    over_bare, over_raw = client.per_s / bare.per_s, client.per_s / raw.per_s
    ok = over_bare >= (0.5 if running_build() == "compiled" else 0.3) and over_raw >= 1.0
    return Figure(STREAM_FIGURE, over_raw, "x", "client/bare >= 0.3 pure, >= 0.5 compiled; client/raw >= 1.0", ok,
                  {"client_events_per_s": round(client.per_s), "bare_events_per_s": round(bare.per_s),
                   "raw_events_per_s": round(raw.per_s), "client_over_bare": round(over_bare, 3),
                   "client_over_raw": round(over_raw, 3), "client_cpu_us_per_event": round(client.cpu_us, 2),
                   "bare_cpu_us_per_event": round(bare.cpu_us, 2), "raw_cpu_us_per_event": round(raw.cpu_us, 2),
                   "client_pinned_events_per_s": round(pinned.per_s),
                   "client_pinned_over_bare": round(pinned.per_s / bare.per_s, 3),
                   "client_pinned_cpu_us_per_event": round(pinned.cpu_us, 2), "events": count})  # fmt: skip


def routing_scale(count: int) -> Figure:
    server = _timeline_server(count, agents=1000, prepare=(1, 1000))
    try:
        ones: list[float] = []
        manys: list[float] = []
        for _ in range(3):  # taking turns, so that a burst of load hurts both sides alike
            ones.append(_client_stream(server.url, count, 1))
            manys.append(_client_stream(server.url, count, 1000))
    finally:
        server.close()
    one, many = statistics.median(ones), statistics.median(manys)
    ratio = many / one
    return Figure("routing scale 1000/1 subscriptions", ratio, "x", ">= 0.9", ratio >= 0.9,
                  {"one_subscription_per_s": round(one), "thousand_subscriptions_per_s": round(many)})  # fmt: skip


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def request_latency(count: int) -> Figure:
    """Echo requests, raw websocket-client against the client, taking turns in rounds of 100
    (each on its own open connection) so that a change of the machine's load affects both."""
    server = _timeline_server(0)
    raw: list[float] = []
    client_samples: list[float] = []
    try:
        ws = websocket.create_connection(server.url, skip_utf8_validation=True)
        ws.send('{"type":"hello"}')
        ws.recv()
        with dc.connect(server.url, heartbeat=dc.Heartbeat(enabled=False)) as client:
            for start in range(0, count, 100):
                for n in range(start, min(count, start + 100)):
                    started = time.perf_counter()
                    ws.send(json.dumps({"type": "session", "message": {"type": "echo_request", "requestId": f"r{n}"}}))
                    json.loads(ws.recv())
                    raw.append(time.perf_counter() - started)
                for _ in range(start, min(count, start + 100)):
                    started = time.perf_counter()
                    client.request({"type": "echo_request"})
                    client_samples.append(time.perf_counter() - started)
        ws.close()
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


IMPORT_DEPENDENCIES = ("attrs", "cattrs", "websocket", "orjson")
"""What ``daemon_client.Client`` imports from elsewhere (orjson only when installed)."""


def import_time(processes: int = 15) -> Figure:
    """``import daemon_client`` and its first ``Client`` built (not connected) vs its dependencies
    alone, each over a bare interpreter (``python -c pass`` subtracted): medians of ``processes``
    fresh processes, the commands taking turns so that a load change affects all of them alike.

    The client's machinery is imported when the first ``Client`` is built, so naming
    ``daemon_client.Client`` alone costs less than the dependencies (a detail, ``name_only``);
    the figure is what a program that uses the client pays."""
    deps = [name for name in IMPORT_DEPENDENCIES if importlib.util.find_spec(name) is not None]
    # As pip does at install time for the package and its dependencies alike: without it, where
    # bytecode is not written (PYTHONDONTWRITEBYTECODE), every process would compile the package.
    compileall.compile_dir(Path(dc.__file__).parent, quiet=1)
    codes = {"base": "pass", "deps": "import " + ", ".join(deps), "ours": "import daemon_client; daemon_client.Client('ws://127.0.0.1:9/ws').close()",
             "name_only": "import daemon_client; daemon_client.Client"}  # fmt: skip
    samples: dict[str, list[float]] = {name: [] for name in codes}
    for _ in range(processes):
        for name, code in codes.items():
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            samples[name].append(time.perf_counter() - started)
    base = statistics.median(samples["base"])
    dependencies = statistics.median(samples["deps"]) - base
    ours = statistics.median(samples["ours"]) - base
    name_only = statistics.median(samples["name_only"]) - base
    ratio = ours / dependencies
    return Figure(IMPORT_FIGURE, ratio, "x", "<= 1.15", ratio <= 1.15,
                  {"dependencies": ", ".join(deps), "dependencies_ms": round(dependencies * 1000, 1),
                   "daemon_client_ms": round(ours * 1000, 1), "bare_interpreter_ms": round(base * 1000, 1),
                   "name_only_ms": round(name_only * 1000, 1),
                   "name_only_over_dependencies": round(name_only / dependencies, 2),
                   "processes": processes})  # fmt: skip


def timed(fn: Callable[[], Figure]) -> Figure:
    started = time.perf_counter()
    figure = fn()
    return attrs.evolve(figure, detail={**figure.detail, "seconds": round(time.perf_counter() - started, 2)})


__all__ = ["IMPORT_FIGURE", "STREAM_FIGURE", "Figure", "Rate", "import_time", "median_rate", "median_rates",
           "memory_per_subscription", "request_latency", "routing_scale", "stream_throughput", "text_frame",
           "timed"]  # fmt: skip
