"""Daemon restarts and dead connections (anchors.md section 3, items 3, 4, 5 and 11).

* A restart storm: a loopback fake restarted 50 times (a short downtime each, the port closed
  meanwhile) while timelines stream. Every timeline handle gets exactly one
  ``subscription_restored`` per restart and receives after each; directory and provider
  observations are restored once per restart too. Reconnect attempts follow the backoff: every
  attempt is preceded by the jittered delay the policy announced (measured on the reader thread
  through the transport factory), the delays lie within the jitter bounds of their attempt
  number, and there are no extra connections (``fake.accepted_count``).
* A daemon that stays away: the delays grow, are capped, and start again from the base once a
  connection has been stable.
* A half-open daemon: the socket stays open but pings and requests go unanswered; the
  heartbeat notices within its bound, pending requests fail with ``ConnectionLost``, and the
  reconnect restores everything once.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon
from daemon_client.testing.fake.engine.connection import FakeConnection
from daemon_client.testing.threads import live_threads
from daemon_client.transport.websocket import WebSocketTransport

from .conftest import Gate, Observed, StateLog, close_and_check_threads, rows_of

KINDS = ["capable", "selective", "broadcast"]
TRANSPORTS = ["memory", "loopback"]
JITTER = 0.2
ROUNDING = 0.0051
"""State reasons print delays with two decimals."""
RESTART_OVERHEAD = 0.05
"""Seconds a loopback restart adds to its downtime (closing the server, binding again)."""


class AttemptClock:
    """A transport factory that stamps every connection attempt (called on the reader thread
    at the start of each attempt, before any socket is opened)."""

    def __init__(self, make: Callable[[], object] = WebSocketTransport) -> None:
        self.stamps: list[float] = []
        self._make = make

    def __call__(self) -> object:
        self.stamps.append(time.monotonic())
        return self._make()


def nominal(policy: dc.ReconnectPolicy, attempt: int) -> float:
    return min(policy.max_delay, policy.base_delay * 2**attempt)


def waits_within(policy: dc.ReconnectPolicy, seconds: float, factor: float) -> int:
    """How many attempts the policy makes within ``seconds`` of a loss if every delay is its
    nominal value times ``factor`` (capped at ``max_delay``)."""
    elapsed, attempts = 0.0, 0
    while True:
        elapsed += min(policy.max_delay, nominal(policy, attempts) * factor)
        if elapsed >= seconds:
            return attempts
        attempts += 1


def check_backoff(policy: dc.ReconnectPolicy, seed: int, states: StateLog, clock: AttemptClock) -> list[float]:
    """Without a reset, attempt ``n`` waits ``policy.delay(n)``: check the announced delays
    against the policy (same seeded RNG), the jitter bounds, and the measured gaps. Returns
    the jitter factors."""
    attempts, delays = states.attempts(), states.delays()
    assert attempts == list(range(len(attempts))), attempts  # every attempt seen, no reset
    assert len(clock.stamps) == len(attempts)
    assert len(delays) == len(attempts) - 1  # one wait before each attempt after the first
    replay = random.Random(seed)
    factors = []
    for n, announced in enumerate(delays):
        expected = policy.delay(n, replay)
        assert abs(announced - expected) <= ROUNDING, (n, announced, expected)
        low, high = nominal(policy, n) * (1 - JITTER), min(policy.max_delay, nominal(policy, n) * (1 + JITTER))
        assert low - ROUNDING <= announced <= high + ROUNDING, (n, announced, low, high)
        gap = clock.stamps[n + 1] - clock.stamps[n]
        assert gap >= expected - 0.002, f"attempt {n + 1} came {gap:.4f} s after attempt {n}, delay {expected:.4f} s"
        factors.append(expected / nominal(policy, n))
    return factors


def stream(fake: FakeDaemon, agents: list[str], stop: threading.Event) -> threading.Thread:
    """Append a row to each agent's timeline every few milliseconds until ``stop``."""

    def run() -> None:
        n = 0
        while not stop.wait(0.005) and n < 20_000:
            n += 1
            for agent_id in agents:
                fake.timeline.append(agent_id, {"type": "assistant_message", "text": f"r{n}"})

    thread = threading.Thread(target=run, name="test-streamer")
    thread.start()
    return thread


