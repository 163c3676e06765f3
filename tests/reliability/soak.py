"""Soak run: a client against a lively fake daemon that keeps failing, for minutes.

``python -m tests.reliability.soak --minutes 5`` (or ``--seconds N``) serves a fake daemon on
loopback with a :class:`~daemon_client.testing.simulation.Simulation` streaming turns, plus a
ticker agent streaming rows steadily. The client keeps long-lived timeline handles on every
agent, an agent observation and a provider subscription, while churn threads create and release
timeline subscriptions, agent and workspace observations and provider subscriptions and make
requests. A fault thread alternates healthy stretches (random length) with a random fault:
dropped sockets, daemon restarts with downtime, stalled pongs (a half-open daemon), malformed
frames.

Every timeline handle checks its events as they arrive: between two faults (a *segment*, from
the handle's first event or its ``subscription_restored`` to the next one) each ``seq`` must be
the previous one plus one under one epoch. After the last fault and a healthy stretch, the
producers stop and every long-lived handle must hold the agent's last ``seq``, and the agent
observation must match the fake's agents. Printed: faults injected and survived, events
delivered, events lost on healthy stretches, reconnects, operations and their outcomes, threads
and RSS at start and end. Exit status 1 if an event was lost on a healthy stretch, a fault was not
survived, an operation hung, a thread outlived the client, or the client logged an error.
"""

from __future__ import annotations

import argparse
import collections
import logging
import random
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import daemon_client as dc
from daemon_client.testing import FakeDaemon
from daemon_client.testing.simulation import Simulation

ALLOWED: tuple[type[BaseException], ...] = (
    dc.ConnectionLost,
    dc.NotConnected,
    dc.RequestTimeout,
    dc.ClientClosed,
    dc.SubscriptionReleased,
    dc.RpcError,
)
"""What an operation may end with while faults come and go (documented errors)."""
FAULTS = ("drop", "restart", "stalled pongs", "malformed frames")
TICKER = "ticker"
CALL_TIMEOUT = 5.0
READY_BOUND = 20.0
STUCK_AFTER = 40.0
"""An operation running longer than this is stuck (the longest legitimate one is a ready wait)."""
RECOVERY_BOUND = 20.0
CHURNERS = 4
WARM_UP = 30.0
"""RSS is also sampled this long after the start (a third of short runs): imports, thread
stacks and the first allocations are behind, so the growth after it is what the run added."""
LONG_LIVED_HANDLES = 2
MALFORMED: Sequence[str | bytes] = (
    "{not json",
    "[1, 2, 3]",
    '{"type": "session"}',
    '{"type": "session", "message": {"type": "agent_stream", "payload": "not an object"}}',
    '{"type": "session", "message": {"type": "agent_update", "payload": {"kind": 42}}}',
    '{"type": "session", "message": {"type": "providers_snapshot_update", "payload": {"entries": 7}}}',
    '{"type": "session", "message": {"type": "soak.unknown", "payload": {"blob": "' + "x" * 4096 + '"}}}',
    '{"type": "no_such_frame_type"}',
)  # a text frame that is not UTF-8 fails the connection (1007): test_bad_input.py covers it


def rss_mib() -> float:
    """Resident set size of this process in MiB (Linux ``/proc``; else the peak from ``resource``)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def dump_threads() -> str:
    frames = sys._current_frames()
    parts = []
    for thread in threading.enumerate():
        frame = frames.get(thread.ident or -1)
        stack = "".join(traceback.format_stack(frame)) if frame is not None else "  (no frame)\n"
        parts.append(f"--- {thread.name}\n{stack}")
    return "\n".join(parts)


def wait_until(condition: Callable[[], bool], timeout: float, interval: float = 0.01) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return condition()
        time.sleep(interval)
    return True


class Stats:
    """Every figure of the run; counters are updated from several threads under one lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.faults: collections.Counter[str] = collections.Counter()
        self.survived: collections.Counter[str] = collections.Counter()
        self.fault_failures: list[str] = []
        self.events = 0
        self.long_lived_events = 0
        self.directory_updates = 0
        self.provider_updates = 0
        self.gaps: list[str] = []
        self.lost = 0
        self.out_of_order = 0
        self.segments = 0
        self.reconnects = 0
        self.operations: collections.Counter[str] = collections.Counter()
        self.unexpected: list[str] = []
        self.slowest = 0.0
        self.stuck: list[str] = []
        self.callback_errors: list[str] = []
        self.tail_missing = 0
        self.tail_details: list[str] = []
        self.directory_mismatch: list[str] = []

    def add(self, name: str, amount: int = 1) -> None:
        with self.lock:
            setattr(self, name, getattr(self, name) + amount)

    def on_state(self, old: dc.ConnectionState, new: dc.ConnectionState, reason: str) -> None:
        if new is dc.ConnectionState.CONNECTED and reason == "reconnected":
            self.add("reconnects")

    def on_callback_error(self, exc: BaseException) -> None:
        with self.lock:
            self.callback_errors.append(f"{type(exc).__name__}: {exc}")

    def count_directory(self, *_: object) -> None:
        self.add("directory_updates")

    def count_provider(self, *_: object) -> None:
        self.add("provider_updates")


