"""What a restore after a reconnect delivers goes after any pending lag notice, on every family.

Each test blocks the subscription's callback (an Event), floods past a small
``FlowControl(max_events=...)`` so that pushes are skipped, drops the connection (the fake's
fault injection), waits for the re-establishment, releases the callback and checks the order of
what the handler saw.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import daemon_client as dc
from tests.conftest import KINDS

SMALL = dc.FlowControl(max_events=3, max_bytes=None)
RESTORED = "restored"


class Held:
    """A callback whose first call blocks until ``gate`` is set; records everything it gets."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.entered = threading.Event()
        self.gate = threading.Event()

    def __call__(self, item: Any = RESTORED) -> None:
        self.items.append(item)
        if not self.entered.is_set():
            self.entered.set()
            assert self.gate.wait(10), "the test never released the held callback"


@pytest.fixture
def connected(fakes: Any, make_client: Any) -> Callable[..., tuple[Any, dc.Client]]:
    def make(kind: str, **options: Any) -> tuple[Any, dc.Client]:
        fake = fakes(kind)
        client = make_client(fake, "memory", **options)
        client.connect()
        return fake, client

    return make


@pytest.fixture
def held() -> Iterator[Held]:
    callback = Held()
    yield callback
    callback.gate.set()  # released at teardown (before the client closes) if a test failed


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Poll a condition the blocked callback thread cannot signal (bounded)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.005)


def settle(client: dc.Client) -> None:
    client.ping()
    for _ in range(3):  # recovery posts while draining; a later flush covers what it posted
        assert client.flush_callbacks(10)


def reconnect_while_held(fake: Any, client: dc.Client, restored: Callable[[], bool]) -> None:
    fake.drop_connections()
    wait_until(lambda: client.state is dc.ConnectionState.CONNECTED and restored(), "never re-established")
    client.ping()  # the restore's acknowledgement (sent before) has been handled too


@pytest.mark.parametrize("kind", KINDS)
def test_timeline_lagged_goes_before_subscription_restored(connected, kind, held) -> None:
    fake, client = connected(kind, flow_control=SMALL)
    sub = client.agents.ref("a1").timeline.subscribe(held)
    sub.ready.result(5)
    first = sub.subscription_id
    fake.timeline.append("a1", {"type": "assistant_message", "text": "first"})
    assert held.entered.wait(5)
    for n in range(10):
        fake.timeline.append("a1", {"type": "assistant_message", "text": f"row {n}"})
    client.ping()
    assert client.stats().backlog.lagging
    reconnect_while_held(fake, client, lambda: sub.subscription_id not in (None, first))
    held.gate.set()
    settle(client)
    kinds = [u.type for u in held.items]
    assert kinds.count("lagged") == 1, kinds
    assert kinds.count("subscription_restored") == 1, kinds
    assert kinds.index("lagged") < kinds.index("subscription_restored"), kinds
    sub.release()


@pytest.mark.parametrize("kind", KINDS)
def test_coalesced_catalog_goes_before_on_restored(connected, kind, held) -> None:
    fake, client = connected(kind, flow_control=SMALL)
    sub = client.providers.subscribe(held, on_restored=lambda: held(RESTORED))
    sub.ready.result(5)
    first = sub.subscription_id
    fake.providers.publish()
    assert held.entered.wait(5)
    for _ in range(10):
        fake.providers.publish()
    client.ping()
    assert client.stats().backlog.lagging
    reconnect_while_held(fake, client, lambda: sub.subscription_id not in (None, first))
    held.gate.set()
    settle(client)
    assert held.items.count(RESTORED) == 1, held.items
    assert held.items[-1] == RESTORED, held.items  # the newest skipped catalog came first
    assert len(held.items) >= 3, held.items  # the first catalog, what was queued or coalesced, the restore
    sub.release()


@pytest.mark.parametrize("kind", KINDS)
def test_resynchronising_event_stream_is_restored_once(connected, kind, held) -> None:
    """A project stream's lag notice is ``on_restored`` itself: the restore covers it, once."""
    fake, client = connected(kind, flow_control=SMALL)
    if not client.server_info.feature("projectList"):
        pytest.skip("project updates need a host with the project list")
    sub = client.projects.subscribe(held, on_restored=lambda: held(RESTORED))
    sub.ready.result(5)
    first = sub.subscription_id
    fake.projects.upsert("p0")
    assert held.entered.wait(5)
    for n in range(10):
        fake.projects.upsert(f"p{n + 1}")
    client.ping()
    assert client.stats().backlog.lagging
    reconnect_while_held(fake, client, lambda: sub.subscription_id not in (None, first))
    held.gate.set()
    settle(client)
    assert held.items.count(RESTORED) == 1, held.items
    assert held.items[-1] == RESTORED, held.items
    sub.release()


@pytest.mark.parametrize("kind", KINDS)
def test_directory_restore_snapshot_follows_what_was_queued_and_covers_the_lag(connected, kind, held) -> None:
    fake, client = connected(kind, flow_control=SMALL)
    observation = client.agents.list(subscribe=True).subscription
    assert observation is not None
    first = observation.subscription_id
    observation.subscribe(snapshot=lambda s: held(("snapshot", s)), update=lambda u: held(("update", u)))
    fake.agents.upsert("a1", title="first")
    assert held.entered.wait(5)
    for n in range(10):
        fake.agents.upsert("a1", title=f"title {n}")
    client.ping()
    assert client.stats().backlog.lagging
    reconnect_while_held(fake, client, lambda: observation.subscription_id not in (None, first))
    held.gate.set()
    settle(client)
    kinds = [kind for kind, _value in held.items]
    assert kinds[-1] == "snapshot", kinds  # the restore's snapshot, after every queued update
    assert kinds.count("snapshot") == 2, kinds  # the first one and the restore's: no re-read after it
    assert not any(o.lagging for o in client.stats().observations)
    observation.release()


@pytest.mark.parametrize("kind", KINDS)
def test_workspace_directory_restore_snapshot_follows_what_was_queued_and_covers_the_lag(connected, kind, held) -> None:
    fake, client = connected(kind, flow_control=SMALL)
    workspace = fake.workspaces.upsert(name="first")["id"]
    observation = client.workspaces.list(subscribe=True).subscription
    assert observation is not None
    first = observation.subscription_id
    observation.subscribe(snapshot=lambda s: held(("snapshot", s)), update=lambda u: held(("update", u)))
    fake.workspaces.upsert(workspace, name="held")
    assert held.entered.wait(5)
    for n in range(10):
        fake.workspaces.upsert(workspace, name=f"name {n}")
    client.ping()
    assert client.stats().backlog.lagging
    reconnect_while_held(fake, client, lambda: observation.subscription_id not in (None, first))
    held.gate.set()
    settle(client)
    kinds = [kind for kind, _value in held.items]
    assert kinds[-1] == "snapshot", kinds  # the restore's snapshot, after every queued update
    assert kinds.count("snapshot") == 2, kinds  # the first one and the restore's: no re-read after it
    assert not any(o.lagging for o in client.stats().observations)
    observation.release()
