"""Connection drops at every step, on every host kind, in memory and over loopback.

Each test builds the same client (two agent directory observations, three timeline
subscriptions, one provider event subscription), drops the connection at one step, and then
checks the rules of anchors.md section 3 (items 3-5):

* every call pending on the dropped socket failed at once with ``ConnectionLost`` (and was not
  sent again);
* every live observation was re-established exactly once per successful reconnect: one new
  snapshot per directory observation, one ``subscription_restored`` per timeline handle, one
  ``on_restored`` per event subscription; nothing duplicated, on the client or on the fake;
* every observation still receives afterwards, in order;
* ``close()`` leaves no thread behind.

Steps: during the handshake (after ``hello``, before ``server_info``), between a request and
its reply, mid-stream, during a release, and during the re-establishment that follows a
reconnect. The host kinds differ in what they send (owned subscriptions, unions, nothing), so
each step runs on all three.

Then two drops while the callback thread lags behind (``callback_executor="manual"``, as a
busy GUI loop), and a release while the client is connecting again. Those reveal client bugs;
their tests were strict xfails naming the bug until the fixes; they are regression tests now.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon, RecordingHandler
from daemon_client.testing.threads import live_threads

from .conftest import Gate, Observed, StateLog, close_and_check_threads, is_restored, rows_of, wait_until

KINDS = ["capable", "selective", "broadcast"]
TRANSPORTS = ["memory", "loopback"]
POLICY = dc.ReconnectPolicy(base_delay=0.02, max_delay=0.1, jitter=0.2, stable_after=0.5)
HELD = "fetch_agent_request"
"""Requests of this type are never answered in these tests: they are pending when a drop comes."""
RESTORE_TYPES = (
    "fetch_agents_request",
    "agent.timeline.set_subscription.request",
    "session.events.set_subscription.request",
)

pytestmark = [
    pytest.mark.budget(30),
    pytest.mark.parametrize("transport", TRANSPORTS),
    pytest.mark.parametrize("kind", KINDS),
]


class Rig:
    """A fake with agents a1-a3, a connected client with :class:`Observed`, and its state log."""

    def __init__(
        self, fakes: Callable[..., FakeDaemon], make_client: Callable[..., dc.Client], kind: str, transport: str
    ):
        self.kind = kind
        self.fake = fakes(kind)
        for agent_id in ("a1", "a2", "a3"):
            self.fake.agents.upsert(agent_id, title=agent_id)
        self.fake.ignore(HELD)
        if transport == "loopback":
            self.fake.serve()
        self.baseline = live_threads()
        self.client = make_client(self.fake, transport, reconnect=POLICY)
        self.states = StateLog()
        self.client.on_state_change(self.states)
        self.client.connect()
        self.observed = Observed(self.client)
        self._ids = 0

    def pending(self, count: int = 2) -> list[Future[dict[str, Any]]]:
        """``count`` requests the daemon has received and will never answer (timeout 30 s)."""
        futures = []
        for _ in range(count):
            self._ids += 1
            request_id = f"held-{self._ids}"
            message = {"type": HELD, "agentId": "a1", "requestId": request_id}
            futures.append(self.client.request_async(message, timeout=30.0))
            self.fake.wait_for_frame(lambda f, rid=request_id: f.matches(HELD) and f["message"]["requestId"] == rid)
        return futures

    def sent_held(self) -> int:
        return sum(1 for frame in self.fake.received if frame.matches(HELD))

    def finish(self, *, reconnects: int, accepted: int) -> None:
        """The connection count, the server side of every observation, and no thread left."""
        assert self.states.reconnects() == reconnects, self.states.items
        assert self.fake.accepted_count == accepted
        assert self.client.state is dc.ConnectionState.CONNECTED
        wait_until(
            lambda: server_side(self.fake, self.kind, self.observed) is None,
            5.0,
            lambda: f"the fake's side: {server_side(self.fake, self.kind, self.observed)}",
        )
        close_and_check_threads(self.client, self.baseline)


def server_side(fake: FakeDaemon, kind: str, observed: Observed) -> str | None:
    """What the fake holds for this client, if it is not exactly the live observations."""
    live = [conn for conn in fake.connections if conn.handshaken]
    if len(live) != 1:
        return f"{len(live)} live connections"
    timeline_agents = sorted(sub.agent_id for sub, _seen in observed.timelines if not sub.released)
    directories = [obs for obs, _s, _u in observed.directories if not obs.released]
    found_dirs = fake.directory_observations()
    found_timelines = fake.timeline.subscriptions()
    found_events = fake.events.subscriptions()
    if kind == "capable":
        checks = {
            "directories": (
                sorted(o.id for o in found_dirs if o.owner is live[0]),
                sorted(str(o.subscription_id) for o in directories),
            ),
            "timelines": (
                sorted(a for s in found_timelines if s.owner is live[0] for a in s.agent_ids),
                timeline_agents,
            ),
            "events": ([s.events for s in found_events if s.owner is live[0]], [("providers_snapshot_update",)]),
            "stale": (
                len(found_dirs) + len(found_timelines) + len(found_events),
                len(directories) + len(timeline_agents) + 1,
            ),
        }
    else:
        union = sorted(set(timeline_agents)) if kind == "selective" else []
        checks = {
            "directory slot": (len(found_dirs), 1),
            "timeline union": ([a for s in found_timelines for a in s.agent_ids], union),
            "events": (len(found_events), 1 if kind == "selective" else 0),
        }
    wrong = {name: pair for name, pair in checks.items() if pair[0] != pair[1]}
    return f"found != expected: {wrong}" if wrong else None


def expected_failure(futures: list[Future[dict[str, Any]]]) -> None:
    for future in futures:
        error = future.exception(timeout=5.0)
        assert isinstance(error, dc.ConnectionLost), repr(error)


class Background:
    """Runs ``fn`` on a helper thread; ``outcome()`` is what it returned or raised."""

    def __init__(self, fn: Callable[[], object], name: str) -> None:
        self._result: list[object] = []
        self.started = time.monotonic()
        self.ended: float | None = None
        self._thread = threading.Thread(target=self._run, args=(fn,), name=f"test-{name}")
        self._thread.start()

    def _run(self, fn: Callable[[], object]) -> None:
        try:
            self._result.append(fn())
        except BaseException as exc:
            self._result.append(exc)
        self.ended = time.monotonic()

    def join(self, timeout: float) -> bool:
        """Whether the call returned within ``timeout``."""
        self._thread.join(timeout)
        return self.ended is not None

    def outcome(self, timeout: float = 5.0) -> object:
        self._thread.join(timeout)
        assert self._result, "the call did not return in time"
        return self._result[0]


# ------------------------------------------------------------------------------------ steps
def test_drop_during_the_handshake(fakes, make_client, kind: str, transport: str) -> None:
    """After ``hello``, before ``server_info``: requests queued meanwhile fail, the next
    handshake restores everything once; a subscription made meanwhile is established (not
    restored)."""
    rig = Rig(fakes, make_client, kind, transport)
    fake, client = rig.fake, rig.client
    fake.stall_handshake = True
    mark = len(fake.received)
    fake.drop_connections()
    fake.wait_for_frame("hello", since=mark)  # the reconnect is in its handshake, stalled
    assert client.state is dc.ConnectionState.CONNECTING
    queued = client.request_async({"type": "ping"}, timeout=30.0)
    fresh = RecordingHandler[dc.TimelineUpdate]("fresh")
    fresh_sub = client.agents.ref("a3").timeline.subscribe(fresh)
    fake.stall_handshake = False
    fake.drop_connections()
    expected_failure([queued])

    rig.observed.wait_restored(1, 1, 1)
    fresh_sub.ready.result(5)
    rig.observed.expect(1, 1, 1)
    rig.observed.check_live(fake, "after")
    seq = fake.timeline.append("a3", {"type": "assistant_message", "text": "fresh"})
    fresh.wait_for(1, predicate=lambda u: u.seq == seq)
    assert not [u for u in fresh.items if is_restored(u)]  # a first establishment, not a restore
    rig.observed.expect(1, 1, 1)
    session_pings = [f for f in fake.received if f.matches("ping") and "requestId" in f.get("message", {})]
    assert session_pings == []  # the queued request was failed, never written (nor re-sent later)
    rig.observed.timelines.append((fresh_sub, fresh))
    rig.finish(reconnects=1, accepted=3)


def test_drop_between_a_request_and_its_reply(fakes, make_client, kind: str, transport: str) -> None:
    """Requests in flight fail with ConnectionLost and are not re-sent; a directory
    observation still being established fails; a timeline subscription still being
    established is established after the reconnect, without a restored event (on
    broadcast-only hosts it is live at once, so it is restored)."""
    rig = Rig(fakes, make_client, kind, transport)
    fake, client = rig.fake, rig.client
    establishing = Gate(fake, ["fetch_agents_request", "agent.timeline.set_subscription.request"])
    futures = rig.pending(2)
    blocking = Background(lambda: client.request({"type": HELD, "agentId": "a2"}, timeout=30.0), "request")
    listing = Background(lambda: client.agents.list(subscribe=True, timeout=30.0), "list")
    fresh = RecordingHandler[dc.TimelineUpdate]("fresh")
    fresh_sub = client.agents.ref("a3").timeline.subscribe(fresh)
    establishing.wait_held(1 if kind == "broadcast" else 2)  # broadcast-only: nothing to send for a timeline
    wait_until(lambda: rig.sent_held() == 3, 5.0, "the blocking request was not sent")
    establishing.disarm()
    fake.drop_connections()

    expected_failure(futures)
    assert isinstance(blocking.outcome(), dc.ConnectionLost)
    assert isinstance(listing.outcome(), dc.ConnectionLost)
    rig.observed.wait_restored(1, 1, 1)
    fresh_sub.ready.result(5)
    rig.observed.expect(1, 1, 1)
    rig.observed.check_live(fake, "after")
    assert rig.sent_held() == 3  # nothing re-sent after the reconnect
    seq = fake.timeline.append("a3", {"type": "assistant_message", "text": "fresh"})
    fresh.wait_for(1, predicate=lambda u: u.seq == seq)
    # Broadcast-only hosts: nothing to send, the handle was live before the drop: restored once.
    assert len([u for u in fresh.items if is_restored(u)]) == (1 if kind == "broadcast" else 0)
    rig.observed.expect(1, 1, 1)
    rig.observed.timelines.append((fresh_sub, fresh))
    rig.finish(reconnects=1, accepted=2)


def test_drop_mid_stream(fakes, make_client, kind: str, transport: str) -> None:
    """Timeline rows and directory updates keep flowing while the socket drops: nothing is
    duplicated or reordered, each handle gets one restored event, and rows follow it."""
    rig = Rig(fakes, make_client, kind, transport)
    fake, client = rig.fake, rig.client
    titles: list[RecordingHandler[tuple[str, int]]] = []  # a2's title number, per directory observation
    for n, (obs, _snapshots, _updates) in enumerate(rig.observed.directories):
        seen: RecordingHandler[tuple[str, int]] = RecordingHandler(f"titles{n}")
        obs.subscribe(snapshot=TitleOfA2(seen).snapshot, update=TitleOfA2(seen).update)
        titles.append(seen)
    stop = threading.Event()

    def stream() -> None:
        for n in range(1, 5000):
            if stop.wait(0.002):
                return
            fake.timeline.append("a1", {"type": "assistant_message", "text": f"r{n}"})
            fake.timeline.append("a2", {"type": "assistant_message", "text": f"r{n}"})
            if n % 5 == 0:
                fake.agents.upsert("a2", title=f"s{n}")

    streamer = threading.Thread(target=stream, name="test-streamer")
    streamer.start()
    try:
        pending = rig.pending(1)
        for _sub, seen in rig.observed.timelines:
            seen.wait_for(5, predicate=lambda u: u.type == "timeline")
        for seen in titles:
            seen.wait_for(2, predicate=lambda item: item[0] == "update")
        fake.drop_connections()
        expected_failure(pending)
        rig.observed.wait_restored(1, 1, 1)
        for _sub, seen in rig.observed.timelines:  # rows follow the restored event
            items = seen.items
            before = len(rows_of(items[: next(i for i, u in enumerate(items) if is_restored(u))]))
            seen.wait_for(before + 3, predicate=lambda u: u.type == "timeline")
        for seen in titles:  # updates follow the new snapshot
            seen.wait_for(2, predicate=lambda item: item[0] == "snapshot")
            items = seen.items
            second = [i for i, item in enumerate(items) if item[0] == "snapshot"][1]
            seen.wait_for(len(items[:second]) + 2)
    finally:
        stop.set()
        streamer.join(10)
    assert not streamer.is_alive()

    rig.observed.expect(1, 1, 1)
    for sub, seen in rig.observed.timelines:
        rows = rows_of(seen.items)
        assert rows == sorted(set(rows)), f"{sub}: {rows}"
        restored_at = [i for i, u in enumerate(seen.items) if is_restored(u)]
        assert len(restored_at) == 1
        assert restored_at[0] < len(seen.items) - 1
    for seen in titles:  # the directory view never goes back in time
        numbers = [value for _kind, value in seen.items]
        assert numbers == sorted(numbers), seen.items
    rig.observed.check_live(fake, "after")
    rig.observed.expect(1, 1, 1)
    assert client.state is dc.ConnectionState.CONNECTED
    rig.finish(reconnects=1, accepted=2)


class TitleOfA2:
    """Records the number in agent a2's title ("s<n>") from snapshots and updates."""

    def __init__(self, record: RecordingHandler[tuple[str, int]]) -> None:
        self._record = record

    def snapshot(self, snap: Any) -> None:
        self._record(("snapshot", max((number(e.agent) for e in snap.entries if e.agent.id == "a2"), default=0)))

    def update(self, message: Any) -> None:
        if message.payload.agent_id == "a2":
            self._record(("update", number(message.payload.agent)))


