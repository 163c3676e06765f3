"""Many threads at once: requests, subscriptions and releases while the daemon drops connections.

32 worker threads request (``request``, ``request_async``, ``ping``), subscribe and release
(timeline subscriptions, agent and workspace observations, provider subscriptions) while a
dropper thread aborts the fake's sockets at random intervals and a producer keeps frames
flowing. Every call must end within a bound, with a result or a documented error; nothing may
deadlock (the test has a budget and dumps every thread's stack when it is exceeded). Afterwards
the client's tables are empty, the fake holds no live subscription of the client (where the host
kind lets it tell), and ``close()`` leaves no thread.

The races this turned up are pinned down one by one below, each by a deterministic test that
forces the interleaving: BUG_OBSERVE_LEAK, BUG_UNION_AFTER_RECONNECT and BUG_UNION_ORDER (fixed,
now regression tests). BUG_STALE_UNION (a ``ready`` that never resolved on a selective host: a
caller's establishment failure handled after the next connection's restore put the handle back
to pending for good) is fixed too; its deterministic tests are in
tests/subscriptions/test_subscription_contract.py, and this test no longer tolerates its symptom.
BUG_WRITE_BEFORE_HELLO (a request that saw the old connection written on the next transport
before its hello: the daemon closed it with 4002 and the client stopped for good) is fixed and
pinned down below.
"""

from __future__ import annotations

import collections
import logging
import random
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon

WORKERS = 32
MAX_DROPS = 10
CALL_TIMEOUT = 2.0
"""Timeout given to every request and release made by the workers."""
OP_BOUND = 20.0
"""No single operation may take longer (requests end by CALL_TIMEOUT + 1 s; establishment
requests by their 15 s control timeout only if the daemon never answers, which it does)."""
READY_BOUND = 14.0
"""A ready future spans reconnects under 32 busy threads; on a loaded 2-core machine a few reconnect
cycles took more than 5 s, so the bound stays just under the 15 s control timeout, past which the
subscription would fail with RequestTimeout instead of staying unresolved."""
TEST_BUDGET = 45.0
"""Below the 60 s watchdog of tests/reliability/conftest.py, so that this test names its stuck threads."""
ALLOWED = (
    dc.ConnectionLost,
    dc.NotConnected,
    dc.RequestTimeout,
    dc.ClientClosed,
    dc.SubscriptionReleased,
    dc.RpcError,
)
AGENTS = ("a1", "a2", "a3")


def dump_threads() -> str:
    """Every live thread's stack, for a failure message."""
    frames = sys._current_frames()
    parts = []
    for thread in threading.enumerate():
        frame = frames.get(thread.ident or -1)
        stack = "".join(traceback.format_stack(frame)) if frame is not None else "  (no frame)\n"
        parts.append(f"--- {thread.name} (daemon={thread.daemon})\n{stack}")
    return "\n".join(parts)


def wait_until(condition: Callable[[], bool], timeout: float, interval: float = 0.01) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return condition()
        time.sleep(interval)
    return True