def restart_storm(fakes, make_client, kind: str, restarts: int) -> None:
    seed = 1234
    policy = dc.ReconnectPolicy(base_delay=0.01, max_delay=0.05, jitter=JITTER, stable_after=600.0)
    downtimes = random.Random(seed + 1)  # 0 to 0.1 s: some reconnects land while the port is closed
    fake = fakes(kind)
    for agent_id in ("a1", "a2"):
        fake.agents.upsert(agent_id, title=agent_id)
    fake.serve()
    baseline = live_threads()
    clock = AttemptClock()
    client = make_client(fake, "loopback", reconnect=policy, transport_factory=clock, rng=random.Random(seed))
    states = StateLog()
    client.on_state_change(states)
    client.connect()
    observed = Observed(client)
    stop = threading.Event()
    streamer = stream(fake, ["a1", "a2"], stop)
    outages: list[float] = []
    started = time.monotonic()
    try:
        for restart in range(1, restarts + 1):
            downtime = downtimes.uniform(0.0, 0.1)
            outages.append(downtime)
            fake.restart(downtime)
            observed.wait_restored(restart, restart, restart, timeout=10.0)
            marks = {agent_id: fake.timeline.append(agent_id, {"type": "assistant_message", "text": f"m{restart}"})
                     for agent_id in ("a1", "a2")}  # fmt: skip
            for sub, seen in observed.timelines:  # still receiving after this restart
                seen.wait_for(1, predicate=lambda u, s=marks[sub.agent_id]: u.type == "timeline" and u.seq == s)
    finally:
        stop.set()
        streamer.join(10)
    elapsed = time.monotonic() - started
    assert not streamer.is_alive()

    observed.expect(restarts, restarts, restarts)
    for sub, seen in observed.timelines:
        rows = rows_of(seen.items)
        assert rows == sorted(set(rows)), f"{sub}: rows duplicated or out of order"
        kinds = [u.type for u in seen.items]  # a restored event, then rows, after every restart
        assert "subscription_restored,subscription_restored" not in ",".join(kinds)
    observed.check_live(fake, "after the storm")
    observed.expect(restarts, restarts, restarts)

    assert states.reconnects() == restarts
    assert fake.accepted_count == 1 + restarts  # refused attempts never reached the daemon; no extras
    factors = check_backoff(policy, seed, states, clock)
    assert max(factors) - min(factors) > JITTER / 2  # the jitter is real, not a constant factor
    # No tight loop: refused attempts fit in the outages at the backoff's pace (the delays only
    # reach max_delay after a few attempts, hence the warm-up; an outage also includes the
    # restart's own shutdown and re-bind), and attempts fit in the time.
    failed = len(clock.stamps) - 1 - restarts
    warm_up = math.ceil(math.log2(policy.max_delay / policy.base_delay))
    longest_wait = policy.max_delay * (1 - JITTER)
    allowed = warm_up + sum(math.ceil((outage + RESTART_OVERHEAD) / longest_wait) for outage in outages)
    assert 0 < failed <= allowed, f"{failed} refused attempts in {restarts} restarts, at most {allowed} allowed"
    assert len(clock.stamps) <= 1 + elapsed / (policy.base_delay * (1 - JITTER))
    close_and_check_threads(client, baseline, except_prefix="fake-daemon-serve")


@pytest.mark.budget(45)
@pytest.mark.parametrize("kind", KINDS)
def test_restart_storm(fakes, make_client, kind: str) -> None:
    restart_storm(fakes, make_client, kind, restarts=50)


@pytest.mark.slow
@pytest.mark.budget(300)
@pytest.mark.parametrize("kind", KINDS)
def test_restart_storm_long(fakes, make_client, kind: str) -> None:
    restart_storm(fakes, make_client, kind, restarts=300)


