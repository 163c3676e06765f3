"""The subscription contract around reconnects, resets and restores, on every host kind.

Each test forces one interleaving with the fake daemon's hooks (``after_request``, a wrapped
handler, refused connections) or a test seam of the client, and synchronises on events,
never on time:

- an update sent between two re-establishments reaches the observation that is live again;
- a snapshot after a reconnect refreshes the handles of the items it contains, and only those;
- a failed re-establishment leaves the observation released, with its error;
- ``providers.wait_for_ready`` reads the catalog again after a reconnect;
- ``timeline.pages("after")`` restarts from the oldest row held after a reset and reaches the
  newest, also when the history is replaced in the middle of the walk;
- a membership whose establishment races a reconnect is established exactly once, and a
  selective union that reaches the daemon after a newer one is corrected.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon, RecordingHandler

from ..conftest import KINDS, TRANSPORTS

TIMELINE_SET = "agent.timeline.set_subscription.request"


@attrs.frozen
class Family:
    """Adapts a test to the agent or the workspace directory."""

    name: str
    request_type: str
    before: str
    after: str  # two values of the item's status

    def add(self, fake: FakeDaemon, tag: str = "infra", **fields: Any) -> str:
        if self.name == "agents":
            return str(fake.agents.upsert(labels={"team": tag}, status=self.before, **fields)["id"])
        directory = f"/home/dev/{tag}-{uuid.uuid4().hex[:6]}"
        workspace = fake.workspaces.upsert(
            workspace_directory=directory, project_id=f"proj-{tag}", status=self.before, **fields
        )
        return str(workspace["id"])

    def change(self, fake: FakeDaemon, item_id: str, status: str) -> None:
        (fake.agents if self.name == "agents" else fake.workspaces).upsert(item_id, status=status)

    def namespace(self, client: dc.Client) -> Any:
        return client.agents if self.name == "agents" else client.workspaces

    def observe(self, client: dc.Client, tag: str | None = None) -> dc.DirectoryObservation[Any]:
        kwargs: dict[str, Any] = {}
        if tag is not None and self.name == "agents":
            kwargs["filter"] = dc.AgentFilter(labels={"team": tag})
        elif tag is not None:
            kwargs["filter"] = dc.WorkspaceFilter(project_id=f"proj-{tag}")
        observation = self.namespace(client).list(subscribe=True, **kwargs).subscription
        assert observation is not None
        return observation  # type: ignore[no-any-return]

    def ids(self, result: Any) -> set[str]:
        return {e.agent.id if self.name == "agents" else e.id for e in result.entries}

    def update_id(self, message: Any) -> str:
        return str(message.payload.agent_id if self.name == "agents" else message.payload.workspace_id)


FAMILIES = [
    Family("agents", "fetch_agents_request", "running", "idle"),
    Family("workspaces", "fetch_workspaces_request", "running", "done"),
]
FAMILY_IDS = [family.name for family in FAMILIES]


class States:
    """The client's connection states, recorded on the callback thread."""

    def __init__(self, client: dc.Client) -> None:
        self.seen = RecordingHandler[tuple[dc.ConnectionState, dc.ConnectionState, str]]("states")
        client.on_state_change(self.seen)

    def wait_disconnected(self, after: int = 0) -> None:
        self.seen.wait_for(after + 1, predicate=lambda call: call[1] is dc.ConnectionState.DISCONNECTED)

    def disconnects(self) -> int:
        return sum(1 for call in self.seen.items if call[1] is dc.ConnectionState.DISCONNECTED)

    def wait_reconnected(self, count: int = 1) -> None:
        self.seen.wait_for(count, predicate=lambda call: call[2] == "reconnected", timeout=10.0)

    def reconnects(self) -> int:
        return sum(1 for call in self.seen.items if call[2] == "reconnected")


@contextlib.contextmanager
def away(fake: FakeDaemon, states: States) -> Iterator[None]:
    """The client is disconnected (and cannot reconnect) inside the block; it is connected and
    everything is restored again when the block ends."""
    disconnects, reconnects = states.disconnects(), states.reconnects()
    fake.refuse_connections = True
    fake.drop_connections()
    states.wait_disconnected(disconnects)
    yield
    fake.refuse_connections = False
    states.wait_reconnected(reconnects + 1)