class Stress:
    """Shared bookkeeping of one run: outcomes per operation, failures, slow operations."""

    def __init__(self, client: dc.Client, fake: FakeDaemon, seed: int) -> None:
        self.client = client
        self.fake = fake
        self.seed = seed
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.outcomes: collections.Counter[str] = collections.Counter()
        self.failures: list[str] = []
        self.slowest = 0.0
        self.drops = 0
        self.events = 0

    def record(self, op: str, outcome: str, elapsed: float) -> None:
        with self.lock:
            self.outcomes[f"{op}:{outcome}"] += 1
            self.slowest = max(self.slowest, elapsed)
            if elapsed > OP_BOUND:
                self.failures.append(f"{op} took {elapsed:.2f} s ({outcome})")

    def fail(self, message: str) -> None:
        with self.lock:
            self.failures.append(message)

    def count_event(self, *_: object) -> None:
        with self.lock:
            self.events += 1

    # ---------------------------------------------------------------- operations
    def op_ping(self, rng: random.Random) -> None:
        self.client.ping(timeout=CALL_TIMEOUT)

    def op_request(self, rng: random.Random) -> None:
        value = rng.randrange(10**9)
        reply = self.client.request({"type": "echo_request", "value": value}, timeout=CALL_TIMEOUT)
        if reply.get("echo") != value:
            self.fail(f"echo_request {value} answered {reply!r}")

    def op_request_async(self, rng: random.Random) -> None:
        value = rng.randrange(10**9)
        future = self.client.request_async({"type": "echo_request", "value": value}, timeout=CALL_TIMEOUT)
        try:
            reply = future.result(CALL_TIMEOUT + 1.5)
        except FutureTimeout:
            self.fail(f"request_async future unresolved {CALL_TIMEOUT + 1.5} s after the call")
            return
        if reply.get("echo") != value:
            self.fail(f"echo_request {value} answered {reply!r}")

    def _await_ready(self, what: str, ready: Any) -> None:
        try:
            ready.result(READY_BOUND)
        except FutureTimeout:
            self.fail(f"{what}.ready unresolved after {READY_BOUND} s")

    def op_timeline(self, rng: random.Random) -> None:
        agent = self.client.agents.ref(rng.choice(AGENTS))
        subs = [agent.timeline.subscribe(self.count_event) for _ in range(rng.randint(1, 3))]
        try:
            for sub in subs:
                if rng.random() < 0.7:
                    self._await_ready("timeline subscription", sub.ready)
        finally:
            rng.shuffle(subs)
            for sub in subs:
                if rng.random() < 0.3:
                    sub()  # release without waiting
                else:
                    sub.release(timeout=CALL_TIMEOUT)
        for sub in subs:  # released: ready is settled one way or the other
            if not sub.ready.done():
                self.fail(f"{sub!r}.ready still pending after release")

    def op_agents(self, rng: random.Random) -> None:
        result = self.client.agents.list(subscribe=True, timeout=CALL_TIMEOUT)
        observation = result.subscription
        assert observation is not None
        remove = observation.subscribe(snapshot=self.count_event, update=self.count_event)
        if rng.random() < 0.2:
            remove()
        observation.release(timeout=CALL_TIMEOUT)

    def op_workspaces(self, rng: random.Random) -> None:
        with self.client.workspaces.list(subscribe=True, timeout=CALL_TIMEOUT).subscription as observation:
            observation.subscribe(update=self.count_event)

    def op_providers(self, rng: random.Random) -> None:
        sub = self.client.providers.subscribe(self.count_event)
        try:
            if rng.random() < 0.7:
                self._await_ready("provider subscription", sub.ready)
        finally:
            sub.release(timeout=CALL_TIMEOUT)

    # ---------------------------------------------------------------- threads
    def worker(self, index: int) -> None:
        rng = random.Random(self.seed * 1000 + index)
        ops: list[tuple[str, Callable[[random.Random], None]]] = [
            ("ping", self.op_ping),
            ("request", self.op_request),
            ("request_async", self.op_request_async),
            ("timeline", self.op_timeline),
            ("timeline", self.op_timeline),
            ("agents", self.op_agents),
            ("workspaces", self.op_workspaces),
            ("providers", self.op_providers),
        ]
        while not self.stop.is_set():
            name, op = rng.choice(ops)
            started = time.monotonic()
            try:
                op(rng)
                outcome = "ok"
            except ALLOWED as exc:
                outcome = type(exc).__name__
            except BaseException as exc:
                outcome = f"UNEXPECTED {type(exc).__name__}"
                self.fail(f"{name}: {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
            self.record(name, outcome, time.monotonic() - started)

    def dropper(self) -> None:
        rng = random.Random(self.seed)
        while self.drops < MAX_DROPS and not self.stop.wait(rng.uniform(0.05, 0.3)):
            self.fake.drop_connections()
            self.drops += 1

    def producer(self) -> None:
        rng = random.Random(self.seed + 1)
        statuses = ("idle", "running")
        while not self.stop.wait(0.002):
            agent_id = rng.choice(AGENTS)
            self.fake.timeline.append(agent_id, {"type": "assistant_message", "text": "x"})
            if rng.random() < 0.1:
                self.fake.agents.upsert(agent_id, status=rng.choice(statuses))
            if rng.random() < 0.02:
                self.fake.providers.publish()


def _client_threads(client: dc.Client) -> list[str]:
    prefix = f"{client._name}-"
    return [t.name for t in threading.enumerate() if t.name.startswith(prefix) and t.is_alive()]


def _internal_tables(client: dc.Client) -> dict[str, int]:
    """How many entries the client's registries still hold (all zero once everything is released)."""
    timelines = client._namespaces.timelines()
    events = client._namespaces.events()
    agents = client.agents._manager
    workspaces = client.workspaces._manager
    return {
        "requests": len(client._requests),
        "timeline subs": len(timelines._subs),
        "timeline routes": len(timelines._routes),
        "timeline keys": len(timelines._by_key),
        "event subs": len(events._subs),
        "event routes": len(events._routes),
        "event keys": len(events._by_key),
        "agent observations": len(agents._observations),
        "agent routes": len(agents._routes),
        "workspace observations": len(workspaces._observations),
        "workspace routes": len(workspaces._routes),
    }


def _nonzero(table: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in table.items() if value}


def _server_side(fake: FakeDaemon) -> dict[str, list[Any]]:
    """What the fake still holds for its clients (one client per test here): timeline and event
    subscriptions (capable) or unions (selective; broadcast-only hosts hold none), and directory
    observations on capable hosts (older ones keep one directory slot per session by design)."""
    found: dict[str, list[Any]] = {
        "timeline": fake.timeline.subscriptions(),
        "events": fake.events.subscriptions(),
    }
    if fake.host_kind is dc.HostKind.CAPABLE:
        found["directory"] = fake.directory_observations()
    return found


@pytest.mark.parametrize(
    ("kind", "transport"),
    [("capable", "memory"), ("capable", "loopback"), ("selective", "memory"), ("broadcast", "memory")],
)
def test_threads_request_subscribe_and_release_while_connections_drop(fakes, make_client, kind, transport) -> None:
    fake = fakes(kind)
    fake.on_request("echo_request", lambda ctx: ctx.reply({"echo": ctx.message.get("value")}))
    for agent_id in AGENTS:
        fake.agents.upsert(agent_id, cwd=f"/home/dev/{agent_id}", status="idle")
    fake.workspaces.open("/home/dev/a1")
    client = make_client(fake, transport, strict=True)
    client.connect()
    stress = Stress(client, fake, seed=sum(map(ord, kind + transport)))

    workers = [threading.Thread(target=stress.worker, args=(n,), name=f"stress-worker-{n}") for n in range(WORKERS)]
    helpers = [
        threading.Thread(target=stress.dropper, name="stress-dropper"),
        threading.Thread(target=stress.producer, name="stress-producer"),
    ]
    started = time.monotonic()
    for thread in workers + helpers:
        thread.start()
    try:
        # Churn until every drop happened, then a healthy stretch with the workers still going.
        assert wait_until(lambda: stress.drops >= MAX_DROPS, 20.0), f"only {stress.drops} drops\n{dump_threads()}"
        time.sleep(0.5)
    finally:
        stress.stop.set()
        deadline = started + TEST_BUDGET
        for thread in workers + helpers:
            thread.join(max(0.0, deadline - time.monotonic()))
    stuck = [thread.name for thread in workers + helpers if thread.is_alive()]
    assert not stuck, f"deadlock or hang: {stuck} still running after {TEST_BUDGET} s\n{dump_threads()}"

    logging.getLogger(__name__).info(
        "%d drops; outcomes %s; %d events; slowest %.2f s",
        stress.drops,
        dict(stress.outcomes),
        stress.events,
        stress.slowest,
    )
    assert not stress.failures, "\n".join(stress.failures[:20])
    oks = sum(count for key, count in stress.outcomes.items() if key.endswith(":ok"))
    errors = sum(count for key, count in stress.outcomes.items() if not key.endswith(":ok"))
    assert oks > WORKERS, stress.outcomes  # real work happened, not only failures
    assert errors > 0, stress.outcomes  # and the drops did hit calls in flight

    # Healthy again, and nothing is left registered on either side.
    assert wait_until(lambda: client.state is dc.ConnectionState.CONNECTED, 10.0), client.state
    client.ping(timeout=5.0)
    assert client.flush_callbacks(10.0)
    assert wait_until(lambda: not _nonzero(_internal_tables(client)), 5.0), _nonzero(_internal_tables(client))
    assert wait_until(lambda: not _nonzero(_server_side(fake)), 5.0), _nonzero(_server_side(fake))
    client.raise_callback_errors()

    client.close()  # bounded by its own timeout; the thread check below proves it ended
    assert client.state is dc.ConnectionState.DISPOSED
    assert wait_until(lambda: not _client_threads(client), 5.0), _client_threads(client)


def _wait_state(client: dc.Client, state: dc.ConnectionState) -> None:
    assert wait_until(lambda: client.state is state, 10.0), f"state is {client.state}, expected {state}"


def test_a_subscribing_list_that_cannot_be_sent_leaves_nothing_registered(fakes, make_client) -> None:
    """Regression (BUG_OBSERVE_LEAK, fixed in c438caf): ``DirectoryManager.observe`` registered the
    observation before ``submit()``; when that raised at once (``NotConnected``) the observation
    stayed registered for good (ESTABLISHING, no ID, ``ready`` never settled)."""
    fake = fakes("capable")
    client = make_client(fake, reconnect=dc.ReconnectPolicy(base_delay=30.0, max_delay=30.0))
    client.connect()
    fake.drop_connections()
    _wait_state(client, dc.ConnectionState.DISCONNECTED)
    for _ in range(3):
        with pytest.raises(dc.NotConnected):
            client.agents.list(subscribe=True)
        with pytest.raises(dc.NotConnected):
            client.workspaces.list(subscribe=True)
    leftovers = [*client.agents._manager._observations, *client.workspaces._manager._observations]
    assert leftovers == []


def test_releasing_while_disconnected_empties_the_selective_unions_after_the_reconnect(fakes, make_client) -> None:
    """Regression (BUG_UNION_AFTER_RECONNECT, fixed in c438caf): a selective daemon keeps the unions in
    the session a reconnect resumes; releasing the last handles while disconnected sent nothing
    after the reconnect, and the daemon went on streaming what nobody wanted any more."""
    fake = fakes("selective")
    fake.agents.upsert("a1")
    client = make_client(fake)
    client.connect()
    timeline = client.agents.ref("a1").timeline.subscribe(lambda update: None)
    providers = client.providers.subscribe(lambda update: None)
    timeline.ready.result(5)
    providers.ready.result(5)
    assert fake.timeline.subscriptions()
    assert fake.events.subscriptions()

    fake.refuse_connections = True  # the session survives (no restart): only the socket goes
    fake.drop_connections()
    _wait_state(client, dc.ConnectionState.DISCONNECTED)
    timeline.release()
    providers.release()
    fake.refuse_connections = False
    _wait_state(client, dc.ConnectionState.CONNECTED)

    # the emptied unions are sent during the handshake; the daemon reads them on its own thread
    assert wait_until(lambda: not fake.timeline.subscriptions() and not fake.events.subscriptions(), 2.0), (
        fake.timeline.subscriptions(),
        fake.events.subscriptions(),
    )
    frames: list[str] = []
    client.add_push_listener(lambda message: frames.append(message.type), ["agent_stream"])
    fake.timeline.append("a1", {"type": "assistant_message", "text": "nobody asked"})
    client.ping()  # anything the daemon streamed before this reply has been read
    assert client.flush_callbacks()
    assert frames == []


class SignallingLock:
    """Wraps a lock and sets ``asked`` when a thread finds it held (it then waits, bounded)."""

    def __init__(self, inner: Any, asked: threading.Event) -> None:
        self._inner = inner
        self._asked = asked

    def __enter__(self) -> SignallingLock:
        if not self._inner.acquire(blocking=False):
            self._asked.set()
            if not self._inner.acquire(timeout=5.0):
                raise AssertionError("the lock was never released")
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._inner.release()


def test_concurrent_union_changes_reach_the_selective_daemon_in_order(fakes, make_client) -> None:
    """Regression (BUG_UNION_ORDER, fixed in c438caf): unions were computed under the manager's lock
    but written after it, so a release's ``[]`` could reach the daemon after a newer subscribe's
    ``[a3]`` was acknowledged: a LIVE, ready handle then got nothing (silent loss).

    The release computes ``[]`` and is held right before writing it until the subscribe has
    asked for the union (found the union lock held), or has written its own union (the bug)."""
    from daemon_client.subscriptions import membership

    reached, racing = threading.Event(), threading.Event()

    def preempted() -> None:  # a computed union is about to be written
        if threading.current_thread().name == "preempted":
            reached.set()
            assert racing.wait(5.0), "the racing subscribe never asked for the union"
        else:
            racing.set()

    fake = fakes("selective")
    fake.agents.upsert("a1")
    fake.agents.upsert("a3")
    client = make_client(fake)
    client.connect()
    manager = client._namespaces.timelines()
    manager._before_send_union = preempted
    manager._union_lock = SignallingLock(manager._union_lock, racing)  # type: ignore[assignment]
    first = client.agents.ref("a1").timeline.subscribe(lambda update: None)
    first.ready.result(5)
    racing.clear()
    releasing = threading.Thread(target=first.release, name="preempted")
    releasing.start()  # computes the union [] and is held before writing it
    assert reached.wait(5.0)
    seen: list[int | None] = []
    later = client.agents.ref("a3").timeline.subscribe(lambda update: seen.append(update.seq))
    later.ready.result(5)  # [a3] written and acknowledged
    releasing.join(5)
    seqs = [fake.timeline.append("a3", {"type": "assistant_message", "text": f"{n}"}) for n in range(3)]
    assert client.flush_callbacks()
    assert later.state is membership.State.LIVE
    assert wait_until(lambda: seen == seqs, 2.0), (seen, fake.timeline.subscriptions())


def test_a_subscribe_racing_a_drop_is_established_after_the_reconnect_on_a_selective_host(fakes, make_client) -> None:
    fake = fakes("selective")
    fake.agents.upsert("a1")
    client = make_client(fake)
    client.connect()
    manager = client._namespaces.timelines()

    def dropped_meanwhile() -> None:
        if threading.current_thread().name == "racer":  # between add() reading the mode and the union
            fake.refuse_connections = True
            fake.drop_connections()
            assert wait_until(lambda: manager.mode is None and client.state is not dc.ConnectionState.CONNECTED, 5.0)

    manager._before_establish = dropped_meanwhile
    made: list[dc.TimelineSubscription] = []
    seen: list[int | None] = []
    racer = threading.Thread(
        target=lambda: made.append(client.agents.ref("a1").timeline.subscribe(lambda u: seen.append(u.seq))),
        name="racer",
    )
    racer.start()
    racer.join(10)
    fake.refuse_connections = False
    _wait_state(client, dc.ConnectionState.CONNECTED)
    try:
        made[0].ready.result(3)
    except FutureTimeout:
        pytest.fail(f"never established: {made[0]!r}, union recorded as sent {manager._sent_union}, daemon holds "
                    f"{fake.timeline.subscriptions()}")  # fmt: skip
    seq = fake.timeline.append("a1", {"type": "assistant_message", "text": "hello"})
    assert wait_until(lambda: seen == [seq], 2.0)


def test_a_request_checked_against_the_old_connection_is_never_written_before_the_next_hello(
    fakes, monkeypatch
) -> None:
    """Regression (BUG_WRITE_BEFORE_HELLO, found by the stress test on a capable host): ``submit``
    saw the connection CONNECTED, the connection dropped, and its frame was written on the next
    transport before that transport's hello. The daemon closes such a socket with 4002, which
    ends the client for good. Such a request must fail with ``ConnectionLost`` instead."""
    fake = fakes("capable")
    fake.on_request("echo_request", lambda ctx: ctx.reply({"echo": ctx.message.get("value")}))
    opened = threading.Event()
    written = threading.Event()
    factory = fake.transport_factory
    transports: list[Any] = []

    class HeldBeforeHello:
        """The next transport: connected, then held until the stale request tried to write."""

        def __init__(self) -> None:
            self._inner = factory()
            transports.append(self)

        def connect(self, params: Any) -> None:
            self._inner.connect(params)
            if len(transports) == 2:
                opened.set()
                assert written.wait(5.0)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._inner, name)

    client = dc.Client(
        "ws://fake-daemon/ws",
        transport_factory=HeldBeforeHello,
        strict=True,
        reconnect=dc.ReconnectPolicy(base_delay=0.05, max_delay=0.2),
        connect_timeout=5.0,
    )
    try:
        _request_across_a_reconnect(client, fake, opened, written, monkeypatch)
    finally:
        client.close()


