"""Terminal streams: Output throughput to an ``on_output`` callback beside a bare loop, and the
double Snapshot of a subscription parsed once.

The loopback server answers ``subscribe_terminal_request`` as the fake daemon does (slot 0, then
a Snapshot frame: two byte-identical ones, as 0.1.65 sends them, of the ~209 KB a 24x80 screen
takes when every cell is spelled out) and on ``blast`` writes pre-encoded binary Output frames
(``0x01 | slot | text``, protocol.md 12.2.10); a bare client asks for the same frames with
``start``.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import daemon_client as dc
from bench.builds import running_build
from bench.measures import Figure, Rate, _bare_hello, _rate, median_rates
from bench.servers import LoopbackServer, reply
from bench.wire import encode_frame
from daemon_client.protocol.terminal_frames import OUTPUT, SNAPSHOT
from daemon_client.protocol.terminals import parse_terminal_state
from daemon_client.subscriptions import terminal_streams
from daemon_client.subscriptions.terminal_output import DEFAULT_LIMIT
from daemon_client.testing.fake.terminals.shell import ScriptedShell
from daemon_client.transport.websocket import _frame

TERMINAL_ID = "term-bench"
FRAME_BYTES = 1024
CHUNK = 1000
"""Frames per pre-encoded block the server writes again and again."""
_LINE = "\x1b[32mPASSED\x1b[0m tests/subscriptions/test_terminal_streams.py::test_snapshot_output_input_and_exit\r\n"
OUTPUT_TEXT = (_LINE * (FRAME_BYTES // len(_LINE) + 1))[:FRAME_BYTES].encode("ascii")
"""1 KiB of test-runner output with colour escapes: one Output frame's payload."""


