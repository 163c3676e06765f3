"""Back to the preferred connection: a client that failed over to the relay probes the preferred
direct connection every ``probe_interval`` seconds and moves back once it answers, with every
observation restored and nothing published afterwards lost; ``probe_interval=None`` stays."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon, RecordingHandler

from .conftest import HostClientFactory, wait_until

pytest.importorskip("nacl")

BOUND = 20.0


def dual(fakes: Callable[..., FakeDaemon], interval: float | None) -> tuple[FakeDaemon, dc.Host]:
    fake = fakes(server_id="srv-a")
    direct, link = fake.serve(), fake.serve_relay()
    return fake, dc.Host("laptop", [link, direct], preferred=direct, probe_interval=interval)


def changes_of(client: dc.Client) -> list[tuple[str | None, str, str]]:
    changes: list[tuple[str | None, str, str]] = []
    lock = threading.Lock()

    def record(previous: dc.HostConnection | None, current: dc.HostConnection, reason: str) -> None:
        with lock:
            changes.append((previous.id if previous else None, current.id, reason))

    client.on_connection_change(record)
    return changes


def test_the_client_moves_back_to_the_preferred_connection_once_it_answers(
    fakes: Callable[..., FakeDaemon], host_client: HostClientFactory
) -> None:
    fake, host = dual(fakes, 0.2)
    assert host.preferred is not None
    fake.agents.upsert("a1", title="start")
    client = host_client(host)
    changes = changes_of(client)
    client.connect()
    listing = client.agents.list(subscribe=True)
    assert listing.subscription is not None
    snapshots: RecordingHandler[Any] = RecordingHandler("snapshots")
    updates: RecordingHandler[Any] = RecordingHandler("updates")
    listing.subscription.subscribe(snapshot=snapshots, update=updates)
    snapshots.wait_for(1)
    fake.interrupt_loopback(1.0)  # the direct route is gone for a second; the relay stays
    wait_until(lambda: any(c[1].startswith("relay:") for c in changes), BOUND, "the failover to the relay")
    wait_until(
        lambda: any(c[1] == host.preferred.id and "answers again" in c[2] for c in changes),  # type: ignore[union-attr]
        BOUND,
        f"the move back to the preferred connection: {changes}",
    )
    wait_until(lambda: client.state is dc.ConnectionState.CONNECTED, BOUND, "connected again")
    assert client.active_connection is not None
    assert client.active_connection.id == host.preferred.id
    assert [c[0] for c in changes[-2:]] == [host.preferred.id, changes[-2][1]]  # direct -> relay -> direct
    snapshots.wait_for(3)  # first, after the failover, after the move back
    for n in range(10):
        fake.agents.upsert(f"b{n}", title=f"after-{n}")
    updates.wait_for(10, predicate=lambda m: m.payload.agent is not None and m.payload.agent.title.startswith("after-"))
    titles = [m.payload.agent.title for m in updates.items if m.payload.agent is not None]
    assert [t for t in titles if t.startswith("after-")] == [f"after-{n}" for n in range(10)]


def test_without_a_probe_interval_the_client_stays_where_it_is(
    fakes: Callable[..., FakeDaemon], host_client: HostClientFactory
) -> None:
    fake, host = dual(fakes, None)
    client = host_client(host)
    changes = changes_of(client)
    client.connect()
    fake.interrupt_loopback(0.5)
    wait_until(lambda: any(c[1].startswith("relay:") for c in changes), BOUND, "the failover to the relay")
    fake.wait_serving(BOUND)
    assert client.ping(timeout=5).round_trip >= 0  # the direct route is back, and a while passes
    assert client.flush_callbacks(5)
    assert client.active_connection is not None
    assert client.active_connection.id.startswith("relay:")
    assert not any(t.name.endswith("-prefer") for t in threading.enumerate())


def test_probe_interval_is_checked() -> None:
    for bad in (0, -1, True, "30"):
        with pytest.raises(ValueError, match="probe_interval"):
            dc.Host("h", ["6767", "6768"], probe_interval=bad)  # type: ignore[arg-type]
    assert dc.Host("h", ["6767"]).probe_interval == 30.0