def _request_across_a_reconnect(
    client: dc.Client, fake: FakeDaemon, opened: threading.Event, written: threading.Event, monkeypatch: Any
) -> None:
    from daemon_client.runtime import connection as runtime_connection

    client.connect()
    send = runtime_connection.Connection._send

    def stale_send(self: Any, writer: Any, text: str) -> None:
        # the request chose its socket's writer under the lock; the socket is replaced before it writes
        if threading.current_thread().name == "stale" and "echo_request" in text:
            fake.drop_connections()
            assert opened.wait(5.0)  # the next transport is open and its hello not yet sent
            try:
                send(self, writer, text)
            finally:
                written.set()
            return
        send(self, writer, text)

    monkeypatch.setattr(runtime_connection.Connection, "_send", stale_send)
    outcome: list[object] = []

    def stale_request() -> None:
        try:
            outcome.append(client.request({"type": "echo_request", "value": 1}, timeout=5.0))
        except dc.DaemonClientError as exc:
            outcome.append(exc)

    stale = threading.Thread(target=stale_request, name="stale")
    stale.start()
    stale.join(10.0)
    assert isinstance(outcome[0], dc.ConnectionLost), outcome
    _wait_state(client, dc.ConnectionState.CONNECTED)
    assert client.request({"type": "echo_request", "value": 2}, timeout=5.0).get("echo") == 2