class SeqTracker:
    """A timeline handler checking ``seq`` continuity per segment (callback thread only)."""

    def __init__(self, stats: Stats, agent_id: str, long_lived: bool) -> None:
        self.stats = stats
        self.agent_id = agent_id
        self.long_lived = long_lived
        self.epoch: str | None = None
        self.last: int | None = None
        self.fresh = True  # the next row starts a new segment
        self.ended = False

    def __call__(self, update: dc.TimelineUpdate) -> None:
        kind = update.type
        if kind in ("subscription_restored", "replacement"):
            self.fresh = True  # nothing is replayed across a reconnect: a new segment
            return
        if kind == "error":
            self.ended = True
            return
        seq = update.seq
        if seq is None:
            return  # turn and attention events carry no seq
        stats = self.stats
        with stats.lock:
            stats.events += 1
            if self.long_lived:
                stats.long_lived_events += 1
            if self.fresh or self.last is None or update.epoch != self.epoch:
                stats.segments += 1
                self.fresh = False
            elif seq != self.last + 1:
                if seq <= self.last:
                    stats.out_of_order += 1
                    detail = f"{self.agent_id}: seq {seq} after {self.last} (out of order)"
                else:
                    stats.lost += seq - self.last - 1
                    detail = f"{self.agent_id}: seq {seq} after {self.last} ({seq - self.last - 1} lost)"
                if len(stats.gaps) < 20:
                    stats.gaps.append(detail)
            self.epoch = update.epoch
            self.last = seq


