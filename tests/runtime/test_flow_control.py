"""Flow control: a slow consumer bounds the callback queue, and every observation is told
exactly what it missed (timeline ``lagged`` events, directory resync snapshots, coalesced
provider catalogs, project re-lists). Replies are never held back.

Deterministic: the slow consumer is a callback held by a ``threading.Event``; ``ping()`` proves
the reader handled every push sent before it (its reply arrives after them, and is not
queued behind the callbacks); the limits are tiny.
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon, RecordingHandler

from ..conftest import KINDS, TRANSPORTS

SMALL = dc.FlowControl(max_events=4, max_bytes=None)


class Held:
    """A callback whose first call blocks until ``gate`` is set; records everything it gets."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.entered = threading.Event()
        self.gate = threading.Event()

    def __call__(self, item: Any) -> None:
        self.items.append(item)
        if not self.entered.is_set():
            self.entered.set()
            assert self.gate.wait(10), "the test never released the held callback"


@pytest.fixture
def held() -> Any:
    """A :class:`Held` callback, released at teardown (before the client closes) if a test failed."""
    callback = Held()
    yield callback
    callback.gate.set()


def _flush(client: dc.Client) -> None:
    """Every push the daemon sent so far has been handled, including what recovery posts."""
    client.ping()
    for _ in range(3):  # recovery posts while draining; a later flush covers what it posted
        assert client.flush_callbacks(10)


def _append(fake: FakeDaemon, agent_id: str, n: int) -> list[int]:
    return [fake.timeline.append(agent_id, {"type": "assistant_message", "text": f"row {i}"}) for i in range(n)]


def _connected(fakes: Any, make_client: Any, kind: str, transport: str = "memory", **options: Any) -> Any:
    fake = fakes(kind)
    client = make_client(fake, transport, **options)
    client.connect()
    return fake, client


# ----------------------------------------------------------------------------- options
def test_flow_control_values() -> None:
    assert dc.FlowControl() == dc.FlowControl(max_events=100_000, max_bytes=256 * 2**20)
    assert not dc.FlowControl(None, None).bounded
    for bad in (0, 1, -5, True, 2.5, "10"):
        with pytest.raises(ValueError, match=r"FlowControl\.max_events"):
            dc.FlowControl(max_events=bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="flow_control"):
        dc.Client("ws://127.0.0.1:1/ws", flow_control=100)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- timelines
@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_a_lagging_timeline_is_told_exactly_what_it_missed(
    fakes: Any, make_client: Any, kind: str, transport: str, *, caplog: pytest.LogCaptureFixture, held: Held
) -> None:
    fake, client = _connected(fakes, make_client, kind, transport, flow_control=SMALL)
    agent_id = fake.agents.upsert(title="streamer")["id"]
    sub = client.agents.ref(agent_id).timeline.subscribe(held)
    sub.ready.result(5)
    sent = _append(fake, agent_id, 1)
    assert held.entered.wait(5)
    sent += _append(fake, agent_id, 10)
    fake.timeline.emit(agent_id, {"type": "turn_completed"})
    sent += _append(fake, agent_id, 10)
    client.ping()  # answered while the callback is still held: replies never wait in the queue
    during = client.stats()
    assert during.backlog.lagging
    assert during.queued_events == 4
    assert [o.dropped for o in during.observations] == [
        1 + 10 + 1 + 10 - 4
    ]  # the running callback's push counts as queued
    held.gate.set()
    _flush(client)
    later = _append(fake, agent_id, 3)
    _flush(client)

    kinds = [u.type for u in held.items]
    assert kinds.count("lagged") == 1
    at = kinds.index("lagged")
    lagged = held.items[at].event
    assert isinstance(lagged, dc.Lagged)
    received = [u.seq for u in held.items if u.type == "timeline"]
    missing = list(range(lagged.first_seq, lagged.last_seq + 1))
    assert sorted(received + missing) == sent + later  # the skipped range is exactly the missing rows
    assert lagged.epoch == fake.timeline.epoch(agent_id)
    assert lagged.skipped_types == ("turn_completed",)
    live = len(held.items) - 1
    assert lagged.dropped + live == len(sent) + 1 + len(later)  # every frame the daemon sent: counted once
    assert [u.seq for u in held.items[at + 1 :]] == later  # announced before the next live event
    after = client.stats()
    assert not after.backlog.lagging
    assert after.queued_events == 0
    assert after.dropped == lagged.dropped
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("is lagging" in m for m in warnings)
    assert any("recovered after lagging" in m and f"{lagged.dropped} skipped" in m for m in warnings)


