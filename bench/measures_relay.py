"""The stream figure through a relay: the client reached by a pairing offer, through a relay on
loopback, end-to-end encrypted, beside the same client connected directly.

The relay (:class:`~bench.relay_forwarder.ForwardingRelay`, which pairs sockets as the relay
protocol says and then copies bytes) and a benchmark daemon behind it run in a child process
(``python -m bench.relay_daemon``), as a relay and a daemon run elsewhere than the client: in the
client's process they would compete with it for the GIL. Needs PyNaCl (the ``relay`` extra).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.measures import Figure, _client_run, _timeline_server, median_rates

ROOT = Path(__file__).resolve().parent.parent


def relay_stream_throughput(count: int) -> Figure:
    """The client's stream through the relay against the same client connected directly, the
    two taking turns (one run of each, three times)."""
    server = _timeline_server(count, prepare=(1,))
    relay = subprocess.Popen(  # the relay and the daemon in their own process, as they would be
        [sys.executable, "-m", "bench.relay_daemon", str(count)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    try:
        assert relay.stdout is not None
        link = relay.stdout.readline().strip()
        if "#offer=" not in link:
            raise RuntimeError("the relay process did not start")
        direct, relayed = median_rates(
            3, lambda: _client_run(server.url, count, 1), lambda: _client_run(link, count, 1)
        )
    finally:
        server.close()
        if relay.stdin is not None:
            relay.stdin.close()
        relay.wait(30)
    ratio = relayed.per_s / direct.per_s
    detail = {"direct_events_per_s": round(direct.per_s), "relay_events_per_s": round(relayed.per_s),
              "direct_cpu_us_per_event": round(direct.cpu_us, 2), "relay_cpu_us_per_event": round(relayed.cpu_us, 2),
              "events": count}  # fmt: skip
    return Figure("stream through the relay / direct", ratio, "x", ">= 0.5", ratio >= 0.5, detail)
