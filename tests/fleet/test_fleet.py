"""A fleet of fake daemons: one only through the relay, one with a direct and a relay
connection, one direct; each of a different host kind. Lists, follows and runs across all of
them; a failover and a host going away are events, never silent losses."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon, FakeRelay
from tests.reliability.conftest import wait_until

FAST = dc.ReconnectPolicy(base_delay=0.05, max_delay=0.2, stable_after=0.5, retry_initial_connect=True)
BOUND = 15.0


class Events:
    """Records fleet events (callback thread) and who delivered them."""

    def __init__(self) -> None:
        self.items: list[dc.FleetEvent] = []
        self.threads: set[str] = set()
        self._changed = threading.Condition()

    def __call__(self, event: dc.FleetEvent) -> None:
        with self._changed:
            self.items.append(event)
            self.threads.add(threading.current_thread().name)
            self._changed.notify_all()

    def wait_for(self, predicate: Callable[[dc.FleetEvent], bool], what: str) -> dc.FleetEvent:
        with self._changed:
            ok = self._changed.wait_for(lambda: any(predicate(e) for e in self.items), BOUND)
            assert ok, f"no {what} among {[(e.kind, e.host) for e in self.items]}"
            return next(e for e in self.items if predicate(e))

    def updated_titles(self, host: str) -> list[str]:
        with self._changed:
            return [
                e.update.payload.agent.title
                for e in self.items
                if e.kind == "update" and e.host == host and e.update is not None and e.update.payload.agent is not None
            ]


@pytest.fixture
def three() -> Iterator[tuple[dict[str, FakeDaemon], list[dc.Host]]]:
    """relay-only (capable), dual direct+relay (selective), direct (broadcast); the two relay
    connections go through one relay, which tells the daemons apart by serverId."""
    relay = FakeRelay()
    fakes = {
        "r": FakeDaemon(dc.HostKind.CAPABLE, server_id="srv-r"),
        "d": FakeDaemon(dc.HostKind.SELECTIVE, server_id="srv-d"),
        "w": FakeDaemon(dc.HostKind.BROADCAST, server_id="srv-w"),
    }
    try:
        for label, fake in fakes.items():
            fake.agents.upsert(title=f"{label}-first")
        direct = fakes["d"].serve()
        hosts = [
            dc.Host("r", [fakes["r"].serve_relay(relay)]),
            dc.Host("d", [direct, fakes["d"].serve_relay(relay)], preferred=direct),
            dc.Host("w", [fakes["w"].serve()]),
        ]
        yield fakes, hosts
    finally:
        for fake in fakes.values():
            fake.close()
        relay.close()


def test_a_fleet_lists_follows_and_runs_across_three_hosts(three) -> None:
    fakes, hosts = three
    with dc.Fleet(hosts, reconnect=FAST, connect_timeout=5.0) as fleet:
        infos = fleet.connect(BOUND)
        assert {label: info.server_id for label, info in infos.items()} == {"r": "srv-r", "d": "srv-d", "w": "srv-w"}
        listing = fleet.agents.list()
        assert sorted((e.host, e.agent.title) for e in listing.entries) == [
            ("d", "d-first"),
            ("r", "r-first"),
            ("w", "w-first"),
        ]
        assert listing.errors == {}
        directory = fleet.agents.list(subscribe=True, timeout=BOUND)
        assert sorted((e.host, e.agent.title, e.available) for e in directory.entries) == [
            ("d", "d-first", True),
            ("r", "r-first", True),
            ("w", "w-first", True),
        ]
        events = Events()
        directory.subscribe(events)
        for label in fleet.hosts:
            events.wait_for(lambda e, label=label: e.kind == "snapshot" and e.host == label, f"snapshot of {label}")
        for label, fake in fakes.items():
            fake.agents.upsert(title=f"{label}-second")
        for label in fakes:
            wait_until(lambda label=label: f"{label}-second" in events.updated_titles(label), BOUND, f"{label} update")
        assert len(events.threads) == 1  # one callback thread for every host
        # requests go to the host they name
        for label in fleet.hosts:
            agent = fleet[label].agents.create(
                dc.AgentConfig(provider="mock/ten-second-stream"), cwd="/tmp", title=f"{label}-run"
            )
            result = fleet.agents.ref(label, agent.id).run("hello", timeout=BOUND)
            assert result.status == "idle"
        wait_until(
            lambda: {e.host for e in directory.entries if e.agent.title.endswith("-run")} == {"r", "d", "w"},
            BOUND,
            "the new agents in the fleet directory",
        )
        directory.release()


def test_the_dual_host_fails_over_to_the_relay_and_loses_no_update(three) -> None:
    fakes, hosts = three
    with dc.Fleet(hosts, reconnect=FAST, connect_timeout=5.0) as fleet:
        fleet.connect(BOUND)
        changes: list[tuple[str | None, str, str]] = []
        fleet["d"].on_connection_change(lambda old, new, why: changes.append((old and old.id, new.id, why)))
        directory = fleet.agents.list(subscribe=True, timeout=BOUND)
        events = Events()
        directory.subscribe(events)
        events.wait_for(lambda e: e.kind == "snapshot" and e.host == "d", "first snapshot of d")
        first = fleet["d"].active_connection
        assert first is not None
        assert first.id.startswith("direct:")
        fakes["d"].interrupt_loopback(30.0)
        unavailable = events.wait_for(lambda e: e.kind == "unavailable" and e.host == "d", "d unavailable")
        assert [entry.available for entry in unavailable.entries] == [False]
        wait_until(
            lambda: sum(1 for e in events.items if e.kind == "snapshot" and e.host == "d") >= 2, BOUND, "d restored"
        )
        active = fleet["d"].active_connection
        assert active is not None
        assert active.id.startswith("relay:")
        wait_until(lambda: len(changes) >= 1, BOUND, "the connection change")  # registered after the first
        assert changes[-1][1] == active.id, changes
        assert changes[-1][2].startswith("failover:"), changes
        for n in range(20):
            fakes["d"].agents.upsert(title=f"d-after-{n}")
        wait_until(lambda: len(events.updated_titles("d")) >= 20, BOUND, "every update after the switch")
        assert events.updated_titles("d") == [f"d-after-{n}" for n in range(20)]
        assert all(e.available for e in directory.entries if e.host == "d")
        directory.release()


def test_a_host_that_stops_is_marked_unavailable_and_others_go_on(three) -> None:
    fakes, hosts = three
    with dc.Fleet(hosts, reconnect=FAST, connect_timeout=5.0) as fleet:
        fleet.connect(BOUND)
        directory = fleet.agents.list(subscribe=True, timeout=BOUND)
        events = Events()
        directory.subscribe(events)
        events.wait_for(lambda e: e.kind == "snapshot" and e.host == "w", "snapshot of w")
        fakes["w"].close()
        gone = events.wait_for(lambda e: e.kind == "unavailable" and e.host == "w", "w unavailable")
        assert gone.reason
        assert directory.unavailable == ["w"]
        assert [e.agent.title for e in directory.entries if e.host == "w" and not e.available] == ["w-first"]
        fakes["r"].agents.upsert(title="r-meanwhile")
        wait_until(lambda: "r-meanwhile" in events.updated_titles("r"), BOUND, "r's update while w is down")
        assert fleet["r"].agents.list(timeout=BOUND).entries  # requests to the others are answered
        listing = fleet.agents.list(timeout=2.0)
        assert set(listing.errors) == {"w"}
        assert {e.host for e in listing.entries} == {"r", "d"}
        directory.release()


def test_a_host_down_at_the_start_joins_when_it_comes_up(three) -> None:
    fakes, hosts = three
    fakes["w"].restart(downtime=1.0)
    with dc.Fleet(hosts, reconnect=FAST, connect_timeout=2.0) as fleet:
        infos = fleet.connect(0.5)
        assert isinstance(infos["w"], BaseException)
        assert isinstance(infos["r"], dc.ServerInfo)
        directory = fleet.agents.list(subscribe=True, timeout=BOUND)
        events = Events()
        directory.subscribe(events)
        events.wait_for(lambda e: e.kind == "snapshot" and e.host == "w", "w joining")
        assert {e.host for e in directory.entries if e.available} == {"r", "d", "w"}
        directory.release()


def test_labels_must_be_unique_and_manual_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unique"):
        dc.Fleet([dc.Host("a", ["6767"]), dc.Host("a", ["6768"])])
    with pytest.raises(ValueError, match="manual"):
        dc.Fleet([dc.Host("a", ["6767"])], callback_executor="manual")
    with pytest.raises(ValueError, match="at least one"):
        dc.Fleet([])
    with pytest.raises(TypeError):
        dc.Fleet(["6767"])  # type: ignore[list-item]


def test_close_ends_every_thread_even_while_hosts_are_unreachable() -> None:
    hosts = [dc.Host("nowhere", ["127.0.0.1:9"]), dc.Host("gone", ["127.0.0.1:1"])]
    fleet = dc.Fleet(hosts, reconnect=FAST, connect_timeout=1.0)
    fleet.connect(0.2)
    directory = fleet.agents.list(subscribe=True, timeout=0.2)
    assert directory.unavailable == ["nowhere", "gone"]
    fleet.close(3.0)
    wait_until(
        lambda: not [t for t in threading.enumerate() if t.name.startswith(("fleet", "daemon-client-"))],
        5.0,
        "the fleet's threads ending",
    )
    with pytest.raises(dc.DaemonClientError):
        fleet.agents.list(subscribe=True, timeout=0.1)


def test_directories_opened_from_many_threads_while_the_fleet_closes(three, fast_switching) -> None:
    """Eight threads open and release fleet directories while another closes the fleet: every
    call returns or raises a client error, and no thread is left."""
    _fakes, hosts = three
    fleet = dc.Fleet(hosts, reconnect=FAST, connect_timeout=5.0)
    fleet.connect(BOUND)
    errors: list[BaseException] = []
    started = threading.Barrier(9)

    def churn() -> None:
        started.wait(BOUND)
        for _ in range(5):
            try:
                directory = fleet.agents.list(subscribe=True, timeout=2.0)
                directory.subscribe(lambda event: None)
                directory.release(2.0)
            except dc.DaemonClientError:
                return  # the fleet closed under it
            except BaseException as exc:
                errors.append(exc)
                return

    threads = [threading.Thread(target=churn, name=f"churn-{n}") for n in range(8)]
    for thread in threads:
        thread.start()
    started.wait(BOUND)
    fleet.close(5.0)
    for thread in threads:
        thread.join(BOUND)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []
    wait_until(
        lambda: not [t for t in threading.enumerate() if t.name.startswith(("fleet", "daemon-client-", "probe-"))],
        5.0,
        "the fleet's threads ending",
    )
