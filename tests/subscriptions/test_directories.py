"""Agent and workspace directory observations on capable, selective and broadcast-only hosts.

The two families share one contract; ``Family`` adapts the tests to each of them.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import attrs
import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon, RecordingHandler

from ..conftest import KINDS
from ..helpers import session_frames as _frames

LEGACY = ["selective", "broadcast"]


@attrs.frozen
class Family:
    name: str
    request_type: str
    update_type: str

    def add(self, fake: FakeDaemon, **fields: Any) -> str:
        if self.name == "agents":
            return str(fake.agents.upsert(**fields)["id"])
        return str(fake.workspaces.upsert(**fields)["id"])

    def change(self, fake: FakeDaemon, item_id: str, **fields: Any) -> None:
        (fake.agents if self.name == "agents" else fake.workspaces).upsert(item_id, **fields)

    def remove(self, fake: FakeDaemon, item_id: str) -> None:
        (fake.agents if self.name == "agents" else fake.workspaces).remove(item_id)

    def tagged(self, fake: FakeDaemon, tag: str) -> str:
        """An item that matches ``filter_for(tag)`` only."""
        if self.name == "agents":
            return self.add(fake, labels={"team": tag}, title=f"{tag} agent")
        directory = f"/home/dev/{tag}-{uuid.uuid4().hex[:6]}"
        return self.add(fake, name=f"{tag}-ws", workspace_directory=directory, project_id=f"proj-{tag}")

    def filter_for(self, tag: str) -> Any:
        if self.name == "agents":
            return dc.AgentFilter(labels={"team": tag})
        return dc.WorkspaceFilter(project_id=f"proj-{tag}")

    def namespace(self, client: dc.Client) -> Any:
        return client.agents if self.name == "agents" else client.workspaces

    def observe(self, client: dc.Client, tag: str | None = None) -> dc.AgentListResult | dc.WorkspaceListResult:
        kwargs = {"filter": self.filter_for(tag)} if tag else {}
        return self.namespace(client).list(subscribe=True, **kwargs)  # type: ignore[no-any-return]

    def ids(self, result: Any) -> list[str]:
        return [e.agent.id if self.name == "agents" else e.id for e in result.entries]

    def update_id(self, message: Any) -> str:
        return message.payload.agent_id if self.name == "agents" else message.payload.workspace_id


FAMILIES = [
    Family("agents", "fetch_agents_request", "agent_update"),
    Family("workspaces", "fetch_workspaces_request", "workspace_update"),
]
FAMILY_IDS = [f.name for f in FAMILIES]


def _settle(client: dc.Client, fake: FakeDaemon) -> None:
    """Let everything the fake has sent reach the callbacks: a round trip, then a flush."""
    client.ping()
    assert client.flush_callbacks()


@pytest.fixture
def connected(fakes, make_client):
    def make(kind: str, **options: Any) -> tuple[FakeDaemon, dc.Client]:
        fake = fakes(kind)
        client = make_client(fake, **options)
        client.connect()
        return fake, client

    return make


# ------------------------------------------------------------------------------ plain reads


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
@pytest.mark.parametrize("kind", KINDS)
def test_plain_list_creates_no_observation(connected, family: Family, kind: str) -> None:
    fake, client = connected(kind)
    first = family.tagged(fake, "infra")
    result = family.namespace(client).list()
    assert family.ids(result) == [first]
    assert result.subscription is None
    assert result.subscription_id is None
    assert "subscribe" not in _frames(fake, family.request_type)[0]
    assert fake.directory_observations() == []
    listener = RecordingHandler("listener")
    family.namespace(client).subscribe(listener)
    family.change(fake, first, title="changed") if family.name == "agents" else family.change(fake, first, name="x")
    _settle(client, fake)
    assert listener.items == []


def test_agent_list_pages_with_cursors(connected) -> None:
    fake, client = connected("capable")
    created = {fake.agents.upsert(title=f"agent {n}")["id"] for n in range(25)}
    seen: list[str] = []
    cursor = None
    while True:
        page = client.agents.list(sort=[("created_at", "asc")], page=dc.Page(limit=10, cursor=cursor))
        seen.extend(e.agent.id for e in page.entries)
        cursor = page.page_info.next_cursor
        if not page.page_info.has_more:
            break
    assert len(seen) == 25
    assert set(seen) == created
    with pytest.raises(dc.RpcError) as info:
        client.agents.list(page=dc.Page(cursor="not-a-cursor"))
    assert info.value.code == "invalid_cursor"


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
def test_invalid_input_raises_before_sending(connected, family: Family) -> None:
    fake, client = connected("capable")
    namespace = family.namespace(client)
    before = len(fake.received)
    with pytest.raises(ValueError, match="issued by the daemon"):
        namespace.list(subscribe=True, subscription_id="mine")
    with pytest.raises(ValueError, match="issued by the daemon"):
        namespace.list(subscribe={"subscriptionId": "mine"})
    with pytest.raises(ValueError, match="limit"):
        namespace.list(page=dc.Page(limit=500))
    with pytest.raises(ValueError, match="cursor"):
        dc.Page(cursor="")
    with pytest.raises(ValueError, match="sort key"):
        namespace.list(sort=["nope"])
    assert len(fake.received) == before
    result = namespace.list(subscribe=dc.SubscribeOptions())
    assert result.subscription is not None


# ------------------------------------------------------------------------------ observations


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
@pytest.mark.parametrize("kind", KINDS)
def test_observation_gets_snapshot_then_updates(connected, family: Family, kind: str) -> None:
    fake, client = connected(kind)
    item = family.tagged(fake, "infra")
    result = family.observe(client, "infra")
    observation = result.subscription
    assert result.subscription_id == observation.subscription_id
    assert observation.ready.result(0).entries == result.entries
    if kind == "capable":
        assert not result.subscription_id.startswith("legacy:")
        sent = _frames(fake, family.request_type)[-1]
        assert sent["subscribe"] == {}
    else:
        assert result.subscription_id.startswith("legacy:")
    calls = RecordingHandler("calls")
    observation.subscribe(snapshot=lambda s: calls(("snapshot", family.ids(s))), update=lambda m: calls(("update", m)))
    assert calls.wait_for(1)[0] == ("snapshot", [item])
    family.change(fake, item, status="running")
    update = calls.wait_for(2)[1][1]
    assert update.type == family.update_type
    assert update.payload.kind == "upsert"
    assert family.update_id(update) == item
    family.remove(fake, item)
    removal = calls.wait_for(3)[2][1]
    assert removal.payload.kind == "remove"
    assert family.update_id(removal) == item


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
@pytest.mark.parametrize("kind", KINDS)
def test_late_callbacks_get_the_current_snapshot_first(connected, family: Family, kind: str) -> None:
    fake, client = connected(kind)
    first = family.tagged(fake, "infra")
    observation = family.observe(client, "infra").subscription
    early = RecordingHandler("early")
    observation.subscribe(update=early)
    second = family.tagged(fake, "infra")
    early.wait_for(1)
    late = RecordingHandler("late")
    observation.subscribe(snapshot=lambda s: late(("snapshot", sorted(family.ids(s)))), update=late)
    assert late.wait_for(1)[0] == ("snapshot", sorted([first, second]))
    family.remove(fake, first)
    assert late.wait_for(2)[1].payload.kind == "remove"
    assert family.ids(observation.current()) == [second]


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
def test_capable_observations_are_independent(connected, family: Family) -> None:
    fake, client = connected("capable")
    infra, web = family.tagged(fake, "infra"), family.tagged(fake, "web")
    first, second = family.observe(client, "infra"), family.observe(client, "web")
    assert family.ids(first) == [infra]
    assert family.ids(second) == [web]
    assert first.subscription_id != second.subscription_id
    seen_first, seen_second = RecordingHandler("first"), RecordingHandler("second")
    first.subscription.subscribe(update=seen_first)
    second.subscription.subscribe(update=seen_second)
    for status in ("running", "attention", "running"):
        family.change(fake, infra, status=status)
        family.change(fake, web, status=status)
    seen_first.wait_for(3)
    seen_second.wait_for(3)
    _settle(client, fake)
    assert {family.update_id(m) for m in seen_first.items} == {infra}
    assert {family.update_id(m) for m in seen_second.items} == {web}
    assert {m.payload.subscription_id for m in seen_first.items} == {first.subscription_id}
    # release one: the other keeps going, the daemon forgets only the released one
    first.subscription.release()
    assert _frames(fake, "subscription.release.request")[-1]["subscriptionId"] == first.subscription_id
    assert [o.id for o in fake.directory_observations()] == [second.subscription_id]
    first.subscription.release()  # twice is harmless
    family.change(fake, infra, status="idle")
    family.change(fake, web, status="idle")
    seen_second.wait_for(4)
    _settle(client, fake)
    assert len(seen_first.items) == 3
    assert first.subscription.released
    assert client.agents.fetch(infra) is not None if family.name == "agents" else True


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
@pytest.mark.parametrize("kind", LEGACY)
def test_legacy_hosts_share_one_slot(connected, family: Family, kind: str) -> None:
    fake, client = connected(kind)
    infra, web = family.tagged(fake, "infra"), family.tagged(fake, "web")
    first = family.observe(client, "infra")
    second = family.observe(client, "web")  # replaces the slot's filter, as the daemon does
    assert first.subscription_id.startswith("legacy:")
    assert second.subscription_id.startswith("legacy:")
    assert first.subscription_id != second.subscription_id
    seen_first, seen_second = RecordingHandler("first"), RecordingHandler("second")
    first.subscription.subscribe(update=seen_first)
    second.subscription.subscribe(update=seen_second)
    family.change(fake, web, status="running")
    assert family.update_id(seen_first.wait_for(1)[0]) == web  # both see the latest filter's updates
    assert family.update_id(seen_second.wait_for(1)[0]) == web
    first.subscription.release()  # local: nothing is sent
    assert _frames(fake, "subscription.release.request") == []
    family.change(fake, web, status="idle")
    seen_second.wait_for(2)
    _settle(client, fake)
    assert len(seen_first.items) == 1
    assert infra


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
@pytest.mark.parametrize("kind", KINDS)
def test_reconnect_gives_a_new_id_and_snapshot_before_updates(connected, family: Family, kind: str) -> None:
    fake, client = connected(kind)
    item = family.tagged(fake, "infra")
    result = family.observe(client, "infra")
    observation = result.subscription
    old_id = observation.subscription_id
    events = RecordingHandler("events")
    observation.subscribe(
        snapshot=lambda s: events(("snapshot", family.ids(s))), update=lambda m: events(("update", m))
    )
    events.wait_for(1)
    family.change(fake, item, status="running")
    events.wait_for(2)
    requests_before = len(_frames(fake, family.request_type))
    fake.drop_connections()
    events.wait_for(3)
    assert events.items[2] == ("snapshot", [item])
    assert observation.subscription_id != old_id
    resent = _frames(fake, family.request_type)
    assert len(resent) == requests_before + 1
    assert resent[-1]["subscribe"] == {}
    assert resent[-1]["filter"] == resent[0]["filter"]
    assert resent[-1]["requestId"] != resent[0]["requestId"]
    family.change(fake, item, status="idle")
    events.wait_for(4)
    _settle(client, fake)
    kinds = [kind for kind, _ in events.items]
    assert kinds == ["snapshot", "update", "snapshot", "update"]  # nothing twice
    if kind == "capable":
        assert events.items[3][1].payload.subscription_id == observation.subscription_id


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
@pytest.mark.parametrize("kind", KINDS)
def test_establishment_failures(connected, family: Family, kind: str) -> None:
    fake, client = connected(kind)
    family.tagged(fake, "infra")
    fake.fail_next(family.request_type, error="no directory for you", code="fetch_agents_failed")
    with pytest.raises(dc.RpcError, match="no directory for you"):
        family.observe(client, "infra")
    assert fake.directory_observations() == []
    # a failing re-establishment reaches `error`, releases the observation, and is not retried
    observation = family.observe(client, "infra").subscription
    errors = RecordingHandler("errors")
    observation.subscribe(error=errors)
    fake.fail_next(family.request_type, error="restore refused", code="handler_error")
    fake.drop_connections()
    error = errors.wait_for(1)[0]
    assert isinstance(error, dc.RpcError)
    assert "restore refused" in str(error)
    assert observation.released or observation.state.value == "failed"
    sent = len(_frames(fake, family.request_type))
    states = RecordingHandler("states")
    client.on_state_change(lambda old, new, reason: states(reason))
    fake.drop_connections()
    states.wait_for(predicate=lambda reason: reason == "reconnected")
    _settle(client, fake)
    assert len(_frames(fake, family.request_type)) == sent  # not replayed


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
@pytest.mark.parametrize("kind", KINDS)
def test_local_listeners_hear_only_while_an_observation_is_live(connected, family: Family, kind: str) -> None:
    fake, client = connected(kind)
    item = family.tagged(fake, "infra")
    heard = RecordingHandler("heard")
    family.namespace(client).subscribe(heard)
    family.change(fake, item, status="running")
    _settle(client, fake)
    assert heard.items == []
    observation = family.observe(client, "infra").subscription
    family.change(fake, item, status="idle")
    assert family.update_id(heard.wait_for(1)[0]) == item
    observation.release()
    family.change(fake, item, status="running")
    _settle(client, fake)
    assert len(heard.items) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_agent_handle_follows_its_agent(connected, kind: str) -> None:
    fake, client = connected(kind)
    agent_id = fake.agents.upsert(title="watched")["id"]
    other = fake.agents.upsert(title="other")["id"]
    handle = client.agents.ref(agent_id)
    assert handle is client.agents.ref(agent_id)
    assert handle.current() is None
    assert handle.status is None
    seen = RecordingHandler("seen")
    handle.subscribe(lambda m: seen((m.payload.kind, handle.status, handle.removed)))
    client.agents.list(subscribe=True)
    fake.agents.upsert(other, status="running")
    fake.agents.upsert(agent_id, status="running")
    assert seen.wait_for(1)[0] == ("upsert", "running", False)
    assert handle.current().title == "watched"
    fake.agents.remove(agent_id)
    assert seen.wait_for(2)[1] == ("remove", "running", True)
    assert handle.current().status == "running"  # the last snapshot is kept
    with pytest.raises(dc.RpcError, match="Agent not found"):
        handle.refresh()
    assert client.agents.ref(other).refresh().status == "running"


def test_fetch_resolves_prefix_and_title_and_raises_for_unknown(connected) -> None:
    fake, client = connected("broadcast")
    agent_id = fake.agents.upsert(title="Fix flaky test")["id"]
    assert client.agents.fetch(agent_id[:8]).id == agent_id
    assert client.agents.fetch("Fix flaky test").id == agent_id
    with pytest.raises(dc.RpcError, match="Agent not found"):
        client.agents.fetch("zz9")


@pytest.mark.parametrize("kind", KINDS)
def test_workspace_open_archive_and_handles(connected, kind: str) -> None:
    fake, client = connected(kind)
    observation = client.workspaces.list(subscribe=True).subscription
    updates = RecordingHandler("updates")
    observation.subscribe(update=updates)
    handle = client.workspaces.open("/home/dev/projects/demo/webapp")
    assert handle.directory == "/home/dev/projects/demo/webapp"
    assert handle.status == "done"
    if kind == "broadcast":
        assert handle.id == "/home/dev/projects/demo/webapp"
    assert updates.wait_for(1)[0].payload.workspace_id == handle.id  # the update came before the reply
    assert client.workspaces.ref(handle.id) is handle
    assert handle.refresh().id == handle.id
    assert handle.archive() is not None
    assert updates.wait_for(2)[1].payload.kind == "remove"
    _settle(client, fake)
    assert handle.removed
    with pytest.raises(dc.RpcError, match="Workspace not found"):
        client.workspaces.archive("no-such-workspace")
    fake.workspaces.missing_directories.add("/home/dev/missing")
    with pytest.raises(dc.RpcError, match="Directory not found") as info:
        client.workspaces.open("/home/dev/missing")
    assert info.value.code == "directory_not_found"


# ------------------------------------------------------------------------------ callbacks and close


@pytest.mark.parametrize("kind", KINDS)
def test_misbehaving_callbacks_do_not_stall_other_observations(connected, kind: str) -> None:
    errors: list[BaseException] = []
    fake, client = connected(kind, strict=False, on_callback_error=errors.append)
    agent_id = fake.agents.upsert(title="a")["id"]
    raising = client.agents.list(subscribe=True).subscription
    releasing = client.agents.list(subscribe=True).subscription
    closing_target = client.workspaces.list(subscribe=True).subscription
    healthy = client.agents.list(subscribe=True).subscription
    raising.subscribe(update=lambda m: 1 / 0)
    releasing.subscribe(update=lambda m: releasing.release())
    slow_done = threading.Event()
    closing_target.subscribe(update=lambda m: (time.sleep(0.2), slow_done.set()))
    seen = RecordingHandler("seen")
    healthy.subscribe(update=seen)
    fake.agents.upsert(agent_id, status="running")
    fake.agents.upsert(agent_id, status="idle")
    assert len(seen.wait_for(2)) == 2
    _settle(client, fake)
    assert releasing.released
    assert all(isinstance(e, ZeroDivisionError) for e in errors)
    assert len(errors) == 2


@pytest.mark.parametrize("kind", KINDS)
def test_close_from_an_observation_callback(connected, kind: str) -> None:
    fake, client = connected(kind)
    agent_id = fake.agents.upsert(title="a")["id"]
    observation = client.agents.list(subscribe=True).subscription
    closed = threading.Event()
    observation.subscribe(update=lambda m: (client.close(), closed.set()))
    fake.agents.upsert(agent_id, status="running")
    assert closed.wait(5)


@pytest.mark.parametrize("kind", KINDS)
def test_close_releases_owned_observations(connected, kind: str) -> None:
    fake, client = connected(kind)
    agents = client.agents.list(subscribe=True)
    workspaces = client.workspaces.list(subscribe=True)
    client.close()
    released = {m["subscriptionId"] for m in _frames(fake, "subscription.release.request")}
    if kind == "capable":
        assert released == {agents.subscription_id, workspaces.subscription_id}
    else:
        assert released == set()
    assert agents.subscription.released
    assert workspaces.subscription.released


@pytest.mark.parametrize("kind", KINDS)
def test_observation_is_a_context_manager(connected, kind: str) -> None:
    fake, client = connected(kind)
    with client.agents.list(subscribe=True).subscription as observation:
        assert not observation.released
        assert observation.current() is not None
    assert observation.released
    assert observation.current() is not None  # the last view stays readable
    released = _frames(fake, "subscription.release.request")
    assert len(released) == (1 if kind == "capable" else 0)


@pytest.mark.parametrize("kind", KINDS)
def test_new_handles_start_from_what_live_observations_hold(connected, kind: str) -> None:
    fake, client = connected(kind)
    agent_id = fake.agents.upsert(title="already seen")["id"]
    workspace = client.workspaces.open("/home/dev/projects/seen")
    client.agents.list(subscribe=True)
    client.workspaces.list(subscribe=True)
    client.ping()
    assert client.flush_callbacks()
    assert client.agents.ref(agent_id).title == "already seen"
    assert client.workspaces.ref(workspace.id).directory == "/home/dev/projects/seen"