@pytest.mark.parametrize("kind", KINDS)
def test_the_refetch_recipe_ends_gap_free(fakes: Any, make_client: Any, kind: str) -> None:
    fake, client = _connected(fakes, make_client, kind, flow_control=SMALL)
    agent_id = fake.agents.upsert(title="streamer")["id"]
    agent = client.agents.ref(agent_id)
    seen: list[int] = []
    gate, entered = threading.Event(), threading.Event()

    def handler(update: dc.TimelineUpdate) -> None:
        if isinstance(update.event, dc.Lagged):
            lagged = update.event
            assert lagged.epoch is not None
            assert lagged.first_seq is not None
            page = agent.timeline.refetch(
                direction="after", cursor=dc.TimelineCursor(lagged.epoch, lagged.first_seq - 1), limit=0
            )
            seen.extend(s for e in page.entries for s in range(e.seq_start, e.seq_end + 1) if s <= lagged.last_seq)
        elif update.seq is not None:
            seen.append(update.seq)
        if not entered.is_set():
            entered.set()
            assert gate.wait(10)

    agent.timeline.subscribe(handler).ready.result(5)
    sent = _append(fake, agent_id, 1)
    assert entered.wait(5)
    sent += _append(fake, agent_id, 25)
    client.ping()
    gate.set()
    _flush(client)
    sent += _append(fake, agent_id, 2)
    _flush(client)
    assert seen == sent


@pytest.mark.parametrize("mode", ["manual", "executor"])
def test_the_policy_is_the_same_in_manual_mode_and_with_an_executor(fakes: Any, make_client: Any, mode: str) -> None:
    jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
    stop, release = object(), threading.Event()
    runner: threading.Thread | None = None
    if mode == "executor":

        def run() -> None:  # the application's own loop, e.g. a GUI's
            assert release.wait(10)
            while (job := jobs.get()) is not stop:
                job()

        runner = threading.Thread(target=run, name="test-app-loop")
        runner.start()
    fake, client = _connected(
        fakes, make_client, "capable", flow_control=SMALL, callback_executor="manual" if mode == "manual" else jobs.put
    )
    try:
        agent_id = fake.agents.upsert(title="streamer")["id"]
        seen = RecordingHandler[dc.TimelineUpdate]("seen")
        sub = client.agents.ref(agent_id).timeline.subscribe(seen)
        if mode == "manual":
            client.process_events(0)
        sub.ready.result(5)
        sent = _append(fake, agent_id, 12)
        client.ping()  # nothing has run yet, the requests still work
        assert client.stats().queued_events == 4
        if mode == "manual":
            while client.process_events(0):
                pass
        else:
            release.set()
            _flush(client)
        items = seen.items
    finally:
        release.set()
        if runner is not None:
            client.close()
            jobs.put(stop)
            runner.join(10)
    assert [u.type for u in items] == ["timeline"] * 4 + ["lagged"]
    assert [u.seq for u in items[:4]] == sent[:4]
    assert (items[4].event.first_seq, items[4].event.last_seq, items[4].event.dropped) == (sent[4], sent[-1], 8)


def test_unbounded_flow_control_queues_everything(fakes: Any, make_client: Any, held: Held) -> None:
    fake, client = _connected(fakes, make_client, "capable", flow_control=dc.FlowControl(None, None))
    agent_id = fake.agents.upsert(title="streamer")["id"]
    client.agents.ref(agent_id).timeline.subscribe(held).ready.result(5)
    sent = _append(fake, agent_id, 1)
    assert held.entered.wait(5)
    sent += _append(fake, agent_id, 30)
    client.ping()
    assert client.stats().queued_events == 31  # the running callback's push counts as queued
    held.gate.set()
    _flush(client)
    assert [u.seq for u in held.items] == sent


