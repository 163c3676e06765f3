"""Registrations survive concurrent registering and removing, on every registration structure.

Each test hammers one structure with rounds of "register a keeper, register a temporary one,
remove the temporary one", from many user threads at once and from one user thread racing the
callback thread (which adds some registrations itself), with the thread switch interval
narrowed. Then one update is triggered and every keeper must hear it. No timing: a sentinel
registered after every round hears the update, then ``flush_callbacks()`` lets every callback
of that update run before the count is read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import RecordingHandler

Register = Callable[[Callable[..., object]], Callable[[], None]]
"""Registers a callback on the structure under test; returns what removes it."""

BOUND = 30.0
CWD = "/repo"


pytestmark = pytest.mark.usefixtures("fast_switching")


class Keepers:
    """Keeper callbacks that record, each by its number, that they heard a matching call."""

    def __init__(self, heard_if: Callable[..., bool] = lambda *_args: True) -> None:
        self.heard: set[int] = set()
        self.count = 0
        self._heard_if = heard_if
        self._lock = threading.Lock()

    def new(self) -> Callable[..., None]:
        with self._lock:
            number = self.count
            self.count += 1

        def keeper(*args: Any) -> None:
            if self._heard_if(*args):
                self.heard.add(number)  # set.add is atomic

        return keeper


def hammer(register: Register, keepers: Keepers, *, threads: int, rounds: int) -> list[Callable[[], None]]:
    """Run the rounds on ``threads`` user threads at once; the keepers' removers are returned."""
    barrier = threading.Barrier(threads)
    kept: list[Callable[[], None]] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            barrier.wait(BOUND)
            for _ in range(rounds):
                kept.append(register(keepers.new()))
                register(lambda *_args: None)()
        except BaseException as exc:  # handed to the test
            errors.append(exc)

    workers = [threading.Thread(target=run, name=f"registrar-{n}") for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(BOUND)
    assert not errors, errors
    assert not any(worker.is_alive() for worker in workers)
    return kept


def every_keeper_hears(
    client: dc.Client,
    register: Register,
    trigger: Callable[[], None],
    *,
    threads: int,
    rounds: int,
    heard_if: Callable[..., bool] = lambda *_args: True,
    settle: Callable[[], None] = lambda: None,
) -> None:
    keepers = Keepers(heard_if)
    removers = hammer(register, keepers, threads=threads, rounds=rounds)
    sentinel: RecordingHandler[Any] = RecordingHandler("sentinel")
    removers.append(register(lambda *args: sentinel(args) if heard_if(*args) else None))
    settle()
    assert client.flush_callbacks(BOUND)  # every registration the callback thread completes is done
    trigger()
    sentinel.wait_for(1, timeout=BOUND)
    assert client.flush_callbacks(BOUND)
    lost = keepers.count - len(keepers.heard)
    assert lost == 0, f"{lost} of {keepers.count} keepers never heard the next update"
    for remove in removers:
        remove()


SHAPES = [pytest.param(16, 200, id="16-threads"), pytest.param(1, 2000, id="one-thread-vs-callback-thread")]
SMALL_SHAPES = [pytest.param(8, 12, id="8-threads"), pytest.param(1, 100, id="one-thread-vs-callback-thread")]


def _title_is(title: str) -> Callable[..., bool]:
    def matches(*args: Any) -> bool:
        message = args[0]
        agent = getattr(getattr(message, "payload", None), "agent", None)
        return agent is not None and agent.title == title

    return matches


# ----------------------------------------------------------------------------- directories
@pytest.mark.parametrize(("threads", "rounds"), SHAPES)
def test_directory_observation_callbacks_survive_concurrent_unsubscribes(connected, threads, rounds) -> None:
    fake, client = connected()
    result = client.agents.list(subscribe=True)
    observation = result.subscription
    assert observation is not None

    def register(callback: Callable[..., object]) -> Callable[[], None]:
        return observation.subscribe(update=callback)

    every_keeper_hears(
        client,
        register,
        lambda: fake.agents.upsert("a1", title="next"),
        threads=threads,
        rounds=rounds,
        heard_if=_title_is("next"),
    )


@pytest.mark.parametrize(("threads", "rounds"), SHAPES)
def test_directory_listeners_survive_concurrent_removals(connected, threads, rounds) -> None:
    fake, client = connected()
    assert client.agents.list(subscribe=True).subscription is not None
    every_keeper_hears(
        client,
        client.agents.subscribe,
        lambda: fake.agents.upsert("a1", title="next"),
        threads=threads,
        rounds=rounds,
        heard_if=_title_is("next"),
    )


@pytest.mark.parametrize(("threads", "rounds"), SHAPES)
def test_item_handle_listeners_survive_concurrent_removals(connected, threads, rounds) -> None:
    fake, client = connected()
    assert client.agents.list(subscribe=True).subscription is not None
    handle = client.agents.ref("a1")
    every_keeper_hears(
        client,
        handle.subscribe,
        lambda: fake.agents.upsert("a1", title="next"),
        threads=threads,
        rounds=rounds,
        heard_if=_title_is("next"),
    )


def test_one_callback_registered_twice_keeps_the_other_registration(connected) -> None:
    """Removing one registration of a callback registered twice leaves the other in place."""
    fake, client = connected()
    assert client.agents.list(subscribe=True).subscription is not None
    handle = client.agents.ref("a1")
    heard: RecordingHandler[Any] = RecordingHandler("twice")
    handle.subscribe(heard)
    handle.subscribe(heard)()
    listener_kept = client.agents.subscribe(heard)
    client.agents.subscribe(heard)()
    fake.agents.upsert("a1", title="next")
    heard.wait_for(2, predicate=_title_is("next"))
    assert client.flush_callbacks(5.0)
    assert len([m for m in heard.items if _title_is("next")(m)]) == 2
    listener_kept()


# ----------------------------------------------------------------------------- pushes and states
@pytest.mark.parametrize(("threads", "rounds"), SHAPES)
def test_push_listeners_survive_concurrent_removals(connected, threads, rounds) -> None:
    fake, client = connected()

    def register(callback: Callable[..., object]) -> Callable[[], None]:
        return client.add_push_listener(callback, ["registration_probe"])

    every_keeper_hears(
        client, register, lambda: fake.push("registration_probe", {"n": 1}), threads=threads, rounds=rounds
    )


@pytest.mark.parametrize(("threads", "rounds"), SHAPES)
def test_state_listeners_survive_concurrent_removals(connected, threads, rounds) -> None:
    fake, client = connected()

    def disconnected(old: dc.ConnectionState, new: dc.ConnectionState, reason: str) -> bool:
        return new is dc.ConnectionState.DISCONNECTED

    every_keeper_hears(
        client,
        client.on_state_change,
        fake.drop_connections,
        threads=threads,
        rounds=rounds,
        heard_if=disconnected,
    )


# ----------------------------------------------------------------------------- memberships
@pytest.mark.parametrize("kind", ["capable", "selective", "broadcast"])
@pytest.mark.parametrize(("threads", "rounds"), SMALL_SHAPES)
def test_timeline_memberships_survive_concurrent_releases(connected, kind, threads, rounds) -> None:
    fake, client = connected(kind)
    handles: list[dc.TimelineSubscription] = []

    def register(callback: Callable[..., object]) -> Callable[[], None]:
        sub = client.agents.ref("a1").timeline.subscribe(callback)
        handles.append(sub)
        return sub

    def ready() -> None:
        for sub in handles:
            if not sub.released:
                sub.ready.result(BOUND)

    def is_row(update: dc.TimelineUpdate) -> bool:
        return update.type == "timeline"

    every_keeper_hears(
        client,
        register,
        lambda: fake.timeline.append("a1", {"type": "assistant_message", "text": "next"}),
        threads=threads,
        rounds=rounds,
        heard_if=is_row,
        settle=ready,
    )


@pytest.mark.parametrize("kind", ["capable", "selective", "broadcast"])
@pytest.mark.parametrize(("threads", "rounds"), SMALL_SHAPES)
def test_event_subscriptions_survive_concurrent_releases(connected, kind, threads, rounds) -> None:
    fake, client = connected(kind)
    handles: list[Any] = []

    def register(callback: Callable[..., object]) -> Callable[[], None]:
        sub = client.providers.subscribe(callback)
        handles.append(sub)
        return sub

    def ready() -> None:
        for sub in handles:
            if not sub.released:
                sub.ready.result(BOUND)

    every_keeper_hears(client, register, fake.providers.publish, threads=threads, rounds=rounds, settle=ready)


@pytest.mark.parametrize(("threads", "rounds"), SMALL_SHAPES)
def test_config_subscribers_survive_concurrent_releases(connected, threads, rounds) -> None:
    fake, client = connected()
    handles: list[Any] = []

    def register(callback: Callable[..., object]) -> Callable[[], None]:
        sub = client.config.subscribe(callback)
        handles.append(sub)
        return sub

    def ready() -> None:
        for sub in handles:
            if not sub.released:
                sub.ready.result(BOUND)

    every_keeper_hears(
        client,
        register,
        lambda: fake.daemon_config.patch({"mcp": {"injectIntoAgents": True}}),
        threads=threads,
        rounds=rounds,
        settle=ready,
    )


# ----------------------------------------------------------------------------- terminals
@pytest.mark.parametrize(("threads", "rounds"), SMALL_SHAPES)
def test_terminal_directory_subscriptions_survive_concurrent_releases(connected, threads, rounds) -> None:
    fake, client = connected()
    handles: list[Any] = []

    def register(callback: Callable[..., object]) -> Callable[[], None]:
        sub = client.terminals.subscribe(callback, cwd=CWD)
        handles.append(sub)
        return sub

    def ready() -> None:
        for sub in handles:
            if not sub.released:
                sub.ready.result(BOUND)

    def names_next(changed: Any) -> bool:
        return any(t.name == "next" for t in changed.terminals)

    every_keeper_hears(
        client,
        register,
        lambda: fake.terminals.create(CWD, name="next"),
        threads=threads,
        rounds=rounds,
        heard_if=names_next,
        settle=ready,
    )


@pytest.mark.parametrize(("threads", "rounds"), SMALL_SHAPES)
def test_terminal_streams_survive_concurrent_releases(connected, threads, rounds) -> None:
    fake, client = connected()
    terminal = client.terminals.create(cwd=CWD)
    handles: list[Any] = []

    def register(callback: Callable[..., object]) -> Callable[[], None]:
        stream = terminal.stream(on_output=callback, buffer_limit=0)
        handles.append(stream)
        return stream

    def ready() -> None:
        for stream in handles:
            if not stream.released:
                stream.ready.result(BOUND)

    def says_next(text: str) -> bool:
        return "registration-probe" in text

    every_keeper_hears(
        client,
        register,
        lambda: fake.terminals.type(terminal.id, "echo registration-probe\r"),
        threads=threads,
        rounds=rounds,
        heard_if=says_next,
        settle=ready,
    )


# ----------------------------------------------------------------------------- workspaces, projects, connections
def _workspace_named(name: str) -> Callable[..., bool]:
    def matches(*args: Any) -> bool:
        workspace = getattr(getattr(args[0], "payload", None), "workspace", None)
        return workspace is not None and workspace.name == name

    return matches


@pytest.mark.parametrize(("threads", "rounds"), SHAPES)
def test_workspace_observation_callbacks_survive_concurrent_unsubscribes(connected, threads, rounds) -> None:
    fake, client = connected()
    workspace = fake.workspaces.upsert(name="first")["id"]
    observation = client.workspaces.list(subscribe=True).subscription
    assert observation is not None

    def register(callback: Callable[..., object]) -> Callable[[], None]:
        return observation.subscribe(update=callback)

    every_keeper_hears(
        client,
        register,
        lambda: fake.workspaces.upsert(workspace, name="next"),
        threads=threads,
        rounds=rounds,
        heard_if=_workspace_named("next"),
    )


@pytest.mark.parametrize(("threads", "rounds"), SHAPES)
def test_workspace_listeners_survive_concurrent_removals(connected, threads, rounds) -> None:
    fake, client = connected()
    workspace = fake.workspaces.upsert(name="first")["id"]
    assert client.workspaces.list(subscribe=True).subscription is not None
    every_keeper_hears(
        client,
        client.workspaces.subscribe,
        lambda: fake.workspaces.upsert(workspace, name="next"),
        threads=threads,
        rounds=rounds,
        heard_if=_workspace_named("next"),
    )


@pytest.mark.parametrize(("threads", "rounds"), SHAPES)
def test_project_cache_listeners_survive_concurrent_removals(connected, threads, rounds) -> None:
    fake, client = connected()
    fake.projects.upsert("p-first", projectDisplayName="first", projectRootPath="/p/first", projectKind="git")
    cache = client.projects.cache()

    def is_next(change: dc.ProjectChange) -> bool:
        return change.project_id == "p-next"

    every_keeper_hears(
        client,
        cache.on_change,
        lambda: fake.projects.upsert("p-next", projectDisplayName="next", projectRootPath="/p/next", projectKind="git"),
        threads=threads,
        rounds=rounds,
        heard_if=is_next,
    )
    cache.close()


@pytest.mark.parametrize(("threads", "rounds"), SHAPES)
def test_connection_listeners_survive_concurrent_removals(threads, rounds) -> None:
    """``on_connection_change``'s registry, hammered while another thread notifies throughout."""
    from daemon_client.client.switches import ConnectionListeners

    listeners = ConnectionListeners(lambda job: job())
    connection = dc.HostConnection("ws://127.0.0.1:7001/ws")
    stop = threading.Event()

    def notify_throughout() -> None:  # stands in for the reader thread announcing switches
        while not stop.is_set():
            listeners.notify(None, connection, "noise")

    noise = threading.Thread(target=notify_throughout, name="notifier")
    noise.start()
    keepers = Keepers(lambda _previous, _current, reason: reason == "next")
    try:
        removers = hammer(listeners.add, keepers, threads=threads, rounds=rounds)
    finally:
        stop.set()
        noise.join(BOUND)
    assert not noise.is_alive()
    listeners.notify(None, connection, "next")
    lost = keepers.count - len(keepers.heard)
    assert lost == 0, f"{lost} of {keepers.count} keepers never heard the next change"
    for remove in removers:
        remove()
