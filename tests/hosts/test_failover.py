"""A client of a host over loopback: a direct and a relay connection to one fake daemon.

It connects direct (preferred); when the direct route is lost it fails over to the relay,
tells ``on_connection_change`` why, and every observation is re-established as on any
reconnect (a fresh directory snapshot, ``subscription_restored`` on timelines) with nothing
published after the switch lost. The preferred connection down at the start, both down, and
``retry_initial_connect``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon, RecordingHandler

from .conftest import HostClientFactory, close_and_check, wait_until

pytest.importorskip("nacl")

Change = tuple[str | None, str, str]


def dual(fakes: Callable[..., FakeDaemon], **options: object) -> tuple[FakeDaemon, dc.Host]:
    fake = fakes(server_id="srv-a", **options)
    direct, link = fake.serve(), fake.serve_relay()
    return fake, dc.Host("laptop", [link, direct], preferred=direct)


def record_changes(client: dc.Client) -> tuple[list[Change], threading.Event]:
    changes: list[Change] = []
    switched = threading.Event()

    def on_change(previous: dc.HostConnection | None, current: dc.HostConnection, reason: str) -> None:
        changes.append((previous.id if previous else None, current.id, reason))
        if previous is not None:
            switched.set()

    client.on_connection_change(on_change)
    return changes, switched


def test_failover_to_the_relay_keeps_every_observation(
    fakes: Callable[..., FakeDaemon], host_client: HostClientFactory
) -> None:
    fake, host = dual(fakes)
    fake.agents.upsert("a1", title="start")
    client = host_client(host)
    changes, switched = record_changes(client)
    client.connect()
    assert client.active_connection is host.preferred
    assert client.url.startswith("ws://127.0.0.1:")

    listing = client.agents.list(subscribe=True)
    assert listing.subscription is not None
    snapshots: RecordingHandler[Any] = RecordingHandler("snapshots")
    updates: RecordingHandler[Any] = RecordingHandler("updates")
    listing.subscription.subscribe(snapshot=snapshots, update=updates)
    timeline: RecordingHandler[dc.TimelineUpdate] = RecordingHandler("timeline")
    sub = client.agents.ref("a1").timeline.subscribe(timeline)
    sub.ready.result(5)
    snapshots.wait_for(1)
    first_ids = (listing.subscription.subscription_id, sub.subscription_id)

    fake.interrupt_loopback(30.0)  # the direct route is gone; the relay still reaches the daemon
    assert switched.wait(15), changes
    relay = next(c for c in host.connections if c.kind is dc.discovery.TargetKind.RELAY)
    assert client.active_connection is relay
    assert client.url.startswith("relay://")
    direct_id = host.preferred.id  # type: ignore[union-attr]
    assert changes[0] == (None, direct_id, "the preferred connection answered")
    assert changes[1][:2] == (direct_id, relay.id)
    assert changes[1][2].startswith(f"failover: {direct_id} was lost")
    assert len(changes) == 2

    snapshots.wait_for(2, timeout=10)  # a fresh snapshot, as on any reconnect
    timeline.wait_for(1, predicate=lambda u: u.type == "subscription_restored", timeout=10)
    assert listing.subscription.subscription_id != first_ids[0]
    assert sub.subscription_id != first_ids[1]

    for i in range(20):  # nothing published after the switch is lost
        fake.agents.upsert("a1", title=f"after-{i}")
    seqs = [fake.timeline.append("a1", {"type": "assistant_message", "text": f"row-{i}"}) for i in range(20)]
    titles = [f"after-{i}" for i in range(20)]

    def titled(update: Any) -> bool:
        agent = update.payload.agent
        return agent is not None and agent.title in titles

    seen = updates.wait_for(20, predicate=titled, timeout=10)
    assert [u.payload.agent.title for u in seen] == titles
    rows = timeline.wait_for(20, predicate=lambda u: u.type == "timeline" and u.seq in seqs, timeout=10)
    assert [u.seq for u in rows] == seqs
    assert client.flush_callbacks(5)
    assert not [u for u in timeline.items if u.type == "error"]
    assert client.state is dc.ConnectionState.CONNECTED
    assert client.relay_stats is not None


def test_the_preferred_one_down_at_the_start_uses_the_relay(
    fakes: Callable[..., FakeDaemon], host_client: HostClientFactory
) -> None:
    fake, host = dual(fakes)
    fake.interrupt_loopback(30.0)
    client = host_client(host)
    changes, _switched = record_changes(client)
    info = client.connect()
    assert info.server_id == "srv-a"
    active = client.active_connection
    assert active is not None
    assert active.kind is dc.discovery.TargetKind.RELAY
    assert client.flush_callbacks(5)
    assert changes == [(None, active.id, changes[0][2])]
    assert "fastest" in changes[0][2]
    assert client.host is not None
    assert client.host.server_id == "srv-a"


def test_both_down_connect_fails_with_a_clear_error(
    fakes: Callable[..., FakeDaemon], host_client: HostClientFactory
) -> None:
    fake, host = dual(fakes)
    fake.restart(60.0)  # everything refuses; the relay no longer hears from the daemon
    client = host_client(host, connect_timeout=2.0)
    with pytest.raises((dc.ConnectionLost, dc.ConnectTimeout)) as raised:
        client.connect()  # within its own default bound: a whole round
    message = str(raised.value)
    assert message.startswith("host laptop: no connection reached its daemon (")
    for connection in host.connections:  # what each connection answered
        assert f"{connection.id}: " in message
    assert "refused" in message
    assert client.last_error is raised.value
    assert client.state is dc.ConnectionState.DISCONNECTED
    assert client.active_connection is None


def test_a_single_connection_host_keeps_its_attempt_error(
    fakes: Callable[..., FakeDaemon], host_client: HostClientFactory
) -> None:
    fake = fakes(server_id="srv-a")
    url = fake.serve()
    fake.restart(60.0)
    client = host_client(dc.Host("laptop", [url]))
    with pytest.raises(dc.ConnectionLost, match=r"Cannot connect to ws://127\.0\.0\.1"):
        client.connect()


def test_retry_initial_connect_keeps_trying_until_one_comes_back(
    fakes: Callable[..., FakeDaemon], host_client: HostClientFactory
) -> None:
    fake, host = dual(fakes)
    fake.restart(1.5)
    client = host_client(host, reconnect=dc.ReconnectPolicy(base_delay=0.05, max_delay=0.2, retry_initial_connect=True))
    info = client.connect(timeout=30)
    assert info.server_id == "srv-a"
    assert client.active_connection is not None
    assert client.state is dc.ConnectionState.CONNECTED


def test_close_right_after_a_failover_leaves_no_thread(
    fakes: Callable[..., FakeDaemon], host_client: HostClientFactory
) -> None:
    fake, host = dual(fakes)
    client = host_client(host)
    _changes, switched = record_changes(client)
    client.connect()
    fake.interrupt_loopback(30.0)
    assert switched.wait(15)
    close_and_check(client)
    wait_until(lambda: client.state is dc.ConnectionState.DISPOSED, 5, "not disposed")


def test_a_connection_that_can_never_work_does_not_end_the_reconnects(
    fakes: Callable[..., FakeDaemon], host_client: HostClientFactory
) -> None:
    """A pipe (which cannot be dialled here) fails for good, but only that connection: the
    client keeps reconnecting and is back once the direct route returns."""
    fake = fakes(server_id="srv-a")
    direct = fake.serve()
    host = dc.Host("laptop", [direct, "pipe://paseo"], preferred=direct)
    client = host_client(host)
    states: list[tuple[dc.ConnectionState, str]] = []
    back = threading.Event()

    def on_state(_old: dc.ConnectionState, new: dc.ConnectionState, why: str) -> None:
        states.append((new, why))
        if new is dc.ConnectionState.CONNECTED and len([s for s, _ in states if s is new]) == 2:
            back.set()

    client.on_state_change(on_state)
    client.connect()
    fake.interrupt_loopback(1.0)
    assert back.wait(15), states
    assert client.active_connection is host.preferred
    assert any("pipe" in why for state, why in states if state is dc.ConnectionState.DISCONNECTED)


def test_a_single_connection_that_can_never_work_gives_up(host_client: HostClientFactory) -> None:
    client = host_client(dc.Host("laptop", ["pipe://paseo"]))
    with pytest.raises(dc.ConnectionLost):
        client.connect()
    assert client.state is dc.ConnectionState.DISCONNECTED


@pytest.mark.usefixtures("fast_switching")
def test_readers_on_16_threads_during_a_failover(
    fakes: Callable[..., FakeDaemon], host_client: HostClientFactory
) -> None:
    fake, host = dual(fakes)
    client = host_client(host)
    _changes, switched = record_changes(client)
    client.connect()
    ids = {c.id for c in host.connections}
    stop = threading.Event()
    errors: list[BaseException] = []

    def read() -> None:
        try:
            while not stop.is_set():
                assert client.url.startswith(("ws://", "relay://"))
                active = client.active_connection
                assert active is None or active.id in ids
                assert client.resolution.reason.startswith("host laptop: ")
                assert client.host is not None
                assert client.host.server_id == "srv-a"
        except BaseException as exc:
            errors.append(exc)

    readers = [threading.Thread(target=read, name=f"test-reader-{i}") for i in range(16)]
    for reader in readers:
        reader.start()
    try:
        fake.interrupt_loopback(60.0)
        assert switched.wait(15)
        client.ping()
    finally:
        stop.set()
        for reader in readers:
            reader.join(10)
    assert not errors, errors[:3]


def test_a_client_of_one_address_has_no_host(fakes: Callable[..., FakeDaemon]) -> None:
    fake = fakes(server_id="srv-a")
    client = dc.Client(fake.serve())
    heard: list[object] = []
    client.on_connection_change(lambda *args: heard.append(args))
    try:
        client.connect()
        assert client.host is None
        assert client.active_connection is None
        assert client.flush_callbacks(5)
        assert heard == []
    finally:
        close_and_check(client)