def test_bytes_limit_counts_frame_sizes(fakes: Any, make_client: Any, held: Held) -> None:
    fake, client = _connected(fakes, make_client, "capable", flow_control=dc.FlowControl(None, max_bytes=2000))
    agent_id = fake.agents.upsert(title="streamer")["id"]
    client.agents.ref(agent_id).timeline.subscribe(held).ready.result(5)
    _append(fake, agent_id, 1)
    assert held.entered.wait(5)
    for i in range(10):
        fake.timeline.append(agent_id, {"type": "assistant_message", "text": "x" * 600 + str(i)})
    client.ping()
    stats = client.stats()
    assert stats.backlog.lagging
    assert 2000 <= stats.queued_bytes < 2000 + 800
    held.gate.set()
    _flush(client)
    lagged = [u.event for u in held.items if u.type == "lagged"]
    assert len(lagged) == 1
    assert lagged[0].dropped == 11 - stats.queued_events


# ----------------------------------------------------------------------------- directories
@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_a_lagging_directory_observation_gets_a_fresh_snapshot(
    fakes: Any, make_client: Any, kind: str, transport: str, held: Held
) -> None:
    fake, client = _connected(fakes, make_client, kind, transport, flow_control=dc.FlowControl(max_events=3))
    first = fake.agents.upsert(title="first")["id"]
    observation = client.agents.list(subscribe=True).subscription
    snapshots = RecordingHandler[Any]("snapshots")
    observation.subscribe(snapshot=lambda s: snapshots(sorted(e.agent.id for e in s.entries)), update=held)
    snapshots.wait_for(1)
    fake.agents.upsert(first, title="renamed")
    assert held.entered.wait(5)
    made = [fake.agents.upsert(title=f"agent {i}")["id"] for i in range(10)]
    client.ping()
    assert client.stats().backlog.lagging
    held.gate.set()
    resync = snapshots.wait_for(2)[1]
    assert resync == sorted([first, *made])  # the daemon's state, re-read
    assert [e.agent.title for e in observation.current().entries if e.agent.id == first] == ["renamed"]
    assert len(held.items) == 3  # the held update and the admitted ones; the rest was covered
    last = fake.agents.upsert(title="after")["id"]
    _flush(client)
    assert held.items[-1].payload.agent_id == last  # updates continue after the snapshot
    assert sorted(e.agent.id for e in observation.current().entries) == sorted([first, *made, last])
    assert client.stats().observations[0].dropped >= 7
    if kind == "capable":
        reads = [f["message"] for f in fake.received if f.get("message", {}).get("type") == "fetch_agents_request"]
        assert [("subscribe" in m) for m in reads] == [True, False]  # a plain read: no second observation


# ----------------------------------------------------------------------------- providers and projects
@pytest.mark.parametrize("kind", KINDS)
def test_provider_catalogs_coalesce(fakes: Any, make_client: Any, kind: str, held: Held) -> None:
    fake, client = _connected(fakes, make_client, kind, flow_control=dc.FlowControl(max_events=3))
    client.providers.subscribe(held).ready.result(5)
    fake.providers.publish()
    assert held.entered.wait(5)
    for provider in ("claude", "codex", "mock"):
        fake.providers.start_loading([provider])
        fake.providers.resolve(provider, status="ready")
    fake.providers.start_loading(["mock"])
    fake.providers.resolve("mock", status="error")
    client.ping()
    held.gate.set()
    _flush(client)
    assert len(held.items) == 3 + 1  # the held one, the admitted ones, the newest skipped
    newest = held.items[-1]
    assert [(e.provider, e.status) for e in newest.entries] == [
        (e["provider"], e["status"]) for e in fake.providers.entries()
    ]
    assert ("mock", "error") in [(e.provider, e.status) for e in newest.entries]


