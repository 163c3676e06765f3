"""HostTargets without sockets: a scripted prober decides what each probe finds.

Ranking (preferred first when it answered, else the fastest, the silent ones last in the
host's order), rounds tried without delay, probes that raise or reach another daemon,
``cancel()``, a round that begins without waiting for probes it no longer needs, ``admit()``
(serverId learned, refused, switch listeners), and readers on many threads.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import pytest

import daemon_client as dc
from daemon_client.discovery import RelayTarget
from daemon_client.discovery.failover import HostTargets, Probe

from .conftest import wait_until

KEY = bytes(range(32))
RELAY = RelayTarget("relay.example:443", "srv-a", KEY)
LOG = logging.getLogger("daemon_client.hosts.test")
LIVENESS = 10.0


class Script:
    """A prober: per connection id, what its probe finds. ``("ok", latency[, server_id])``,
    ``"silent"`` (no answer), ``"raise"``, or ``"block"`` (until ended by its cancel, at most
    30 s). Counts the probes and the cancels."""

    def __init__(self, **plan: object) -> None:
        self.plan = {key.replace("_", ":"): value for key, value in plan.items()}
        self.calls: list[str] = []
        self.ended: list[str] = []
        self.started = threading.Event()
        self._lock = threading.Lock()

    def __call__(
        self, connection: dc.HostConnection, timeout: float, on_cancel: Callable[[Callable[[], None]], None]
    ) -> Probe:
        with self._lock:
            self.calls.append(connection.id)
        what = self.plan.get(connection.id, "silent")
        if what == "raise":
            raise RuntimeError("the prober broke")
        if what == "block":
            stop = threading.Event()

            def end() -> None:
                with self._lock:
                    self.ended.append(connection.id)
                stop.set()

            on_cancel(end)
            self.started.set()
            stop.wait(30.0)
            return Probe(connection, False, error="ended")
        if what == "silent":
            return Probe(connection, False, error="refused")
        assert isinstance(what, tuple)
        latency = what[1]
        server_id = what[2] if len(what) > 2 else "srv-a"
        return Probe(connection, True, latency=latency, server_id=server_id)


A, B, C = "direct:a:1", "direct:b:1", "direct:c:1"


def host(preferred: str | None = None, server_id: str | None = "srv-a") -> dc.Host:
    return dc.Host("laptop", ["a:1", "b:1", "c:1"], preferred=preferred, server_id=server_id)


def targets(h: dc.Host, script: Script, probe_timeout: float = 3.0) -> HostTargets:
    return HostTargets(h, script, LOG, probe_timeout=probe_timeout)


def round_order(t: HostTargets) -> list[str]:
    """One whole round: the ids in the order the attempts go, checking none waits."""
    order = [t.next()]
    while t.round_left():
        order.append(t.next())
    by_target = {c.target: c.id for c in t.host.connections}
    return [by_target[target] for target in order]


def next_within(t: HostTargets, timeout: float = LIVENESS) -> str:
    """``t.next()`` on another thread; its connection id, asserted to come within ``timeout``."""
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(t.next()), name="test-next")
    thread.start()
    thread.join(timeout)
    assert out, "next() is still waiting for probes it does not need"
    return {c.target: c.id for c in t.host.connections}[out[0]]  # type: ignore[index]


# ------------------------------------------------------------------ ranking
def test_preferred_first_when_it_answers_even_if_slower() -> None:
    script = Script(**{A: ("ok", 0.002), B: ("ok", 0.050), C: ("ok", 0.001)})
    t = targets(host(preferred="b:1"), script)
    assert round_order(t) == [B, C, A]
    assert "preferred connection answered" in t.resolution.reason


def test_fastest_first_without_a_preferred() -> None:
    script = Script(**{A: ("ok", 0.030), B: ("ok", 0.010), C: ("ok", 0.020)})
    t = targets(host(), script)
    assert round_order(t) == [B, C, A]
    assert "fastest" in t.resolution.reason


def test_silent_ones_last_in_host_order() -> None:
    script = Script(**{C: ("ok", 0.010)})
    t = targets(host(), script)
    assert round_order(t) == [C, A, B]


def test_a_silent_preferred_yields_to_one_that_answered() -> None:
    script = Script(**{A: ("ok", 0.010)})
    t = targets(host(preferred="c:1"), script)
    order = round_order(t)
    assert order[0] == A
    assert set(order) == {A, B, C}


def test_nothing_answered_tries_each_in_host_order() -> None:
    t = targets(host(), Script())
    assert round_order(t) == [A, B, C]
    assert "no connection answered" in t.resolution.reason


def test_a_round_goes_without_delay_then_the_next_round_probes_again() -> None:
    script = Script(**{A: ("ok", 0.01), B: ("ok", 0.02), C: ("ok", 0.03)})
    t = targets(host(), script)
    assert t.round_left() is False  # nothing begun yet
    first = t.next()
    assert len(script.calls) == 3
    assert t.round_left() is True
    t.failed("refused")
    t.next()
    t.failed("refused")
    assert t.round_left() is True
    t.next()
    t.failed("refused")
    assert t.round_left() is False  # the round is over: the backoff applies
    assert len(script.calls) == 3  # no probe within the round
    assert t.next() == first
    assert len(script.calls) == 6  # a new round probed again


def test_a_single_connection_is_never_probed() -> None:
    script = Script()
    t = HostTargets(dc.Host("laptop", ["a:1"]), script, LOG)
    assert t.next() == dc.HostConnection("a:1").target
    assert script.calls == []
    assert t.round_left() is False


def test_a_probe_that_raises_counts_as_silent() -> None:
    script = Script(**{A: "raise", B: ("ok", 0.01)})
    t = targets(host(preferred="a:1"), script)
    assert round_order(t) == [B, A, C]
    probes = {p.connection.id: p for p in t.probes}
    assert probes[A].ok is False
    assert "RuntimeError" in (probes[A].error or "")


def test_a_probe_reaching_another_daemon_is_demoted() -> None:
    script = Script(**{A: ("ok", 0.001, "srv-b"), B: ("ok", 0.02), C: ("ok", 0.03)})
    t = targets(host(preferred="a:1"), script)
    assert round_order(t) == [B, C, A]
    demoted = next(p for p in t.probes if p.connection.id == A)
    assert demoted.ok is False
    assert "srv-b" in (demoted.error or "")
    assert "srv-a" in (demoted.error or "")


def test_an_unknown_server_id_demotes_nothing() -> None:
    script = Script(**{A: ("ok", 0.001, "srv-b"), B: ("ok", 0.02)})
    t = targets(host(server_id=None), script)
    assert round_order(t)[0] == A


# ------------------------------------------------------------------ rounds that need not wait
def test_the_round_begins_once_the_preferred_answered() -> None:
    script = Script(**{A: ("ok", 0.01), B: "block", C: "block"})
    t = targets(host(preferred="a:1"), script, probe_timeout=60.0)
    assert next_within(t) == A
    wait_until(lambda: sorted(script.ended) == [B, C], LIVENESS, "the probes still running were not ended")
    assert {p.connection.id: p.ok for p in t.probes} == {A: True, B: False, C: False}


def test_without_a_preferred_the_round_begins_shortly_after_the_first_answer() -> None:
    script = Script(**{B: ("ok", 0.01), A: "block", C: "silent"})
    t = targets(host(), script, probe_timeout=60.0)
    assert next_within(t) == B
    wait_until(lambda: script.ended == [A], LIVENESS, "the blocked probe was not ended")


def test_a_silent_preferred_then_the_first_answer_settles_the_round() -> None:
    script = Script(**{A: "silent", B: ("ok", 0.01), C: "block"})
    t = targets(host(preferred="a:1"), script, probe_timeout=60.0)
    assert next_within(t) == B
    wait_until(lambda: script.ended == [C], LIVENESS, "the blocked probe was not ended")


def test_nothing_answering_waits_at_most_the_probe_timeout() -> None:
    script = Script(**{A: "block", B: "block", C: "silent"})
    t = targets(host(), script, probe_timeout=0.2)
    assert next_within(t) == A
    wait_until(lambda: sorted(script.ended) == [A, B], LIVENESS, "the blocked probes were not ended")


# ------------------------------------------------------------------ cancel
def test_cancel_ends_probes_in_progress_and_later_rounds_probe_nothing() -> None:
    script = Script(**{A: "block", B: "block", C: "block"})
    t = targets(host(), script, probe_timeout=60.0)
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(t.next()), name="test-next")
    thread.start()
    assert script.started.wait(LIVENESS)
    t.cancel()
    thread.join(LIVENESS)
    assert out, "next() did not return after cancel()"
    assert script.ended  # the blocked probes were ended
    assert t.round_left() is False
    calls = len(script.calls)
    for _ in range(4):  # the rest of this round, then a new one
        t.next()
    assert len(script.calls) == calls  # a later round probes nothing
    assert all(p.error == "closed" for p in t.probes)


def test_a_probe_registering_after_the_round_ended_is_ended_at_once() -> None:
    late = threading.Event()
    ended = threading.Event()
    released = threading.Event()

    def prober(connection: dc.HostConnection, timeout: float, on_cancel: Callable[[Callable[[], None]], None]) -> Probe:
        if connection.id == A:
            return Probe(connection, True, latency=0.01, server_id="srv-a")
        late.wait(LIVENESS)  # registers only once the round is over
        on_cancel(ended.set)
        released.set()
        return Probe(connection, False, error="late")

    t = HostTargets(dc.Host("laptop", ["a:1", "b:1"], preferred="a:1"), prober, LOG, probe_timeout=60.0)
    assert t.next() == dc.HostConnection("a:1").target
    late.set()
    assert ended.wait(LIVENESS)
    assert released.wait(LIVENESS)


# ------------------------------------------------------------------ admit
def test_admit_learns_an_unknown_server_id_then_refuses_another() -> None:
    learned: list[str] = []
    t = HostTargets(host(server_id=None), Script(**{A: ("ok", 0.01)}), LOG, on_learn=learned.append)
    t.next()
    assert t.admit("srv-a") is None
    assert learned == ["srv-a"]
    assert t.host.server_id == "srv-a"
    assert t.active == dc.HostConnection("a:1")
    t.failed("dropped")
    assert t.active is None
    t.next()
    refused = t.admit("srv-b")
    assert isinstance(refused, dc.ServerMismatch)
    assert isinstance(refused, dc.ConnectionLost)
    assert (refused.expected, refused.found) == ("srv-a", "srv-b")
    assert "srv-a" in str(refused)
    assert "srv-b" in str(refused)
    assert t.active is None
    assert learned == ["srv-a"]


def test_admit_refusal_names_no_credentials() -> None:
    h = dc.Host("laptop", ["tcp://a:1?password=hunter2-secret", "b:1"], server_id="srv-a")
    t = HostTargets(h, Script(**{A: ("ok", 0.01)}), LOG)
    t.next()
    refused = t.admit("srv-b")
    assert refused is not None
    assert "hunter2-secret" not in str(refused)
    assert "hunter2-secret" not in refused.connection


def test_a_failing_on_learn_never_fails_the_connection() -> None:
    def broken(_server_id: str) -> None:
        raise OSError("read-only store")

    t = HostTargets(host(server_id=None), Script(**{A: ("ok", 0.01)}), LOG, on_learn=broken)
    t.next()
    assert t.admit("srv-a") is None
    assert t.host.server_id == "srv-a"


def test_switch_listeners_hear_the_first_connection_and_a_failover_only() -> None:
    heard: list[tuple[str | None, str, str]] = []
    script = Script(**{A: ("ok", 0.01), B: ("ok", 0.02)})
    t = targets(dc.Host("laptop", ["a:1", "b:1"], preferred="a:1", server_id="srv-a"), script)
    t.add_switch_listener(lambda previous, current, why: heard.append((previous and previous.id, current.id, why)))
    t.next()
    t.admit("srv-a")
    t.failed("connection dropped")
    script.plan[A] = "silent"
    t.next()
    assert t.admit("srv-a") is None
    t.failed("connection dropped")
    script.plan[B] = "silent"
    t.next()  # both silent: the host's order, the preferred one first
    assert t.admit("srv-a") is None
    assert heard[0] == (None, A, "the preferred connection answered")
    assert heard[1][:2] == (A, B)
    assert heard[1][2].startswith("failover: direct:a:1 was lost (connection dropped)")
    assert heard[2][:2] == (B, A)
    assert heard[2][2].startswith("failover: direct:b:1 was lost")
    assert len(heard) == 3


def test_reconnecting_on_the_same_connection_is_no_switch() -> None:
    heard: list[object] = []
    t = targets(host(preferred="a:1"), Script(**{A: ("ok", 0.01)}))
    t.add_switch_listener(lambda *args: heard.append(args))
    for _ in range(3):
        t.next()
        t.admit("srv-a")
        t.failed("dropped")
    assert len(heard) == 1


# ------------------------------------------------------------------ threads
@pytest.mark.usefixtures("fast_switching")  # sys.setswitchinterval(1e-6), restored after
def test_readers_on_16_threads_while_the_reader_thread_works() -> None:
    script = Script(**{A: ("ok", 0.02), B: ("ok", 0.01), C: "silent"})
    t = targets(host(preferred="a:1"), script)
    ids = {c.target: c.id for c in t.host.connections}
    stop = threading.Event()
    errors: list[BaseException] = []
    reads = [0]

    def read() -> None:
        try:
            while not stop.is_set():
                assert t.current in ids
                active = t.active
                assert active is None or active.id in ids.values()
                resolution = t.resolution
                assert resolution.target in ids
                assert resolution.reason.startswith("host laptop: ")
                assert len(resolution.steps) == 3
                reads[0] += 1
        except BaseException as exc:
            errors.append(exc)

    readers = [threading.Thread(target=read, name=f"test-reader-{i}") for i in range(16)]
    for reader in readers:
        reader.start()
    try:
        for i in range(200):
            t.next()
            if i % 3 == 0:
                assert t.admit("srv-a") is None
            elif i % 3 == 1:
                assert t.admit("srv-b") is not None
            t.failed("dropped")
            t.round_left()
    finally:
        stop.set()
        for reader in readers:
            reader.join(LIVENESS)
    assert not errors, errors[:3]
    assert reads[0] > 0
    assert not [r for r in readers if r.is_alive()]


def test_the_reason_of_a_connection_tried_after_others_names_their_failures() -> None:
    heard: list[str] = []
    t = targets(host(preferred="a:1"), Script(**{A: ("ok", 0.01), B: ("ok", 0.02)}))
    t.add_switch_listener(lambda _previous, _current, why: heard.append(why))
    t.next()
    t.failed("Connection refused")
    assert t.round_left()
    t.next()
    assert t.admit("srv-a") is None
    assert heard == [f"tried after {A}: Connection refused"]
    assert t.resolution.reason == f"host laptop: {B} (tried after {A}: Connection refused)"


def test_terminal_failures_end_the_client_only_once_every_connection_failed_so() -> None:
    t = targets(host(), Script())
    t.next()
    t.failed("cannot be dialled", True)
    assert t.terminal(True) is False  # the others are still to be tried
    t.next()
    t.failed("refused", False)
    t.next()
    t.failed("cannot be dialled", True)
    assert t.terminal(True) is False  # one failure of the round may pass: try again later
    for _ in range(3):
        t.next()
        t.failed("cannot be dialled", True)
    assert t.terminal(True) is True