def number(agent: Any) -> int:
    title = agent.title if agent is not None else None
    return int(title[1:]) if title and title.startswith("s") else 0


def test_drop_during_a_release(fakes, make_client, kind: str, transport: str) -> None:
    """A release whose reply never comes returns once the socket drops (the daemon frees
    what a socket owned); the released handles are not restored and receive nothing."""
    rig = Rig(fakes, make_client, kind, transport)
    fake, client = rig.fake, rig.client
    victim_seen = RecordingHandler[dc.TimelineUpdate]("victim")
    victim = client.agents.ref("a3").timeline.subscribe(victim_seen)
    victim.ready.result(5)
    victim_dir = client.agents.list(subscribe=True).subscription
    assert victim_dir is not None
    victim_snapshots: RecordingHandler[Any] = RecordingHandler("victim.snapshots")
    victim_dir.subscribe(snapshot=victim_snapshots)
    victim_snapshots.wait_for(1)
    releases = {
        "capable": ["subscription.release.request", "subscription.release.request"],
        "selective": ["agent.timeline.set_subscription.request"],  # the shrunken union
        "broadcast": [],  # local only: nothing to send
    }[kind]
    gate = Gate(fake, set(releases))
    pending = rig.pending(1)
    release_timeline = Background(lambda: victim.release(timeout=20.0), "release-timeline")
    release_dir = Background(lambda: victim_dir.release(timeout=20.0), "release-directory")
    held = gate.wait_held(len(releases))
    assert sorted(m["type"] for m in held) == releases
    if kind == "selective":
        assert held[0]["agentIds"] == ["a1", "a2"]
    gate.disarm()
    dropped_at = time.monotonic()
    fake.drop_connections()

    assert release_timeline.outcome() is None
    assert release_dir.outcome() is None
    for call in (release_timeline, release_dir):  # returned with the drop, not at a timeout
        assert call.ended is not None
        assert call.ended - max(call.started, dropped_at) < 5.0
    expected_failure(pending)
    assert victim.released
    assert victim_dir.released
    rig.observed.wait_restored(1, 1, 1)
    rig.observed.expect(1, 1, 1)
    rig.observed.released_receive_nothing(fake, {"a3": victim_seen})
    assert not [u for u in victim_seen.items if is_restored(u)]
    assert len(victim_snapshots) == 1
    rig.observed.expect(1, 1, 1)
    rig.finish(reconnects=1, accepted=2)


