"""The stream figure through a relay: the client reached by a pairing offer, through the fake
relay on loopback, end-to-end encrypted, beside the same client connected directly.

The fake relay and a benchmark daemon behind it run in a child process (``python -m
bench.relay_daemon``), as a relay and a daemon run elsewhere than the client: in the client's
process they would compete with it for the GIL. Needs PyNaCl (the ``relay`` extra) and
``websockets`` (the fake relay, ``test`` extra).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

from bench.measures import Figure, _client_stream, _timeline_server

ROOT = Path(__file__).resolve().parent.parent


def relay_stream_throughput(count: int) -> Figure:
    server = _timeline_server(count)
    try:
        direct = statistics.median(_client_stream(server.url, count, 1) for _ in range(3))
    finally:
        server.close()
    relay = subprocess.Popen(  # the relay and the daemon in their own process, as they would be
        [sys.executable, "-m", "bench.relay_daemon", str(count)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    try:
        assert relay.stdout is not None
        link = relay.stdout.readline().strip()
        if "#offer=" not in link:
            raise RuntimeError("the relay process did not start")
        relayed = statistics.median(_client_stream(link, count, 1) for _ in range(3))
    finally:
        if relay.stdin is not None:
            relay.stdin.close()
        relay.wait(30)
    ratio = relayed / direct
    detail = {"direct_events_per_s": round(direct), "relay_events_per_s": round(relayed), "events": count}
    return Figure("stream through the relay / direct", ratio, "x", ">= 0.5", ratio >= 0.5, detail)