def settle(client: dc.Client) -> None:
    """Let everything the fake sent so far reach the callbacks: a round trip, then a flush."""
    client.ping()
    assert client.flush_callbacks()


@pytest.fixture
def connected(fakes, make_client) -> Callable[..., tuple[FakeDaemon, dc.Client]]:
    def make(kind: str, transport: str = "memory", **options: Any) -> tuple[FakeDaemon, dc.Client]:
        fake = fakes(kind)
        client = make_client(fake, transport, **options)
        client.connect()
        return fake, client

    return make


# ------------------------------------------------------------------ directory observations


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
@pytest.mark.parametrize("kind", KINDS)
def test_an_update_between_two_re_establishments_reaches_the_observation_live_again(
    connected, kind: str, family: Family, transport: str
) -> None:
    fake, client = connected(kind, transport)
    old_item = family.add(fake)
    first, second = family.observe(client), family.observe(client)
    seen_first = RecordingHandler[tuple[str, Any]]("first")
    seen_second = RecordingHandler[tuple[str, Any]]("second")
    for observation, seen in ((first, seen_first), (second, seen_second)):
        observation.subscribe(
            snapshot=lambda s, seen=seen: seen(("snapshot", family.ids(s))),
            update=lambda m, seen=seen: seen(("update", family.update_id(m))),
        )
        seen.wait_for(1)
    old_connection = fake.wait_for_connections(1)[0]
    added: list[str] = []

    def between_the_two_reads(ctx: Any) -> None:  # right after the first observation's new snapshot
        if ctx.connection is not old_connection and not added:
            added.append(family.add(fake))

    fake.after_request(family.request_type, between_the_two_reads)
    fake.drop_connections()
    seen_second.wait_for(2, predicate=lambda item: item[0] == "snapshot")
    settle(client)

    new_item = added[0]
    assert seen_first.items == [("snapshot", {old_item}), ("snapshot", {old_item}), ("update", new_item)]
    assert family.ids(first.current()) == {old_item, new_item}
    assert seen_second.items == [("snapshot", {old_item}), ("snapshot", {old_item, new_item})]  # covered
    assert family.ids(second.current()) == {old_item, new_item}


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
@pytest.mark.parametrize("kind", KINDS)
def test_a_snapshot_after_a_reconnect_refreshes_the_handles_of_its_items(connected, kind: str, family: Family) -> None:
    fake, client = connected(kind)
    inside = family.add(fake, "infra")
    outside = family.add(fake, "web")
    observation = family.observe(client, "infra")
    snapshots = RecordingHandler[set[str]]("snapshots")
    observation.subscribe(snapshot=lambda s: snapshots(family.ids(s)))
    assert snapshots.wait_for(1) == [{inside}]
    namespace = family.namespace(client)
    inside_handle, outside_handle = namespace.ref(inside), namespace.ref(outside)
    outside_handle.refresh()
    assert (inside_handle.status, outside_handle.status) == (family.before, family.before)
    heard = RecordingHandler[Any]("handle listener")
    inside_handle.subscribe(heard)

    states = States(client)
    with away(fake, states):  # both items change while the client is away: nobody hears it
        family.change(fake, inside, family.after)
        family.change(fake, outside, family.after)
    snapshots.wait_for(2)
    settle(client)

    assert inside_handle.status == family.after  # the new snapshot holds it
    assert not inside_handle.removed
    assert outside_handle.status == family.before  # not in this filtered snapshot: kept as it was
    assert not outside_handle.removed
    assert heard.items == []  # a snapshot is no update message


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
@pytest.mark.parametrize("kind", KINDS)
def test_a_failed_re_establishment_leaves_the_observation_released(connected, kind: str, family: Family) -> None:
    fake, client = connected(kind)
    family.add(fake)
    observation = family.observe(client)
    errors = RecordingHandler[BaseException]("errors")
    observation.subscribe(error=errors)
    states = States(client)
    fake.fail_next(family.request_type, error="restore refused", code="handler_error")
    fake.drop_connections()
    error = errors.wait_for(1)[0]
    states.wait_reconnected()
    settle(client)

    assert isinstance(error, dc.RpcError)
    assert observation.released
    assert observation.state.value == "failed"
    assert observation.error is error
    assert observation.ready.result(0) is not None  # the first snapshot stays what it was
    late = RecordingHandler[BaseException]("late errors")
    observation.subscribe(error=late)
    assert late.wait_for(1) == [error]
    observation.release()  # harmless: nothing is sent, the state keeps saying why it ended
    assert observation.released
    assert observation.state.value == "failed"
    if kind == "capable":
        assert fake.directory_observations() == []