def test_drop_during_re_establishment(fakes, make_client, kind: str, transport: str) -> None:
    """The socket drops again while the restore requests of a reconnect are unanswered: they
    are retried at the next reconnect, and each observation is restored exactly once then
    (broadcast-only hosts restore timeline and event subscriptions without a request, so
    those count both reconnects)."""
    rig = Rig(fakes, make_client, kind, transport)
    fake, client = rig.fake, rig.client
    first = fake.connections[0]
    gate = Gate(fake, RESTORE_TYPES, holds=lambda ctx: ctx.connection is not first)
    fake.drop_connections()
    rig.states.wait_reconnects(1)
    client.ping()  # answered after the fake has handled every restore request written before it
    expected = {
        "capable": ["fetch_agents_request"] * 2 + ["agent.timeline.set_subscription.request"] * 3,
        "selective": ["fetch_agents_request"] * 2 + ["agent.timeline.set_subscription.request"],
        "broadcast": ["fetch_agents_request"] * 2,
    }[kind]
    expected = sorted([*expected, *(["session.events.set_subscription.request"] if kind != "broadcast" else [])])
    assert gate.held_types() == expected
    without_request = 1 if kind == "broadcast" else 0
    if without_request:
        rig.observed.wait_restored(0, 1, 1)
    pending = rig.pending(1)
    assert client.flush_callbacks(5.0)
    for _obs, snapshots, _updates in rig.observed.directories:
        assert len(snapshots) == 1  # still re-establishing
    gate.disarm()
    fake.drop_connections()

    expected_failure(pending)
    restores = 1 + without_request
    rig.observed.wait_restored(1, restores, restores)
    rig.observed.expect(1, restores, restores)
    rig.observed.check_live(fake, "after")
    rig.observed.expect(1, restores, restores)
    rig.finish(reconnects=2, accepted=3)