@pytest.mark.budget(30)
def test_backoff_grows_caps_and_resets_while_the_daemon_is_away(fakes, make_client) -> None:
    seed = 99
    policy = dc.ReconnectPolicy(base_delay=0.02, max_delay=0.16, jitter=JITTER, stable_after=0.3)
    fake = fakes("capable")
    fake.serve()
    clock = AttemptClock()
    client = make_client(fake, "loopback", reconnect=policy, transport_factory=clock, rng=random.Random(seed))
    states = StateLog()
    client.on_state_change(states)
    client.connect()
    fake.restart(downtime=1.0)
    states.wait_reconnects(1, timeout=10.0)
    fake.wait_serving()

    check_backoff(policy, seed, states, clock)
    failed = len(clock.stamps) - 2
    # Refused attempts are those made before the port listens again: as many as the waits of
    # the policy fit in the downtime, with the longest jitter (fewest) or the shortest (most).
    fewest = waits_within(policy, 1.0, 1 + JITTER) - 1  # attempts take time too
    most = waits_within(policy, 1.0 + RESTART_OVERHEAD, 1 - JITTER)
    assert fewest <= failed <= most, f"{failed} refused attempts, expected {fewest} to {most}"
    assert nominal(policy, failed - 1) == policy.max_delay  # the delays reached the cap
    assert fake.accepted_count == 2

    # Stable for longer than stable_after: the next loss starts from the base delay again.
    time.sleep(policy.stable_after + 0.1)  # the behaviour under test is the passing of time
    count = len(states.delays())
    fake.drop_connections()
    states.wait_reconnects(2, timeout=10.0)
    after = states.delays()[count]
    assert policy.base_delay * (1 - JITTER) - ROUNDING <= after <= policy.base_delay * (1 + JITTER) + ROUNDING
    assert states.attempts()[-1] == 1  # counted from 0 again


@pytest.mark.budget(30)
@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_half_open_daemon_is_detected_by_the_heartbeat(fakes, make_client, kind: str, transport: str) -> None:
    heartbeat = dc.Heartbeat(interval=0.1, timeout=0.2, max_misses=2)
    bound = heartbeat.interval + heartbeat.max_misses * heartbeat.timeout
    # Probes go out on the interval's ticks, so a probe can start up to one interval late after
    # a miss; plus scheduling slack.
    slack = heartbeat.interval + 0.3
    fake = fakes(kind)
    for agent_id in ("a1", "a2"):
        fake.agents.upsert(agent_id, title=agent_id)
    if transport == "loopback":
        fake.serve()
    baseline = live_threads()
    client = make_client(fake, transport, heartbeat=heartbeat)
    states = StateLog()
    client.on_state_change(states)
    client.connect()
    observed = Observed(client)
    first = fake.connections[0]
    fake.wait_for_frame(lambda f: f.get("type") == "ping" and f.connection is first)  # pings answered so far
    silent = Gate(fake, ["fetch_agent_request"], holds=lambda ctx: ctx.connection is first)
    pending = [
        client.request_async({"type": "fetch_agent_request", "agentId": "a1", "requestId": f"silent-{n}"}, timeout=30.0)
        for n in range(2)
    ]
    silent.wait_held(2)

    went_silent = time.monotonic()
    fake.answer_pings = False
    error = pending[0].exception(timeout=bound + slack + 2.0)  # set on the reader thread as the socket ends
    detected = time.monotonic() - went_silent
    fake.answer_pings = True  # the next connection's first probe is at least an interval away
    assert isinstance(error, dc.ConnectionLost), repr(error)
    assert isinstance(pending[1].exception(timeout=1.0), dc.ConnectionLost)
    assert heartbeat.timeout <= detected <= bound + slack, f"half-open daemon noticed after {detected:.2f} s"
    lost = states.wait_for(predicate=lambda c: c[1] is dc.ConnectionState.DISCONNECTED)[0]
    assert "Heartbeat timeout" in lost[2]
    first.wait_ended()
    assert not first.dropped  # the daemon kept the socket open: the client closed it

    observed.wait_restored(1, 1, 1)
    observed.expect(1, 1, 1)
    observed.check_live(fake, "after")
    second = [c for c in fake.connections if c.handshaken]
    assert len(second) == 1
    assert second[0] is not first
    # Unanswered, a connection sees two probes before the heartbeat ends it: three mean pongs flow.
    fake.wait_for_frame(lambda f: f.connection is second[0] and pings(second[0]) >= 3, timeout=5.0)
    assert client.request({"type": "fetch_agent_request", "agentId": "a1"})["agent"]["id"] == "a1"
    assert fake.accepted_count == 2
    assert states.reconnects() == 1
    observed.expect(1, 1, 1)
    close_and_check_threads(client, baseline)


def pings(connection: FakeConnection) -> int:
    return sum(1 for frame in connection.frames if frame.get("type") == "ping")
