"""Fan-out: many agents streaming at once to one client, and many handlers of one agent.

Both compare the client with itself, one subscription against many, in the same run, on the
loopback server of the stream figure (an owned-subscription host: every frame carries the
``subscriptionId`` the server handed out on that connection).
"""

from __future__ import annotations

from bench.measures import Figure, _client_run, _timeline_server, median_rates
from bench.wire import BROADCAST_SERVER_INFO

AGENTS = 100
HANDLERS = 10


def agents_fan_out(count: int) -> Figure:
    """``count`` events interleaved over 100 agents, one timeline subscription each, against the
    same ``count`` events to one subscription."""
    server = _timeline_server(count, agents=AGENTS, prepare=(1, AGENTS))
    try:
        one, many = median_rates(
            3, lambda: _client_run(server.url, count, 1), lambda: _client_run(server.url, count, AGENTS)
        )
    finally:
        server.close()
    ratio = many.per_s / one.per_s
    return Figure(f"fan-out {AGENTS} agents / 1", ratio, "x", ">= 0.9", ratio >= 0.9,
                  {"one_subscription_per_s": round(one.per_s), "hundred_agents_per_s": round(many.per_s),
                   "one_cpu_us_per_event": round(one.cpu_us, 2), "hundred_cpu_us_per_event": round(many.cpu_us, 2),
                   "events": count})  # fmt: skip


def handlers_fan_out(count: int) -> Figure:
    """10 ``timeline.subscribe`` calls on one agent against one. On an owned-subscription host
    each call is its own subscription, so the daemon sends every event once per subscription
    (10 frames per event); the clock stops when every handler got every event, and the rate
    counts each event once (events/s delivered to all handlers).

    For comparison (detail only), the same on a broadcast host (0.1.65: no subscription features),
    where one untagged frame per event reaches every handler of the agent and is parsed once."""
    server = _timeline_server(count, per_subscription=True, prepare=(1, HANDLERS))
    try:
        one, many = median_rates(
            3,
            lambda: _client_run(server.url, count, 1, handlers=1),
            lambda: _client_run(server.url, count, 1, handlers=HANDLERS),
        )
    finally:
        server.close()
    server = _timeline_server(count, per_subscription=True, server_info=BROADCAST_SERVER_INFO, prepare=(0,))
    try:
        shared_one, shared_many = median_rates(
            3,
            lambda: _client_run(server.url, count, 1, handlers=1),
            lambda: _client_run(server.url, count, 1, handlers=HANDLERS),
        )
    finally:
        server.close()
    ratio = many.per_s / one.per_s
    # No target of its own: the protocol sends one frame per owned subscription, so this is bounded
    # by the wire (wire_frames_per_event); the client's own fan-out is the local listeners figure.
    return Figure(f"fan-out {HANDLERS} handlers of one agent / 1", ratio, "x",
                  f"detail: {HANDLERS} wire frames per event", None,
                  {"one_handler_events_per_s": round(one.per_s), "ten_handlers_events_per_s": round(many.per_s),
                   "ten_handlers_deliveries_per_s": round(many.per_s * HANDLERS),
                   "wire_frames_per_event": HANDLERS, "one_cpu_us_per_event": round(one.cpu_us, 2),
                   "ten_cpu_us_per_event": round(many.cpu_us, 2), "events": count,
                   "broadcast_host_one_handler_events_per_s": round(shared_one.per_s),
                   "broadcast_host_ten_handlers_events_per_s": round(shared_many.per_s),
                   "broadcast_host_ratio": round(shared_many.per_s / shared_one.per_s, 3)})  # fmt: skip