# ---------------------------------------------------------------- callbacks lagging behind drops
def wait_reconnected(client: dc.Client, changed: Callable[[], bool]) -> None:
    """Poll (manual mode: state listeners only run in process_events) until connected again
    and the observation has its new ID."""
    wait_until(lambda: client.state is dc.ConnectionState.CONNECTED and changed(), 10.0, "no reconnect")


def drop_and_stay_away(fake: FakeDaemon, client: dc.Client) -> None:
    """Drop and refuse reconnects; returns once the reader has handled the loss (its
    disconnect hooks run before the state leaves CONNECTED)."""
    fake.refuse_connections = True
    fake.drop_connections()
    wait_until(lambda: client.state is not dc.ConnectionState.CONNECTED, 10.0, "the drop was not noticed")


def test_rows_after_a_gap_are_announced_when_callbacks_lag(fakes, make_client, kind: str, transport: str) -> None:
    """The callback thread (here a manual loop, as in a GUI) lags behind two drops. Rows that
    follow a gap must still come after a ``subscription_restored``: a consumer re-reads
    ``after`` its last row when it sees one, so a row delivered first moves its cursor past the
    rows lost in the gap, and the later restored event no longer recovers them."""
    fake = fakes(kind)
    fake.agents.upsert("a1")
    if transport == "loopback":
        fake.serve()
    client = make_client(fake, transport, reconnect=POLICY, callback_executor="manual")
    client.connect()
    seen = RecordingHandler[dc.TimelineUpdate]("timeline")
    sub = client.agents.ref("a1").timeline.subscribe(seen)
    sub.ready.result(5)
    fake.timeline.append("a1", {"type": "assistant_message", "text": "row 1"})
    client.ping()  # the reply follows row 1 on the socket: row 1 has been routed
    client.process_events()
    assert rows_of(seen.items) == [1]

    drop_and_stay_away(fake, client)
    fake.timeline.append("a1", {"type": "assistant_message", "text": "row 2, lost"})
    fake.timeline.append("a1", {"type": "assistant_message", "text": "row 3, lost"})
    first_id = sub.subscription_id
    fake.refuse_connections = False
    wait_reconnected(client, lambda: sub.subscription_id != first_id)  # restored event 1 is queued
    fake.timeline.append("a1", {"type": "assistant_message", "text": "row 4"})
    client.ping()  # row 4 is queued behind it
    assert client._dispatcher.pending == 2
    drop_and_stay_away(fake, client)
    assert client.process_events(max_events=1) == 1  # restored event 1 runs while the client is away
    second_id = sub.subscription_id
    fake.refuse_connections = False
    wait_reconnected(client, lambda: sub.subscription_id != second_id)
    client.process_events()

    kinds = [(u.type, u.seq) for u in seen.items]
    assert kinds[:2] == [("timeline", 1), ("subscription_restored", None)], (
        f"row 4 came right after row 1, without the restored event of the reconnect before it: {kinds}"
    )