class Inflight:
    """Operations in progress per thread, for the stuck watchdog."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: dict[int, tuple[str, float]] = {}

    def start(self, name: str) -> None:
        with self.lock:
            self.running[threading.get_ident()] = (name, time.monotonic())

    def end(self) -> float:
        with self.lock:
            _, started = self.running.pop(threading.get_ident(), ("", time.monotonic()))
        return time.monotonic() - started

    def oldest(self) -> tuple[str, float] | None:
        now = time.monotonic()
        with self.lock:
            ages = [(name, now - started) for name, started in self.running.values()]
        return max(ages, key=lambda item: item[1]) if ages else None


class Soak:
    """One soak run; :meth:`run` returns the exit status after printing the figures."""

    def __init__(self, seconds: float, seed: int, host_kind: dc.HostKind, transport: str) -> None:
        self.seconds = seconds
        self.seed = seed
        self.host_kind = host_kind
        self.transport = transport
        self.stats = Stats()
        self.inflight = Inflight()
        self.stop_faults = threading.Event()
        self.stop_churn = threading.Event()
        self.stop_ticker = threading.Event()
        self.stop_watchdog = threading.Event()
        self.ticker_last = 0
        self.error_records: list[str] = []
        self.rss_warm: float | None = None

    # ------------------------------------------------------------------ setup
    def _log_errors(self) -> logging.Handler:
        """Count ERROR records of the client itself (not of the fake) and keep them quiet."""
        soak = self

        class Collect(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                if record.levelno >= logging.ERROR and not record.name.startswith("daemon_client.testing"):
                    soak.error_records.append(f"{record.name}: {record.getMessage()}")

        handler = Collect()
        logger = logging.getLogger("daemon_client")
        logger.addHandler(handler)
        logger.propagate = False
        return handler

    def _client(self, fake: FakeDaemon) -> dc.Client:
        options: dict[str, Any] = {
            "reconnect": dc.ReconnectPolicy(base_delay=0.05, max_delay=0.5, stable_after=1.0),
            "heartbeat": dc.Heartbeat(interval=0.5, timeout=1.0, max_misses=2),
            "connect_timeout": 5.0,
            "on_callback_error": self.stats.on_callback_error,
        }
        if self.transport == "loopback":
            return dc.Client(fake.serve(), **options)
        return dc.Client("ws://fake-daemon/ws", transport_factory=fake.transport_factory, **options)

    # ------------------------------------------------------------------ threads
    def ticker(self, fake: FakeDaemon) -> None:
        """A steady stream of rows on one agent, and a provider update every second."""
        published = time.monotonic()
        appended = 0
        while not self.stop_ticker.wait(0.002):
            self.ticker_last = fake.timeline.append(TICKER, {"type": "assistant_message", "text": "tick"})
            appended += 1
            if appended % 5000 == 0:
                fake.timeline.trim(TICKER, 100)
            if time.monotonic() - published >= 1.0:
                fake.providers.publish()
                published = time.monotonic()

    def churn(self, client: dc.Client, agents: Sequence[str], index: int) -> None:
        rng = random.Random(self.seed * 100 + index)
        stats = self.stats

        def hold() -> None:
            self.stop_churn.wait(rng.uniform(0.05, 1.0))

        def timeline() -> None:
            tracker = SeqTracker(stats, rng.choice(agents), long_lived=False)
            sub = client.agents.ref(tracker.agent_id).timeline.subscribe(tracker)
            try:
                self._ready(sub.ready, "timeline subscription")
                hold()
            finally:
                sub.release(timeout=CALL_TIMEOUT)

        def agents_observation() -> None:
            observation = client.agents.list(subscribe=True, timeout=CALL_TIMEOUT).subscription
            observation.subscribe(update=stats.count_directory)
            try:
                hold()
            finally:
                observation.release(timeout=CALL_TIMEOUT)

        def workspaces_observation() -> None:
            observation = client.workspaces.list(subscribe=True, timeout=CALL_TIMEOUT).subscription
            observation.subscribe(update=stats.count_directory)
            try:
                hold()
            finally:
                observation.release(timeout=CALL_TIMEOUT)

        def providers() -> None:
            sub = client.providers.subscribe(stats.count_provider)
            try:
                self._ready(sub.ready, "provider subscription")
                hold()
            finally:
                sub.release(timeout=CALL_TIMEOUT)

        def ping() -> None:
            client.ping(timeout=CALL_TIMEOUT)

        def refetch() -> None:
            client.agents.ref(rng.choice(agents)).timeline.refetch("tail", limit=20, timeout=CALL_TIMEOUT)

        def plain_list() -> None:
            client.agents.list(timeout=CALL_TIMEOUT)

        ops: list[tuple[str, Callable[[], None]]] = [
            ("timeline", timeline),
            ("timeline", timeline),
            ("agents observation", agents_observation),
            ("workspaces observation", workspaces_observation),
            ("providers", providers),
            ("ping", ping),
            ("refetch", refetch),
            ("list", plain_list),
        ]
        while not self.stop_churn.is_set():
            name, op = rng.choice(ops)
            self.inflight.start(name)
            try:
                op()
                outcome = "ok"
            except ALLOWED as exc:
                outcome = type(exc).__name__
            except Exception as exc:
                outcome = "unexpected"
                with stats.lock:
                    stats.unexpected.append(f"{name}: {type(exc).__name__}: {exc}")
            elapsed = self.inflight.end()
            with stats.lock:
                stats.operations[outcome] += 1
                stats.slowest = max(stats.slowest, elapsed)

    def _ready(self, ready: Future[Any], what: str) -> None:
        try:
            ready.result(READY_BOUND)
        except FutureTimeout:
            with self.stats.lock:
                self.stats.stuck.append(f"{what}: ready unresolved after {READY_BOUND:g} s")

    def watchdog(self) -> None:
        reported = False
        while not self.stop_watchdog.wait(0.5):
            oldest = self.inflight.oldest()
            if oldest is not None and oldest[1] > STUCK_AFTER and not reported:
                reported = True
                with self.stats.lock:
                    self.stats.stuck.append(f"{oldest[0]} running for {oldest[1]:.0f} s\n{dump_threads()}")

    def faults(self, client: dc.Client, fake: FakeDaemon, end: float) -> None:
        rng = random.Random(self.seed)
        stats = self.stats
        while not self.stop_faults.is_set():
            healthy = rng.uniform(1.0, 3.0)
            if time.monotonic() + healthy + 3.0 > end or self.stop_faults.wait(healthy):
                return
            kind = rng.choice(FAULTS)
            with stats.lock:
                stats.faults[kind] += 1
            try:
                self._inject(kind, client, fake, rng)
            except Exception as exc:
                with stats.lock:
                    stats.fault_failures.append(f"{kind}: {type(exc).__name__}: {exc}")
                continue
            with stats.lock:
                stats.survived[kind] += 1

    def _inject(self, kind: str, client: dc.Client, fake: FakeDaemon, rng: random.Random) -> None:
        before = fake.accepted_count
        if kind == "drop":
            fake.drop_connections()
        elif kind == "restart":
            fake.restart(downtime=rng.uniform(0.0, 1.0))
        elif kind == "stalled pongs":
            fake.answer_pings = False
            try:
                if not wait_until(lambda: client.state is not dc.ConnectionState.CONNECTED, RECOVERY_BOUND):
                    raise AssertionError("the heartbeat did not notice a daemon that stopped answering pings")
            finally:
                fake.answer_pings = True
        else:
            for _ in range(rng.randint(1, 5)):
                frame = rng.choice(MALFORMED)
                if isinstance(frame, str) and rng.random() < 0.2:
                    fake.send_raw(frame, binary=True)
                else:
                    fake.send_raw(frame)
            client.ping(timeout=CALL_TIMEOUT)
            if fake.accepted_count != before:
                raise AssertionError("malformed frames made the client reconnect")
            return
        recovered = wait_until(
            lambda: fake.accepted_count > before and client.state is dc.ConnectionState.CONNECTED, RECOVERY_BOUND
        )
        if not recovered:
            raise AssertionError(f"not connected again {RECOVERY_BOUND:g} s after the fault (state {client.state})")
        client.ping(timeout=CALL_TIMEOUT)

    # ------------------------------------------------------------------ the run
    def run(self) -> int:
        threads_start = set(threading.enumerate())
        rss_start = rss_mib()
        handler = self._log_errors()
        fake = FakeDaemon(host_kind=self.host_kind)
        simulation = Simulation(fake, chunk_delay=0.005, pause=0.2, seed=self.seed)
        fake.agents.upsert(TICKER, title="Ticker", cwd="/home/dev/projects/ticker", status="running")
        agents = [*simulation.agent_ids, TICKER]
        client = self._client(fake)
        workers: list[threading.Thread] = []
        close_seconds = 0.0
        started = time.monotonic()
        try:
            client.connect(timeout=10.0)
            client.on_state_change(self.stats.on_state)
            long_lived: list[tuple[SeqTracker, dc.TimelineSubscription]] = []
            for agent_id in agents:
                for _ in range(LONG_LIVED_HANDLES):
                    tracker = SeqTracker(self.stats, agent_id, long_lived=True)
                    long_lived.append((tracker, client.agents.ref(agent_id).timeline.subscribe(tracker)))
            for _, sub in long_lived:
                sub.ready.result(10.0)
            observation = client.agents.list(subscribe=True).subscription
            observation.subscribe(update=self.stats.count_directory)
            providers = client.providers.subscribe(self.stats.count_provider)
            providers.ready.result(10.0)

            end = started + self.seconds
            simulation.start()
            workers = [
                threading.Thread(target=self.ticker, args=(fake,), name="soak-ticker"),
                threading.Thread(target=self.watchdog, name="soak-watchdog"),
                threading.Thread(target=self.faults, args=(client, fake, end), name="soak-faults"),
            ]
            churners = [
                threading.Thread(target=self.churn, args=(client, agents, n), name=f"soak-churn-{n}")
                for n in range(CHURNERS)
            ]
            workers += churners
            for thread in workers:
                thread.start()
            warm_up = started + min(WARM_UP, self.seconds / 3)
            while time.monotonic() < end and not self.stats.stuck:
                if self.rss_warm is None and time.monotonic() >= warm_up:
                    self.rss_warm = rss_mib()
                time.sleep(min(1.0, max(0.0, end - time.monotonic())))

            # Wind down: no more faults; churn stops; producers stop; everything must have arrived.
            self.stop_faults.set()
            self.stop_churn.set()
            self._join(workers[2:], STUCK_AFTER)
            self.stop_ticker.set()
            simulation.stop()
            self._join(workers[:1], 10.0)
            if not wait_until(lambda: not any(fake.runs.is_running(a) for a in simulation.agent_ids), 30.0):
                self.stats.stuck.append("simulated turns still running 30 s after the simulation stopped")
            if not wait_until(lambda: client.state is dc.ConnectionState.CONNECTED, RECOVERY_BOUND):
                self.stats.stuck.append(f"not connected at the end (state {client.state})")
            fake.timeline.wait_idle(10.0)
            client.ping(timeout=CALL_TIMEOUT)
            if not client.flush_callbacks(30.0):
                self.stats.stuck.append("callbacks still queued 30 s after the producers stopped")
            self._check_tail(fake, long_lived)
            self._check_directory(fake, observation)
            for _, sub in long_lived:
                sub.release(timeout=CALL_TIMEOUT)
            observation.release(timeout=CALL_TIMEOUT)
            providers.release(timeout=CALL_TIMEOUT)
        except Exception as exc:
            self.stats.unexpected.append(f"soak driver: {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        finally:
            self.stop_faults.set()
            self.stop_churn.set()
            self.stop_ticker.set()
            closing = time.monotonic()
            client.close()
            close_seconds = time.monotonic() - closing
            simulation.stop()
            self.stop_watchdog.set()
            self._join(workers, STUCK_AFTER)
            fake.close()
            logging.getLogger("daemon_client").removeHandler(handler)
        leaked = self._leaked(threads_start)
        return self._report(time.monotonic() - started, close_seconds, threads_start, leaked, rss_start)

    def _join(self, threads: Sequence[threading.Thread], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = [thread.name for thread in threads if thread.is_alive()]
        if alive:
            self.stats.stuck.append(f"threads still running after {timeout:g} s: {alive}\n{dump_threads()}")

    def _check_tail(self, fake: FakeDaemon, long_lived: list[tuple[SeqTracker, dc.TimelineSubscription]]) -> None:
        """Once the producers stopped, one last row per agent: every long-lived handle must get it
        right after the row it got before (continuity is checked as it arrives)."""
        agent_ids = sorted({tracker.agent_id for tracker, _ in long_lived})
        last = {
            agent_id: fake.timeline.append(agent_id, {"type": "assistant_message", "text": "end"})
            for agent_id in agent_ids
        }
        wait_until(lambda: all(t.last == last[t.agent_id] for t, _ in long_lived if not t.ended), 10.0)
        for tracker, sub in long_lived:
            expected = last[tracker.agent_id]
            if tracker.ended or tracker.last != expected:
                missing = expected - (tracker.last or 0)
                self.stats.tail_missing += max(0, missing)
                self.stats.tail_details.append(
                    f"{tracker.agent_id} ({sub.subscription_id}): last seq {tracker.last}, the daemon's {expected}"
                    + (" (ended)" if tracker.ended else "")
                )

    def _check_directory(self, fake: FakeDaemon, observation: Any) -> None:
        """After the last healthy stretch the long-lived agent observation matches the daemon."""

        def views() -> tuple[dict[str, str], dict[str, str]]:
            current = observation.current()
            mine = {e.agent.id: f"{e.agent.status}@{e.agent.updated_at}" for e in current.entries} if current else {}
            theirs = {str(a["id"]): f"{a.get('status')}@{a.get('updatedAt')}" for a in fake.agents.all()}
            return mine, theirs

        wait_until(lambda: views()[0] == views()[1], 10.0)
        mine, theirs = views()
        if mine != theirs:
            self.stats.directory_mismatch = [
                f"{key}: client {mine.get(key)}, daemon {theirs.get(key)}"
                for key in sorted(set(mine) | set(theirs))
                if mine.get(key) != theirs.get(key)
            ]

    def _leaked(self, threads_start: set[threading.Thread]) -> list[str]:
        wait_until(lambda: not (set(threading.enumerate()) - threads_start), 5.0)
        return sorted(thread.name for thread in set(threading.enumerate()) - threads_start)

    def _report(
        self,
        elapsed: float,
        close_seconds: float,
        threads_start: set[threading.Thread],
        leaked: list[str],
        rss_start: float,
    ) -> int:
        s = self.stats
        injected = sum(s.faults.values())
        survived = sum(s.survived.values())
        planned = s.faults["drop"] + s.faults["restart"] + s.faults["stalled pongs"]
        errors = {k: v for k, v in s.operations.items() if k not in ("ok", "unexpected")}
        lost_healthy = s.lost + s.out_of_order + s.tail_missing
        problems = []
        if lost_healthy:
            problems.append(f"{lost_healthy} events lost or out of order on healthy stretches")
        if survived != injected or s.fault_failures:
            problems.append(f"{injected - survived} faults not survived")
        if s.stuck:
            problems.append("the client got stuck")
        if leaked:
            problems.append(f"threads leaked: {', '.join(leaked)}")
        if s.unexpected:
            problems.append(f"{len(s.unexpected)} unexpected errors")
        if s.directory_mismatch:
            problems.append("the agent observation does not match the daemon")
        if self.error_records or s.callback_errors:
            problems.append(f"{len(self.error_records)} client errors logged, {len(s.callback_errors)} callback errors")
        if close_seconds > 10.0:
            problems.append(f"close() took {close_seconds:.1f} s")

        def by_kind(counter: collections.Counter[str]) -> str:
            return ", ".join(f"{kind} {counter[kind]}" for kind in FAULTS)

        lines = [
            f"soak: {elapsed:.0f} s on a {self.host_kind.value} host over {self.transport}, seed {self.seed}",
            f"faults injected: {injected} ({by_kind(s.faults)})",
            f"faults survived: {survived} ({by_kind(s.survived)})",
            f"reconnects: {s.reconnects} (faults that reconnect: {planned}; other: {max(0, s.reconnects - planned)})",
            f"timeline events delivered: {s.events} (long-lived handles {s.long_lived_events}, "
            f"churned handles {s.events - s.long_lived_events}; {s.segments} segments)",
            f"directory updates delivered: {s.directory_updates}; provider updates delivered: {s.provider_updates}",
            f"events lost on healthy stretches: {lost_healthy} (gaps {s.lost}, out of order {s.out_of_order}, "
            f"missing at the end {s.tail_missing})",
            f"agent observation matches the daemon at the end: {'no' if s.directory_mismatch else 'yes'}",
            f"operations: {sum(s.operations.values())} (ok {s.operations['ok']}; documented errors "
            f"{sum(errors.values())}: {dict(sorted(errors.items()))}; unexpected {s.operations['unexpected']}); "
            f"slowest {s.slowest:.2f} s",
            f"close(): {close_seconds:.2f} s",
            f"threads: start {len(threads_start)}, end {len(threads_start) + len(leaked)} "
            f"(leaked: {', '.join(leaked) or 'none'})",
            f"RSS: start {rss_start:.1f} MiB, after {min(WARM_UP, self.seconds / 3):.0f} s "
            f"{self.rss_warm or 0.0:.1f} MiB, end {rss_mib():.1f} MiB (the fake daemon runs in this process too)",
        ]
        details = [*s.fault_failures, *s.gaps, *s.tail_details, *s.directory_mismatch, *s.unexpected[:10]]
        details += [*s.stuck, *self.error_records[:10], *s.callback_errors[:10]]
        lines += [f"  ! {line}" for line in details]
        lines.append(f"result: {'FAIL: ' + '; '.join(problems) if problems else 'PASS'}")
        print("\n".join(lines), flush=True)
        return 1 if problems else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.reliability.soak", description=__doc__.split("\n\n")[0])
    duration = parser.add_mutually_exclusive_group()
    duration.add_argument("--minutes", type=float, help="how long to run (default 5)")
    duration.add_argument("--seconds", type=float, help="how long to run, for short runs")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: random, printed)")
    parser.add_argument("--host-kind", choices=[kind.value for kind in dc.HostKind], default="capable")
    parser.add_argument("--transport", choices=["loopback", "memory"], default="loopback")
    args = parser.parse_args(argv)
    seconds = args.seconds if args.seconds is not None else 60.0 * (args.minutes if args.minutes is not None else 5.0)
    if seconds < 10:
        parser.error("a soak needs at least 10 seconds")
    seed = args.seed if args.seed is not None else random.randrange(10**6)
    return Soak(seconds, seed, dc.HostKind(args.host_kind), args.transport).run()


if __name__ == "__main__":
    sys.exit(main())