# ------------------------------------------------------------------ providers


class ReadyWaiter:
    """``providers.wait_for_ready()`` on a thread of its own; ``outcome()`` is what it returned or raised."""

    def __init__(self, client: dc.Client) -> None:
        self._client = client
        self._outcome: list[object] = []
        self._thread = threading.Thread(target=self._run, name="wait-for-ready")
        self._thread.start()

    def _run(self) -> None:
        try:
            self._outcome.append(self._client.providers.wait_for_ready(timeout=20.0))
        except BaseException as exc:
            self._outcome.append(exc)

    def outcome(self) -> object:
        self._thread.join(25.0)
        assert not self._thread.is_alive()
        return self._outcome[0]


@pytest.mark.parametrize("kind", KINDS)
def test_wait_for_ready_reads_again_after_a_reconnect(connected, kind: str) -> None:
    fake, client = connected(kind)
    fake.providers.auto_resolve = False
    fake.providers.start_loading(["claude"])
    read = threading.Event()
    fake.after_request("get_providers_snapshot_request", lambda ctx: read.set())
    waiter = ReadyWaiter(client)
    assert read.wait(5.0)
    client.ping()  # its reply follows the snapshot's: the read has been answered
    read.clear()
    states = States(client)
    with away(fake, states):
        fake.providers.resolve("claude", "ready")  # published to nobody
    snapshot = waiter.outcome()
    assert read.is_set()  # read again after the reconnect
    assert isinstance(snapshot, dc.ProviderSnapshot), snapshot
    assert snapshot.loading == ()
    assert snapshot.entry("claude") is not None


@pytest.mark.parametrize("kind", KINDS)
def test_wait_for_ready_reads_again_when_a_read_is_cut_by_a_reconnect(connected, kind: str) -> None:
    fake, client = connected(kind)
    fake.providers.auto_resolve = False
    fake.providers.start_loading(["claude"])
    states = States(client)
    cut = threading.Event()

    def cut_before_answering(ctx: Any) -> None:
        if not cut.is_set():  # the first read is never answered: its connection drops
            cut.set()
            fake.refuse_connections = True
            ctx.connection.abort()
            return
        default(ctx)

    default = fake.registry.handler_for("get_providers_snapshot_request")
    assert default is not None
    fake.on_request("get_providers_snapshot_request", cut_before_answering)
    waiter = ReadyWaiter(client)
    assert cut.wait(5.0)
    states.wait_disconnected()
    fake.providers.resolve("claude", "ready")
    fake.refuse_connections = False
    snapshot = waiter.outcome()
    assert isinstance(snapshot, dc.ProviderSnapshot), snapshot
    assert snapshot.loading == ()


# ------------------------------------------------------------------ timeline pages


def _todo(n: int) -> dict[str, Any]:
    return {"type": "todo", "items": [{"text": f"step {n}", "completed": False}]}