def test_directory_updates_follow_the_snapshot_when_callbacks_lag(
    fakes, make_client, kind: str, transport: str, request: pytest.FixtureRequest
) -> None:
    """Same lag, for a directory observation: an update sent after a re-establishment must not
    be delivered before that re-establishment's snapshot (it would be applied to a view that
    misses what changed while the client was away)."""
    fake = fakes(kind)
    fake.agents.upsert("a1", title="t0")
    fake.agents.upsert("a2", title="t0")
    if transport == "loopback":
        fake.serve()
    client = make_client(fake, transport, reconnect=POLICY, callback_executor="manual")
    client.connect()
    observation = client.agents.list(subscribe=True).subscription
    assert observation is not None
    seen: RecordingHandler[tuple[str, list[str]]] = RecordingHandler("directory")
    observation.subscribe(
        snapshot=lambda snap: seen(("snapshot", sorted(e.agent.id for e in snap.entries))),
        update=lambda msg: seen(("update", sorted(e.agent.id for e in observation.current().entries))),
    )
    client.process_events()
    assert seen.items == [("snapshot", ["a1", "a2"])]

    drop_and_stay_away(fake, client)
    fake.agents.remove("a2")  # while away: only a snapshot can tell
    first_id = observation.subscription_id
    fake.refuse_connections = False
    wait_reconnected(client, lambda: observation.subscription_id != first_id)
    fake.agents.upsert("a1", title="t1")  # an update on the new connection
    client.ping()
    drop_and_stay_away(fake, client)
    second_id = observation.subscription_id
    fake.refuse_connections = False
    wait_reconnected(client, lambda: observation.subscription_id != second_id)
    client.process_events()

    after = seen.items[1:]
    assert after, "nothing delivered after the reconnects"
    assert after[0][0] == "snapshot", f"an update was applied to the pre-drop view (a2 still there): {after}"
    assert after[-1] == ("snapshot", ["a1"])