def test_a_lagging_project_cache_resynchronises(fakes: Any, make_client: Any, held: Held) -> None:
    fake, client = _connected(fakes, make_client, "capable", flow_control=dc.FlowControl(max_events=2))
    cache = client.projects.cache()
    changes = RecordingHandler[Any]("changes")
    cache.on_change(held)
    cache.on_change(changes)
    fake.projects.upsert("p0")
    assert held.entered.wait(5)
    for i in range(1, 8):
        fake.projects.upsert(f"p{i}")
    client.ping()
    held.gate.set()
    _flush(client)
    for _ in range(3):  # the re-list is a request from the callback thread; its changes follow
        _flush(client)
    assert sorted(p.project_id for p in cache) == sorted(f"p{i}" for i in range(8))
    cache.close()


def test_a_replacement_is_never_skipped_and_follows_the_lagged_event(fakes: Any, make_client: Any, held: Held) -> None:
    # only capable hosts announce a replacement
    fake, client = _connected(fakes, make_client, "capable", flow_control=SMALL)
    agent_id = fake.agents.upsert(title="streamer")["id"]
    client.agents.ref(agent_id).timeline.subscribe(held).ready.result(5)
    _append(fake, agent_id, 1)
    assert held.entered.wait(5)
    _append(fake, agent_id, 10)
    fake.timeline.replace_history(agent_id)
    client.ping()
    held.gate.set()
    _flush(client)
    kinds = [u.type for u in held.items]
    assert kinds == ["timeline"] * 4 + ["lagged", "replacement"]
    assert held.items[4].event.dropped == 7
    assert held.items[5].event.epoch == fake.timeline.epoch(agent_id)


def test_the_backlog_counts_admitted_jobs_until_they_ran() -> None:
    from daemon_client.runtime.backlog import Backlog

    recovered: list[int] = []
    backlog = Backlog(dc.FlowControl(max_events=4, max_bytes=1000))
    backlog.on_recovered(lambda: recovered.append(backlog.stats().queued_events))
    assert [backlog.admit(10) for _ in range(5)] == [True] * 4 + [False]
    assert backlog.lagging
    backlog.done(10)
    assert not backlog.admit(10)  # still over the low-water mark: refused until it drained
    backlog.done(10)
    assert recovered == [2]
    assert not backlog.lagging
    assert backlog.admit(990)
    assert not backlog.admit(1)  # the bytes limit


@pytest.mark.parametrize("max_events", [2, 3, 16])
def test_the_backlog_never_stays_lagging_once_drained(max_events: int) -> None:
    """One admitting thread and one thread running jobs, interleaved as finely as the
    interpreter allows: every lagging period ends once the queue drains, and the counts
    come back to zero (the counters are lock-free, one writer each)."""
    import collections
    import sys

    from daemon_client.runtime.backlog import Backlog

    backlog = Backlog(dc.FlowControl(max_events=max_events, max_bytes=None))
    queue: collections.deque[int] = collections.deque()
    recoveries = [0]
    backlog.on_recovered(lambda: recoveries.__setitem__(0, recoveries[0] + 1))
    admitted_all = threading.Event()

    def consume() -> None:
        while not (admitted_all.is_set() and not queue):
            try:
                cost = queue.popleft()
            except IndexError:
                continue
            backlog.done(cost)

    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    consumer = threading.Thread(target=consume)
    consumer.start()
    try:
        admitted = refused = 0
        for n in range(20_000):
            if backlog.admit(n % 7):
                queue.append(n % 7)
                admitted += 1
            else:
                refused += 1
        admitted_all.set()
        consumer.join(30)
    finally:
        sys.setswitchinterval(previous)
    assert not consumer.is_alive()
    stats = backlog.stats()
    assert (stats.queued_events, stats.queued_bytes) == (0, 0)
    assert not stats.lagging  # a lagging period that began must have ended with the drain
    assert admitted + refused == 20_000
    assert refused == 0 or recoveries[0] >= 1


def test_a_push_admitted_after_stop_is_not_counted() -> None:
    from daemon_client.runtime.dispatch import Dispatcher, call_plain

    dispatcher = Dispatcher(flow_control=dc.FlowControl(max_events=4, max_bytes=None))
    dispatcher.stop()
    assert not dispatcher.post_if_admitted(call_plain, lambda: None, None, 100)
    stats = dispatcher.backlog.stats()
    assert (stats.queued_events, stats.queued_bytes, stats.lagging) == (0, 0, False)