@pytest.mark.parametrize("kind", KINDS)
def test_pages_after_a_gap_restart_from_the_oldest_row_held(connected, kind: str) -> None:
    fake, client = connected(kind)
    agent_id = fake.agents.upsert(title="trimmed")["id"]
    for n in range(1, 11):
        fake.timeline.append(agent_id, _todo(n))
    fake.timeline.trim(agent_id, keep_last=3)  # the daemon holds rows 8, 9 and 10
    epoch = fake.timeline.epoch(agent_id)

    timeline = client.agents.ref(agent_id).timeline
    pages = list(timeline.pages("after", cursor=dc.TimelineCursor(epoch, 2), limit=2, projection="canonical"))

    assert [[e.seq_start for e in page.entries] for page in pages] == [[8, 9], [10]]
    assert (pages[0].reset, pages[0].gap, pages[0].stale_cursor) == (True, True, False)
    assert not pages[1].reset


@pytest.mark.parametrize("kind", KINDS)
def test_pages_after_reach_every_row_of_a_history_replaced_mid_walk(connected, kind: str) -> None:
    fake, client = connected(kind)
    agent_id = fake.agents.upsert(title="replaced")["id"]
    for n in range(1, 6):
        fake.timeline.append(agent_id, _todo(n))
    old_epoch = fake.timeline.epoch(agent_id)

    walk = client.agents.ref(agent_id).timeline.pages(
        "after", cursor=dc.TimelineCursor(old_epoch, 0), limit=2, projection="canonical"
    )
    first = next(walk)
    new_epoch = fake.timeline.replace_history(agent_id, [_todo(n) for n in range(11, 16)])
    rest = list(walk)

    assert (first.epoch, [e.seq_start for e in first.entries]) == (old_epoch, [1, 2])
    assert [(page.epoch, [e.seq_start for e in page.entries]) for page in rest] == [
        (new_epoch, [1, 2]),
        (new_epoch, [3, 4]),
        (new_epoch, [5]),
    ]
    assert (rest[0].reset, rest[0].stale_cursor) == (True, True)
    assert [page.reset for page in rest[1:]] == [False, False]

    # A consumer that replaces what it holds on reset ends with exactly the new history.
    held: dict[int, object] = {}
    for page in [first, *rest]:
        if page.reset:
            held = {}
        held.update({e.seq_start: e.item for e in page.entries})
    assert sorted(held) == [1, 2, 3, 4, 5]
    assert [item.items[0].text for _, item in sorted(held.items())] == [f"step {n}" for n in range(11, 16)]  # type: ignore[attr-defined]


# ------------------------------------------------------------------ memberships racing a reconnect


def test_a_union_send_failing_across_a_reconnect_leaves_the_subscription_established(connected) -> None:
    """Selective host: the caller's union send fails (not connected) and, before the caller
    handles the failure, the client reconnects and restores. The late failure must not put the
    handle back to pending after the restore: ``ready`` would never resolve (BUG_STALE_UNION)."""
    from daemon_client.subscriptions import membership

    fake, client = connected("selective")
    fake.agents.upsert("a1")
    states = States(client)
    manager = client._namespaces.timelines()
    first_connection = fake.wait_for_connections(1)[0]
    racer_done = threading.Event()
    default = fake.registry.handler_for(TIMELINE_SET)
    assert default is not None

    def answered_after_the_racer(ctx: Any) -> None:  # the restore's union waits for the late failure
        if ctx.connection is not first_connection:
            assert racer_done.wait(5.0)
        default(ctx)

    fake.on_request(TIMELINE_SET, answered_after_the_racer)
    failure_handled = threading.Event()

    def dropped_before_the_union_is_sent() -> None:  # the caller's union send fails: NotConnected
        if threading.current_thread().name == "racer":
            fake.refuse_connections = True
            fake.drop_connections()
            states.wait_disconnected()

    def reconnected_before_the_failure_is_handled() -> None:  # the client reconnects and restores first
        if threading.current_thread().name == "racer" and not failure_handled.is_set():
            failure_handled.set()
            fake.refuse_connections = False
            states.wait_reconnected()

    manager._before_establish = dropped_before_the_union_is_sent
    manager._before_retry = reconnected_before_the_failure_is_handled
    seen = RecordingHandler[dc.TimelineUpdate]("seen")
    made: list[dc.TimelineSubscription] = []

    def subscribe() -> None:
        try:
            made.append(client.agents.ref("a1").timeline.subscribe(seen))
        finally:
            racer_done.set()

    racer = threading.Thread(target=subscribe, name="racer")
    racer.start()
    racer.join(15.0)
    assert made, "subscribe() did not return"
    assert failure_handled.is_set(), "the union send did not fail"
    sub = made[0]
    sub.ready.result(5.0)
    assert sub.state is membership.State.LIVE
    seq = fake.timeline.append("a1", {"type": "assistant_message", "text": "hello"})
    assert [u.seq for u in seen.wait_for(1, predicate=lambda u: u.type == "timeline")] == [seq]