class HeldConnect:
    """A transport factory whose connection attempts wait in ``connect()`` while held."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._open = threading.Event()
        self._open.set()
        self.waiting = threading.Event()

    def hold(self) -> None:
        self.waiting.clear()
        self._open.clear()

    def let_go(self) -> None:
        self._open.set()

    def __call__(self) -> Any:
        return _HeldTransport(self._make(), self)


class _HeldTransport:
    def __init__(self, inner: Any, owner: HeldConnect) -> None:
        self._inner = inner
        self._owner = owner

    def connect(self, params: Any) -> None:
        if not self._owner._open.is_set():
            self._owner.waiting.set()
            self._owner._open.wait(10.0)
        self._inner.connect(params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.fixture
def own_clients() -> Any:
    """Clients built here (with a wrapped transport factory); closed after the test."""
    made: list[dc.Client] = []
    yield made
    for client in made:
        client.close()


def test_release_while_reconnecting_is_local(
    fakes, own_clients: list[dc.Client], kind: str, transport: str, request: pytest.FixtureRequest
) -> None:
    """protocol.md 4.6: a release while not connected only forgets the observation (the daemon
    released what the lost socket owned). It must neither wait for the next handshake nor send
    the old ID on a socket that never owned it."""
    from daemon_client.transport.websocket import WebSocketTransport

    fake = fakes(kind)
    fake.agents.upsert("a1")
    held = HeldConnect(fake.transport_factory if transport == "memory" else WebSocketTransport)
    url = fake.serve() if transport == "loopback" else "ws://fake-daemon/ws"
    client = dc.Client(url, transport_factory=held, reconnect=POLICY, strict=True, connect_timeout=5.0)
    own_clients.append(client)
    client.connect()
    observation = client.agents.list(subscribe=True).subscription
    assert observation is not None
    old_id = observation.subscription_id
    held.hold()
    fake.drop_connections()
    assert held.waiting.wait(5.0)  # the client is connecting again, its attempt held
    releasing = Background(lambda: observation.release(timeout=10.0), "release")
    try:
        returned_while_connecting = releasing.join(2.0)
    finally:
        held.let_go()
    assert releasing.outcome() is None
    client.ping()  # connected again; anything queued was written before this
    stray = [f for f in fake.received if f.matches("subscription.release.request") and f.connection.id != 1]
    problems = [f"released {old_id} on a socket that never owned it"] if stray else []
    problems += [] if returned_while_connecting else ["release() waited for the next handshake"]
    assert problems == []