def _terminal_server(frames: int, snapshot: bytes) -> LoopbackServer:
    one = encode_frame(bytes((OUTPUT, 0)) + OUTPUT_TEXT, 0x2)
    block, tail = one * min(frames, CHUNK), one * (frames % CHUNK)
    snapshot_frame = encode_frame(bytes((SNAPSHOT, 0)) + snapshot, 0x2)

    def blast(sock: Any) -> None:
        for _ in range(frames // CHUNK):
            sock.sendall(block)
        sock.sendall(tail)

    def handler(sock: Any, buffer: bytearray, frame: dict[str, Any]) -> bool:
        if frame.get("type") == "start":
            blast(sock)
            return True
        message = frame.get("message", {})
        kind = message.get("type")
        if kind == "subscribe_terminal_request":
            sock.sendall(reply(message, {"terminalId": message["terminalId"], "slot": 0, "error": None},
                               "subscribe_terminal_response"))  # fmt: skip
            sock.sendall(snapshot_frame + snapshot_frame)  # byte-identical, as 0.1.65 sends them
        elif kind == "blast":
            blast(sock)
        elif kind == "echo_request":
            sock.sendall(reply(message, {"ok": True}, "echo_response"))
        return True

    return LoopbackServer(handler)


def _bare_output(url: str, frames: int) -> Rate:
    """daemon_client's FrameReader on one thread: each Output frame's slot checked and its text decoded."""
    sock, reader = _bare_hello(url)
    try:
        started, cpu_started = time.perf_counter(), time.process_time()
        sock.sendall(_frame('{"type":"start"}', 1))
        for _ in range(frames):
            _, data = reader.next_message()
            if data[0] == OUTPUT and data[1] == 0:
                data[2:].decode("utf-8", errors="replace")
        rate = _rate(frames, started, cpu_started)
        return Rate(rate.per_s * FRAME_BYTES, rate.cpu_us)
    finally:
        sock.close()


def _client_output(url: str, frames: int, buffer_limit: int = DEFAULT_LIMIT) -> Rate:
    done = threading.Event()
    seen = [0]  # characters (the output is ASCII: one per byte); frames behind each other come in one call

    def on_output(text: str) -> None:
        seen[0] += len(text)
        if seen[0] == frames * FRAME_BYTES:
            done.set()

    with dc.connect(url, heartbeat=dc.Heartbeat(enabled=False)) as client:
        stream = client.terminals.ref(TERMINAL_ID).stream(on_output=on_output, buffer_limit=buffer_limit)
        started, cpu_started = time.perf_counter(), time.process_time()
        client.request_async({"type": "blast"}, timeout=120)
        if not done.wait(300):
            raise RuntimeError(f"only {seen[0]} of {frames * FRAME_BYTES} bytes of output arrived")
        rate = _rate(frames, started, cpu_started)
        stream.release()
        return Rate(rate.per_s * FRAME_BYTES, rate.cpu_us)


def terminal_output_throughput(frames: int) -> Figure:
    """Bytes/s of 1 KiB Output frames to an ``on_output`` callback vs the bare loop; for
    comparison (detail), the same stream keeping no output to pull (``buffer_limit=0``)."""
    # The stream also keeps what nobody pulls with output()/expect() (1,000,000 characters, the
    # oldest dropped): part of the client's cost, but its one warning would clutter the table.
    logging.getLogger("daemon_client.subscriptions.terminal_output").setLevel(logging.ERROR)
    server = _terminal_server(frames, ScriptedShell().snapshot())
    try:
        bare, client, unkept = median_rates(
            3,
            lambda: _bare_output(server.url, frames),
            lambda: _client_output(server.url, frames),
            lambda: _client_output(server.url, frames, buffer_limit=0),
        )
    finally:
        server.close()
    ratio = client.per_s / bare.per_s
    # The target is the compiled build's (>= 0.8); the pure build's figure is reported beside it.
    ok = ratio >= 0.8 if running_build() == "compiled" else None
    return Figure("terminal output client/bare", ratio, "x", ">= 0.8 compiled", ok,
                  {"client_mib_per_s": round(client.per_s / 2**20, 1), "bare_mib_per_s": round(bare.per_s / 2**20, 1),
                   "client_cpu_us_per_frame": round(client.cpu_us, 2), "bare_cpu_us_per_frame": round(bare.cpu_us, 2),
                   "unkept_over_bare": round(unkept.per_s / bare.per_s, 3),
                   "unkept_cpu_us_per_frame": round(unkept.cpu_us, 2),
                   "frames": frames, "frame_bytes": FRAME_BYTES})  # fmt: skip


def terminal_snapshot_parses() -> Figure:
    """Subscribe once to a terminal whose server sends two byte-identical ~209 KB Snapshot
    frames; count the calls of the snapshot parser the streams module uses."""
    snapshot = ScriptedShell().snapshot()
    parses: list[int] = []
    delivered: list[dc.TerminalState] = []
    first = threading.Event()
    real = parse_terminal_state

    def counting(data: bytes | str) -> dc.TerminalState:
        parses.append(len(data))
        return real(data)

    def on_snapshot(state: dc.TerminalState) -> None:
        delivered.append(state)
        first.set()

    server = _terminal_server(0, snapshot)
    terminal_streams.parse_terminal_state = counting  # type: ignore[attr-defined]  # what the stream calls
    try:
        with dc.connect(server.url, heartbeat=dc.Heartbeat(enabled=False)) as client:
            stream = client.terminals.ref(TERMINAL_ID).stream(on_snapshot=on_snapshot)
            if not first.wait(30):
                raise RuntimeError("no snapshot arrived")
            client.request({"type": "echo_request"})  # answered after both Snapshot frames
            client.flush_callbacks(30)
            same = stream.screen is delivered[-1]
            stream.release()
    finally:
        terminal_streams.parse_terminal_state = real  # type: ignore[attr-defined]
        server.close()
    count = len(parses)
    return Figure("terminal snapshot sent twice: parses", count, "", "== 1", count == 1,
                  {"snapshot_bytes": len(snapshot), "snapshots_sent": 2, "on_snapshot_calls": len(delivered),
                   "screen_is_the_last_delivered": same})  # fmt: skip