def test_a_stale_union_that_reaches_the_daemon_after_the_restore_is_corrected(connected) -> None:
    """Selective host: a union computed before a disconnect is queued during the next handshake
    and written after the restore's own union; the daemon then holds the older union. The
    client sends the current union again, so a handle added meanwhile keeps its events."""
    fake, client = connected("selective")
    for agent_id in ("a1", "a2", "a3"):
        fake.agents.upsert(agent_id)
    states = States(client)
    manager = client._namespaces.timelines()
    kept = client.agents.ref("a1").timeline.subscribe(lambda update: None)
    dropped = client.agents.ref("a2").timeline.subscribe(lambda update: None)
    kept.ready.result(5.0)
    dropped.ready.result(5.0)
    restoring = threading.Event()
    added: list[dc.TimelineSubscription] = []
    seen = RecordingHandler[dc.TimelineUpdate]("seen")

    def sent_during_the_next_handshake() -> None:  # the racer's union [a1] is about to be written
        if threading.current_thread().name == "racer" and not added:
            fake.refuse_connections = True
            fake.drop_connections()
            states.wait_disconnected()
            added.append(client.agents.ref("a3").timeline.subscribe(seen))  # waits for the connection
            fake.refuse_connections = False
            assert restoring.wait(10.0)  # the restore waits for this send: it is queued behind it

    manager._before_restore = restoring.set
    manager._before_send_union = sent_during_the_next_handshake
    racer = threading.Thread(target=dropped.release, name="racer")  # computes the union [a1]
    racer.start()
    racer.join(15.0)
    assert not racer.is_alive()
    states.wait_reconnected()
    added[0].ready.result(5.0)
    settle(client)
    seq = fake.timeline.append("a3", {"type": "assistant_message", "text": "still wanted"})
    assert [u.seq for u in seen.wait_for(1, predicate=lambda u: u.type == "timeline")] == [seq]
    assert [sorted(s.agent_ids) for s in fake.timeline.subscriptions()] == [["a1", "a3"]]


def test_an_owned_subscription_sent_after_its_restore_is_not_kept_twice(connected) -> None:
    """Capable host: a reconnect happens between ``subscribe()`` and its request; the restore
    establishes the handle and the caller's request reaches the new connection as well. The
    reply to the older attempt is released at once: one subscription, every event once."""
    fake, client = connected("capable")
    fake.agents.upsert("a1")
    states = States(client)
    manager = client._namespaces.timelines()

    def reconnected_first() -> None:  # between subscribe() starting its attempt and sending it
        if threading.current_thread().name == "racer":
            fake.drop_connections()
            states.wait_reconnected()

    manager._before_establish = reconnected_first
    seen = RecordingHandler[dc.TimelineUpdate]("seen")
    made: list[dc.TimelineSubscription] = []
    racer = threading.Thread(target=lambda: made.append(client.agents.ref("a1").timeline.subscribe(seen)), name="racer")
    racer.start()
    racer.join(15.0)
    sub = made[0]
    sub.ready.result(5.0)
    release = fake.wait_for_frame("subscription.release.request")  # the older attempt's subscription
    settle(client)

    assert release["message"]["subscriptionId"] != sub.subscription_id
    assert [s.id for s in fake.timeline.subscriptions()] == [sub.subscription_id]
    seq = fake.timeline.append("a1", {"type": "assistant_message", "text": "once"})
    seen.wait_for(1, predicate=lambda u: u.type == "timeline")
    settle(client)
    assert [u.seq for u in seen.items if u.type == "timeline"] == [seq]
